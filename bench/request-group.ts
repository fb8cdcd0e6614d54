/**
 * What a request group costs at its bound, measured on the emulators: a user in GROUP_MAX_SCOPES (25) workspaces of
 * the request-group suites' test app (test/fixtures/workspaces), each workspace holding her member document and
 * `docs` documents of hers. Times, as the callables run them in-process: the request (the lookups, the one
 * transaction that opens every member, each member's soft delete and status summary), a status call (every member
 * read, their summaries fresh), a cancel (the one transaction that moves every member, then each restore), and an
 * open with no data (the transaction that writes every member and its evidence, and each member's empty walk),
 * against a request of the same user in one workspace. Each size on a cleared database, after an untimed warm-up.
 *
 *   node scripts/emulators.mjs exec --only firestore,auth -- npx tsx bench/request-group.ts [docs-per-workspace]
 *
 * Prints a summary and one JSON line.
 */
import { getAuth } from "firebase-admin/auth";
import { cancelAccountDeletionHandler } from "../functions/src/entrypoints/callable/cancel-account-deletion";
import { getDeletionStatusHandler } from "../functions/src/entrypoints/callable/get-deletion-status";
import { requestAccountDeletionHandler } from "../functions/src/entrypoints/callable/request-account-deletion";
import { freshGovernedFields } from "../functions/src/kernel/governed-write";
import { adminApp, db } from "../functions/src/platform/firestore";
import { governedToFirestore } from "../functions/src/platform/governed-doc";
import { policy, useRegistryForTests } from "../functions/src/platform/registry";
import { settings } from "../functions/src/platform/settings";
import { openUserErasure } from "../functions/src/requests/index";
import { GROUP_MAX_SCOPES } from "../functions/src/requests/rules/group";
import { WORKSPACES_DATABASE, workspacesRegistry } from "../test/fixtures/workspaces/registry";

process.env.RETENTION_DATABASE_ID = WORKSPACES_DATABASE;
const docsPerWorkspace = Number(process.argv[2] ?? 4);
const UID = "u-bench";

async function clear(): Promise<void> {
  const host = process.env.FIRESTORE_EMULATOR_HOST;
  const project = process.env.GCLOUD_PROJECT ?? "demo-atlasmart-firestore";
  const r = await fetch(`http://${host}/emulator/v1/projects/${project}/databases/${settings.databaseId()}/documents`, { method: "DELETE" });
  if (!r.ok) throw new Error(`clearing the emulator: ${r.status}`);
  await getAuth(adminApp())
    .deleteUser(UID)
    .catch(() => undefined);
  await getAuth(adminApp()).createUser({ uid: UID });
}

async function seed(workspaces: number): Promise<void> {
  const pol = policy();
  const now = Date.now();
  let batch = db().batch();
  let n = 0;
  const put = async (path: string, tenantId: string, data: Record<string, unknown>) => {
    const cls = pol.classForPath(path)!;
    batch.set(db().doc(path), {
      ...data,
      ...governedToFirestore(freshGovernedFields(cls, { tenantId, policyVersion: pol.version, createdAtMs: now, expireAtMs: null }), "set"),
    });
    if (++n % 400 === 0) {
      await batch.commit();
      batch = db().batch();
    }
  };
  await put(`people/${UID}`, "", { displayName: "Bench" });
  for (let w = 0; w < workspaces; w++) {
    const id = `w-${String(w).padStart(2, "0")}`;
    await put(`workspaces/${id}`, id, { name: id });
    await put(`workspaces/${id}/members/m-${UID}`, id, { uid: UID });
    for (let d = 0; d < docsPerWorkspace; d++) await put(`workspaces/${id}/docs/d-${d}`, id, { authorUid: UID });
  }
  await batch.commit();
}

const time = async <T>(f: () => Promise<T>): Promise<[number, T]> => {
  const t = performance.now();
  const r = await f();
  return [Math.round(performance.now() - t), r];
};

async function measure(workspaces: number) {
  const caller = { uid: UID, tenantId: null, roles: [] };
  await clear();
  await seed(workspaces);
  const [requestMs, opened] = await time(() => requestAccountDeletionHandler({}, caller));
  const [statusMs] = await time(() => getDeletionStatusHandler({ requestId: opened.requestId }, caller, { nowMs: Date.now(), refreshMs: 3_600_000 }));
  const [cancelMs, cancelled] = await time(() => cancelAccountDeletionHandler({ requestId: opened.requestId }, caller));
  // Opening with nothing to soft-delete: the transaction that writes every member and its evidence, and each
  // member's (empty) data-map walk.
  await clear();
  const scopes = Array.from({ length: workspaces }, (_, w) => `w-${String(w).padStart(2, "0")}`);
  const [openTxMs] = await time(() => openUserErasure({ uid: UID, scopes, source: "staff", actor: { type: "system", id: "bench" }, nowMs: Date.now() }));
  return { workspaces, docs: workspaces * (docsPerWorkspace + 1) + 1, requestMs, statusMs, cancelMs, openTxMs, members: opened.group?.requests.length ?? 1, cancelled: cancelled.state };
}

async function main(): Promise<void> {
  useRegistryForTests(workspacesRegistry());
  await measure(2); // warm-up, untimed
  const rows = [await measure(1), await measure(GROUP_MAX_SCOPES)];
  for (const r of rows) {
    process.stdout.write(
      `${r.workspaces} workspace(s), ${r.docs} documents: request ${r.requestMs} ms (${r.members} member(s)), status ${r.statusMs} ms, cancel ${r.cancelMs} ms; open with no data ${r.openTxMs} ms\n`,
    );
  }
  process.stdout.write(`${JSON.stringify({ bench: "request-group", docsPerWorkspace, rows })}\n`);
}

void main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
