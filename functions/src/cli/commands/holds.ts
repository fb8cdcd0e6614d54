import { ListRetentionHoldsInput, PlaceRetentionHoldInput, ReleaseRetentionHoldInput } from "../../contract/holds";
import { applyHoldNow, holdCell, listHolds, placeHold, releaseHoldById, scopeHoldCells } from "../../holds/index";
import { registryPolicy } from "../../platform/registry";
import { EXIT, positiveIntOpt, stringOpt, type Command, type CommandContext } from "../command";
import { keyValues, table, writeJson, writeOut } from "../output";
import { parseInput, staffOperator } from "../staff";
import { UsageError } from "../target";

const ACTIONS = ["list", "place", "release"] as const;

export const holdsCommand: Command = {
  name: "holds",
  summary: "List, place or release retention holds (list | place <path> | release <holdId>)",
  usage: `retention holds list [--state ACTIVE|RELEASED] [--reason-code <CODE>] [--placed-by <uid>] [--target <path>] [--database <name>] [--limit <n>] [--cursor <c>]
       retention holds place <targetPath> --reason-code <CODE> [--database <name>] [--release-after <iso>] [--note <text>] [--as <uid>]
       retention holds release <holdId> --reason <text> [--database <name>] [--as <uid>]`,
  details: `list     active holds (or --state RELEASED: the history), newest first, as listRetentionHolds returns
         them: PAST RELEASE-AFTER flags a hold whose releaseAfter has passed; --limit (default 25, at most
         100) and the printed cursor page through them.
place    places a hold on a document or a tenant subtree (tenants/{id}), as placeRetentionHold does; a
         subtree's documents are flagged before the command returns. --database names the governed
         database the target is in (a registry's databases, by logical name; default the primary); a hold
         on the scope's record is placed in every database with scope data.
release  releases a hold, as releaseRetentionHold does: a two-person reason needs someone other than its
         placer (TWO_PERSON_RULE); in every database that holds it (or the one --database names).

Under a registry with several governed databases, list shows every database's holds with a DATABASE column
(--database narrows it to one).

place and release act as the operator (on the emulators --as <uid>, else RETENTION_OPERATOR; on a project
the Application Default Credentials' account), who must be a Firebase Auth user with the compliance role.

Options:
  --json          machine-readable output (list: {items, nextCursor}; place: {holdId}; release: {holdId, state, released})

Exit: 0 done, 2 usage, a refusal (its reason, e.g. TWO_PERSON_RULE), or a connection error.`,
  options: {
    state: { type: "string" },
    "reason-code": { type: "string" },
    "placed-by": { type: "string" },
    target: { type: "string" },
    limit: { type: "string" },
    cursor: { type: "string" },
    "release-after": { type: "string" },
    note: { type: "string" },
    reason: { type: "string" },
    as: { type: "string" },
  },
  positionals: ["action", "target"],
  needsFirestore: true,
  validate(ctx) {
    inputOf(ctx);
  },
  async run(ctx) {
    const input = inputOf(ctx);
    if (input.action === "list") {
      const page = await listHolds({ ...input.list, callerUid: "", nowMs: Date.now() });
      const items = page.items.map(({ releaseRefusal: _r, ...item }) => item);
      const several = items.some((h) => h.databases !== undefined);
      if (ctx.json) writeJson({ items, nextCursor: page.nextCursor });
      else {
        writeOut(
          [
            table(
              ["HOLD", "STATE", "REASON", "TARGET", ...(several ? ["DATABASE"] : []), "PLACED BY", "PLACED AT", "RELEASE AFTER", "FLAGS"],
              items.map((h) => [h.holdId, h.state, h.reasonCode, h.targetPath, ...(several ? [(h.databases ?? []).join(", ")] : []), h.placedBy, h.placedAt, h.releaseAfter ?? "-", flags(h)]),
            ),
            ...(page.nextCursor ? ["", `more: --cursor ${page.nextCursor}`] : []),
          ].join("\n"),
        );
      }
      return EXIT.ok;
    }
    const actor = await staffOperator(ctx.values, ctx.target, "compliance");
    if (input.action === "place") {
      const p = input.place;
      const database = ctx.target.cell ?? undefined;
      const { holdId } = await placeHold(
        { targetPath: p.targetPath, ...(database !== undefined ? { database } : {}), reasonCode: p.reasonCode, releaseAfterMs: p.releaseAfter ? Date.parse(p.releaseAfter) : null, note: p.note, actor, nowMs: Date.now() },
        applyHoldNow,
      );
      const databases = registryPolicy().cells().length > 1 ? [holdCell(database), ...scopeHoldCells(p.targetPath, holdCell(database))] : null;
      if (ctx.json) writeJson({ holdId, ...(databases ? { databases } : {}) });
      else writeOut(keyValues([["holdId", holdId], ...(databases ? [["databases", databases.join(", ")] as [string, string]] : []), ["placed by", actor.id]]));
      return EXIT.ok;
    }
    const r = await releaseHoldById({ holdId: input.release.holdId, reason: input.release.reason, actor, nowMs: Date.now(), ...(ctx.target.cell !== null ? { database: ctx.target.cell } : {}) });
    if (ctx.json) writeJson({ holdId: r.holdId, state: "RELEASED", released: r.released });
    else writeOut(keyValues([["holdId", r.holdId], ["state", "RELEASED"], ["documents released", r.released], ["released by", actor.id]]));
    return EXIT.ok;
  },
};

function flags(h: { pastReleaseAfter: boolean; applying: boolean; twoPersonRelease: boolean }): string {
  return [h.pastReleaseAfter ? "PAST RELEASE-AFTER" : "", h.applying ? "APPLYING" : "", h.twoPersonRelease ? "two-person" : ""].filter(Boolean).join(", ") || "-";
}

type HoldsInput =
  | { action: "list"; list: ReturnType<typeof ListRetentionHoldsInput.parse> }
  | { action: "place"; place: ReturnType<typeof PlaceRetentionHoldInput.parse> }
  | { action: "release"; release: ReturnType<typeof ReleaseRetentionHoldInput.parse> };

function inputOf({ values, positionals, target }: CommandContext): HoldsInput {
  const action = positionals[0];
  if (!(ACTIONS as readonly (string | undefined)[]).includes(action)) throw new UsageError(`holds needs an action: ${ACTIONS.join(", ")}.`);
  const only = (allowed: string[]) => {
    const extra = ["state", "reason-code", "placed-by", "target", "limit", "cursor", "release-after", "note", "reason"].filter((o) => values[o] !== undefined && !allowed.includes(o));
    if (extra.length > 0) throw new UsageError(`holds ${action} does not take --${extra.join(", --")}.`);
  };
  if (action === "list") {
    only(["state", "reason-code", "placed-by", "target", "limit", "cursor"]);
    if (positionals[1] !== undefined) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[1])}.`);
    const list = parseInput(ListRetentionHoldsInput, {
      state: stringOpt(values, "state"),
      reasonCode: stringOpt(values, "reason-code"),
      placedBy: stringOpt(values, "placed-by"),
      targetPath: stringOpt(values, "target"),
      ...(target.cell !== null ? { database: target.cell } : {}),
      pageSize: positiveIntOpt(values, "limit", 25),
      cursor: stringOpt(values, "cursor"),
    });
    return { action, list };
  }
  if (positionals[1] === undefined) throw new UsageError(action === "place" ? "holds place needs a target path." : "holds release needs a hold id.");
  if (action === "place") {
    only(["reason-code", "release-after", "note"]);
    if (values["reason-code"] === undefined) throw new UsageError("holds place needs --reason-code <CODE> (a hold reason of the registry, e.g. FINANCE_RETENTION).");
    const place = parseInput(PlaceRetentionHoldInput, {
      targetPath: positionals[1],
      reasonCode: stringOpt(values, "reason-code"),
      releaseAfter: stringOpt(values, "release-after"),
      note: stringOpt(values, "note"),
    });
    return { action, place };
  }
  only(["reason"]);
  if (values.reason === undefined) throw new UsageError("holds release needs --reason <text>: why the hold no longer applies.");
  return { action: "release", release: parseInput(ReleaseRetentionHoldInput, { holdId: positionals[1], reason: stringOpt(values, "reason") }) };
}
