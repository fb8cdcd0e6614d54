import atlasmart from "../../examples/atlasmart/example.json";
import social from "../../examples/social/example.json";

/** The example apps' demo sign-ins (examples/<name>/example.json), for the sign-in page on the emulators only. */
export interface DemoSignIns {
  title: string;
  password: string;
  signIns: readonly (readonly [string, string])[];
}

const EXAMPLES: readonly (DemoSignIns & { project: string })[] = [atlasmart, social].map((e) => ({ project: e.project, title: e.title, password: e.password, signIns: e.signIns.map(([who, what]) => [who ?? "", what ?? ""] as const) }));

/** The demo sign-ins of the example whose emulator project this is, or null (another project: nothing to show). */
export function demoSignIns(projectId: string | undefined): DemoSignIns | null {
  return EXAMPLES.find((e) => e.project === projectId) ?? null;
}
