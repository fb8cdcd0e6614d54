/**
 * A second OS process for the writer-race test: an app's server-side writer that keeps adding one subject's records
 * (activity, order messages, sessions: one kind after another) while the test process erases that subject. It writes
 * until its stdin ends, printing `ready` once its first record is written, then one JSON line with every path it
 * wrote and the commit time of each.
 * Usage: tsx subject-writer.ts '{"uid": "u-1", "tenantId": "t-acme", "kinds": ["activity", "session"], "everyMs": 25}'
 */
import { db } from "../../helpers/emulator";
import { putGoverned } from "./governed-write";

type Kind = "activity" | "message" | "session";

interface Args {
  uid: string;
  tenantId: string;
  kinds: Kind[];
  everyMs: number;
}

/** The path and fields of the i-th record of a kind, as the app's server would write it for the subject. */
function record(kind: Kind, uid: string, tenantId: string, i: number): { path: string; data: Record<string, unknown> } {
  const n = String(i).padStart(4, "0");
  switch (kind) {
    case "activity":
      return { path: `activity/a-${uid}-w${n}`, data: { subjectUid: uid, type: "SIGNED_IN" } };
    case "message":
      return { path: `tenants/${tenantId}/orders/o-${uid}/messages/m-${uid}-w${n}`, data: { authorId: uid, text: `late message ${n}` } };
    case "session":
      return { path: `sessions/s-${uid}-w${n}`, data: { uid } };
  }
}

async function main(): Promise<void> {
  const args = JSON.parse(process.argv[2] ?? "{}") as Args;
  let stopping = false;
  process.stdin.on("data", () => undefined);
  process.stdin.on("end", () => {
    stopping = true;
  });
  const written: { path: string; writeTimeMs: number }[] = [];
  for (let i = 0; !stopping; i++) {
    const { path, data } = record(args.kinds[i % args.kinds.length]!, args.uid, args.tenantId, i);
    const { writeTimeMs } = await putGoverned(path, data, { tenantId: args.tenantId, ageDays: 5 });
    written.push({ path, writeTimeMs });
    if (i === 0) process.stdout.write("ready\n");
    await new Promise((r) => setTimeout(r, args.everyMs));
  }
  process.stdout.write(`${JSON.stringify({ written })}\n`);
  await db().terminate();
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`subject writer failed: ${String(err)}\n`);
    process.exit(1);
  },
);
