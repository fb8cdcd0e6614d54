/** Who acted. Evidence never names deleted content, only ids, paths and hashes. */
export interface Actor {
  type: "user" | "staff" | "system";
  /** The uid for users and staff; the job or trigger name for the system. */
  id: string;
}
