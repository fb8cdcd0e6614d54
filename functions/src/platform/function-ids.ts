/**
 * The deployed id of one of the service's functions. Installed as a function kit, each exported function deploys
 * as `kit-<instance>-<name>` (firebase-tools prefixes them), and firebase-tools tells the code its instance in
 * FIREBASE_KIT_INSTANCE_ID, deployed and on the emulators alike. Anything the code addresses by function id (the
 * task queues it enqueues on) goes through here, so that two instances in one project never take each other's
 * tasks. Outside a kit the id is the exported name. Nothing is read at import.
 */
export const KIT_INSTANCE_ENV = "FIREBASE_KIT_INSTANCE_ID";

/** Cloud Functions' limit on a function id; a kit's prefix counts against it. */
export const MAX_FUNCTION_ID_LENGTH = 63;

type Env = Readonly<Record<string, string | undefined>>;

/** The kit instance this code runs as, or null outside a kit. */
export function kitInstance(env: Env = process.env): string | null {
  const id = env[KIT_INSTANCE_ENV];
  return id ? id : null;
}

/** The id `name` deploys as here: `kit-<instance>-<name>` in a kit instance, `name` elsewhere. */
export function functionId(name: string, env: Env = process.env): string {
  const instance = kitInstance(env);
  return instance === null ? name : `kit-${instance}-${name}`;
}
