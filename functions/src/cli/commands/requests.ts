import { z } from "zod";
import { inputs } from "../../contract/inputs";
import { ExtendRequestDeadlineInput, GetDeletionStatusInput, ListDeletionRequestsInput } from "../../contract/requests";
import { resendFailedNotice } from "../../processors/index";
import { extendRequestDeadline, findRequest, listRequests, statusView } from "../../requests/index";
import type { Subject } from "../../plan/rules";
import { settings } from "../../platform/settings";
import { EXIT, positiveIntOpt, stringOpt, type Command, type CommandContext } from "../command";
import { keyValues, table, writeJson, writeOut } from "../output";
import { SCOPE_OPTIONS, scopeOpt, scopeWord } from "../scope";
import { parseInput, staffOperator } from "../staff";
import { UsageError } from "../target";

export const requestsCommand: Command = {
  name: "requests",
  summary: "List deletion requests, show one, extend its legal deadline, or send a failed processor notice again (list | show | extend | resend)",
  usage: `retention requests list [--state <STATE>] [--overdue] [--limit <n>] [--cursor <c>]
       retention requests list (--subject <uid> [--scope <id>] | --scope <id>) [--limit <n>] [--cursor <c>]
       retention requests show <requestId>
       retention requests extend <requestId> --reason <text> [--until <ISO time>] [--as <uid>]
       retention requests resend <requestId> --processor <name> --reason <text> [--as <uid>]`,
  details: `list   deletion requests, most urgent due date first, as listDeletionRequests returns them: OVERDUE
       marks an erasure owed past its due date; --state narrows to one state (PENDING, CANCELLING,
       CANCELLED, PROCESSING, BLOCKED, RETAINED_UNDER_HOLD, PURGED), --overdue to the overdue ones;
       --subject <uid> to one user's requests (--scope: in that scope), --scope <id> alone to a scope's
       (its closures and its users' requests there), newest first; --tenant is the alias of --scope.
       A request of a request group (a user erased in several scopes) names its group (LEAD: the member
       whose id names the group). --limit (default 25, at most 100) and the printed cursor page through them.
show   one request as compliance sees it (getDeletionStatus): state, dates, timeline, why it is blocked,
       what is retained and under which reason, the date by which the last copy is gone ("fully gone by",
       or why there is none yet) and when ERASURE_COMPLETE was recorded; for a member of a request group,
       the whole group (its state derived from its members', each member with its scope and state). A request
       across several governed databases shows each database's part (its state, date and ERASURE_COMPLETE);
       the state and the date above are derived from them. Its legal clock: the law, the deadline it set when the
       request was opened, the deadline now, the days left, and the extension (when, by whom, why).
       list's DAYS LEFT and LAW columns show the same (the list is ordered by due date: fewest days left first).
extend the request's legal deadline, once, within its law's limit (GDPR: two more months; CCPA: 45 more
       days), with a written reason (--reason, at least 10 characters), recorded as evidence; --until sets the
       new deadline, else the law's limit. A request group's member extends the whole group. The operator
       (--as <uid> on the emulators) must be compliance or retention-admin staff in Auth. Refusals change
       nothing: EXTENSION_REASON_REQUIRED, NO_LEGAL_CLOCK, NOT_EXTENDABLE, ALREADY_EXTENDED, BEYOND_LEGAL_LIMIT,
       EXTENSION_NOT_LATER.
resend a processor notice that FAILED (every delivery attempt the queue allows failed: an endpoint down for
       hours, a wrong URL or key since fixed) goes back to PENDING, and the next relay (every 5 minutes) queues it
       with the queue's full retries. With a written reason (--reason, at least 10 characters), recorded as
       PROCESSOR_NOTICE_RESENT evidence. Its deadline does not move. The operator must be compliance staff.
       Refusals change nothing: PROCESSOR_NOTICE_NOT_FOUND, MANUAL_PROCESSOR_NOT_SENT (staff confirm a manual
       processor in the console), NOTICE_NOT_FAILED.

Options:
  --json   machine-readable output (list: {items, nextCursor}; show: getDeletionStatus's staff answer;
           extend: extendRequestDeadline's answer)

Exit: 0 done, 2 usage, REQUEST_NOT_FOUND, a refusal, or a connection error.`,
  options: {
    state: { type: "string" },
    overdue: { type: "boolean" },
    subject: { type: "string" },
    ...SCOPE_OPTIONS,
    limit: { type: "string" },
    cursor: { type: "string" },
    reason: { type: "string" },
    until: { type: "string" },
    processor: { type: "string" },
    as: { type: "string" },
  },
  positionals: ["action", "requestId"],
  needsFirestore: true,
  validate(ctx) {
    inputOf(ctx);
  },
  async run(ctx) {
    const input = inputOf(ctx);
    const nowMs = Date.now();
    const word = scopeWord();
    if (input.action === "extend") {
      // Either staff role may extend, as with the callable: compliance first, else retention-admin.
      const actor = await staffOperator(ctx.values, ctx.target, "compliance").catch((err: unknown) => {
        if ((err as { reason?: string }).reason === "NOT_COMPLIANCE") return staffOperator(ctx.values, ctx.target, "retention-admin");
        throw err;
      });
      const out = await extendRequestDeadline({ requestId: input.input.requestId, reason: input.input.reason, ...(input.input.until !== undefined ? { untilMs: Date.parse(input.input.until) } : {}), actor, nowMs });
      const iso = (ms: number) => new Date(ms).toISOString();
      const rows = out.extended.map((e) => ({ requestId: e.requestId, law: e.law, originalDueAt: iso(e.originalDueAtMs), dueAt: iso(e.dueAtMs) }));
      if (ctx.json) writeJson({ requestId: out.requestId, extended: rows });
      else writeOut([table(["REQUEST", "LAW", "WAS DUE", "NOW DUE"], rows.map((r) => [r.requestId, r.law, r.originalDueAt, r.dueAt])), "", `extended by ${actor.id}`].join("\n"));
      return EXIT.ok;
    }
    if (input.action === "resend") {
      const actor = await staffOperator(ctx.values, ctx.target, "compliance");
      const out = await resendFailedNotice(input.input, actor, nowMs);
      if (ctx.json) writeJson({ noticeId: out.noticeId, state: "PENDING" });
      else writeOut(`${out.noticeId}: PENDING again, queued by the next relay (resent by ${actor.id})`);
      return EXIT.ok;
    }
    if (input.action === "list") {
      const page = await listRequests({ ...input.list, nowMs });
      if (ctx.json) writeJson(page);
      else {
        writeOut(
          [
            table(
              ["REQUEST", "STATE", "SUBJECT", word.toUpperCase(), "GROUP", "REQUESTED", "DUE", "DAYS LEFT", "LAW", "FLAGS"],
              page.items.map((r) => [
                r.requestId,
                // Across several governed databases: the derived state, and each database's.
                r.cells ? `${r.state} (${r.cells.map((c) => `${c.database} ${c.state ?? "-"}`).join(", ")})` : r.state,
                r.subject.type === "user" ? r.subject.uid : `(${word})`,
                r.subject.tenantId || "-",
                r.group ? `${r.group.groupId}${r.group.lead ? " (lead)" : ""}` : "-",
                r.requestedAt,
                r.dueAt ?? "-",
                r.daysLeft === null ? "-" : String(r.daysLeft),
                r.law ?? "-",
                [r.overdue ? "OVERDUE" : "", r.extended ? "EXTENDED" : "", r.blockedReason ?? "", r.retainedUnderHold !== null ? `${r.retainedUnderHold} under hold` : ""].filter(Boolean).join(", ") || "-",
              ]),
            ),
            ...(page.nextCursor ? ["", `more: --cursor ${page.nextCursor}`] : []),
          ].join("\n"),
        );
      }
      return EXIT.ok;
    }
    const { request, snap } = await findRequest({ requestId: input.requestId });
    const shown = await statusView(request, snap, "staff", { nowMs, refreshMs: settings.statusRefreshMs() });
    const staff = shown.staff!;
    if (ctx.json) {
      writeJson(shown);
      return EXIT.ok;
    }
    writeOut(
      [
        keyValues([
          ["request", shown.requestId],
          ["state", shown.state],
          ["subject", `${subjectText(staff.subject, word)}, opened by ${staff.requestedBy} (source ${staff.source})`],
          ["group", shown.group ? `${shown.group.groupId}: ${shown.group.requests.length} ${word}s` : null],
          ["grace ends", shown.graceEndsAt],
          ["due", shown.dueAt],
          ["legal clock", shown.legalClock ? `${shown.legalClock.name} (${shown.legalClock.law}): ${shown.legalClock.outcome}${shown.legalClock.daysLeft !== null ? `, ${shown.legalClock.daysLeft} days left` : ""}; due ${shown.legalClock.originalDueAt} when opened${shown.legalClock.limit ? `, extendable to ${shown.legalClock.limit}` : ", not extendable"}` : null],
          ["extended", shown.legalClock?.extension ? `to ${shown.legalClock.extension.dueAt} on ${shown.legalClock.extension.at} by ${shown.legalClock.extension.by ?? "-"}: ${shown.legalClock.extension.reason}` : null],
          ["fully gone by", shown.fullyGoneBy ?? `unknown (${shown.fullyGoneByUnknown ?? "-"})`],
          ["erasure complete", shown.erasureCompleteAt],
          ["blocked", staff.blockedReason],
          ["under hold", staff.retainedUnderHold ? `${staff.retainedUnderHold.count} (${staff.retainedUnderHold.holds.map((h) => h.reasonCode).join(", ")})` : null],
        ]),
        ...(shown.group ? ["", table(["MEMBER", word.toUpperCase(), "STATE", "LEAD"], shown.group.requests.map((m) => [m.requestId, m.scope, m.state, m.lead ? "yes" : "-"]))] : []),
        ...(shown.cells
          ? [
              "",
              table(
                ["DATABASE", "STATE", "FULLY GONE BY", "ERASURE COMPLETE", "UNDER HOLD"],
                shown.cells.map((c) => [c.database, c.state === null ? "(not opened)" : `${c.state}${c.awaitingRecord ? " (awaiting the primary)" : ""}`, c.fullyGoneBy ?? `unknown (${c.fullyGoneByUnknown ?? "-"})`, c.erasureComplete ? "yes" : "no", c.underHold]),
              ),
            ]
          : []),
        "",
        shown.group
          ? table(["AT", word.toUpperCase(), "EVENT", "DETAIL"], shown.timeline.map((t) => [t.at, t.scope ?? "-", t.event, t.detail ?? ""]))
          : shown.cells
            ? table(["AT", "DATABASE", "EVENT", "DETAIL"], shown.timeline.map((t) => [t.at, t.database ?? "primary", t.event, t.detail ?? ""]))
            : table(["AT", "EVENT", "DETAIL"], shown.timeline.map((t) => [t.at, t.event, t.detail ?? ""])),
        // The processors the erasure notified (docs/decisions/0039-processors.md): OVERDUE once open past their deadline.
        ...(shown.processors && shown.processors.length > 0
          ? [
              "",
              table(
                ["PROCESSOR", "KIND", "STATE", "DEADLINE", "SENT", "ACKNOWLEDGED", "RECEIPT", "LAST ERROR"],
                shown.processors.map((p) => [p.processor, p.kind, p.status.toUpperCase(), p.deadline, p.sentAt ?? "-", p.acknowledgedAt ?? "-", p.receiptId ?? "-", p.lastError ?? "-"]),
              ),
            ]
          : []),
        ...(shown.retained.length > 0
          ? ["", table(["RETAINED", ...(shown.cells ? ["DATABASE"] : []), "REASON CODE", "UNTIL", "WHY"], shown.retained.map((r) => [r.path, ...(shown.cells ? [r.database ?? "primary"] : []), r.reasonCode, r.until ?? "-", r.reason]))]
          : []),
      ].join("\n"),
    );
    return EXIT.ok;
  },
};

const subjectText = (s: Subject, word: string): string => (s.type === "user" ? `user ${s.uid}${s.tenantId ? ` (${word} ${s.tenantId})` : ""}` : `${word} ${s.tenantId}`);

type RequestsInput =
  | { action: "list"; list: ReturnType<typeof ListDeletionRequestsInput.parse> }
  | { action: "show"; requestId: string }
  | { action: "extend"; input: ReturnType<typeof ExtendRequestDeadlineInput.parse> }
  | { action: "resend"; input: z.infer<typeof ResendNoticeInput> };

/** What `requests resend` takes: the request, the processor whose FAILED notice goes again, and why. */
const ResendNoticeInput = z.object({ requestId: inputs.id, processor: inputs.id, reason: inputs.text.min(10, "a written reason of at least 10 characters") }).strict();

function inputOf({ values, positionals }: CommandContext): RequestsInput {
  const action = positionals[0];
  const only = (allowed: readonly string[]) => {
    const extra = ["state", "overdue", "subject", "scope", "tenant", "limit", "cursor", "reason", "until", "processor", "as"].filter((o) => !allowed.includes(o) && values[o] !== undefined);
    if (extra.length > 0) throw new UsageError(`requests ${action} does not take --${extra.join(", --")}.`);
  };
  if (action === "extend") {
    only(["reason", "until", "as"]);
    if (positionals[1] === undefined) throw new UsageError("requests extend needs a request id.");
    if (stringOpt(values, "reason") === undefined) throw new UsageError("requests extend needs --reason <text>: an extension is given with a written reason.");
    return { action, input: parseInput(ExtendRequestDeadlineInput, { requestId: positionals[1], reason: stringOpt(values, "reason"), until: stringOpt(values, "until") }) };
  }
  if (action === "resend") {
    only(["processor", "reason", "as"]);
    if (positionals[1] === undefined) throw new UsageError("requests resend needs a request id.");
    if (stringOpt(values, "processor") === undefined) throw new UsageError("requests resend needs --processor <name>: the processor whose notice failed.");
    if (stringOpt(values, "reason") === undefined) throw new UsageError("requests resend needs --reason <text>: why it may go again now.");
    return { action, input: parseInput(ResendNoticeInput, { requestId: positionals[1], processor: stringOpt(values, "processor"), reason: stringOpt(values, "reason") }) };
  }
  if (action === "list") {
    only(["state", "overdue", "subject", "scope", "tenant", "limit", "cursor"]);
    if (positionals[1] !== undefined) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[1])}.`);
    const uid = stringOpt(values, "subject");
    const scope = scopeOpt(values);
    const subject = uid !== undefined ? { type: "user", uid, ...(scope !== undefined ? { scope } : {}) } : scope !== undefined ? { type: "scope", id: scope } : undefined;
    const list = parseInput(ListDeletionRequestsInput, {
      state: stringOpt(values, "state"),
      overdueOnly: values.overdue === true ? true : undefined,
      subject,
      pageSize: positiveIntOpt(values, "limit", 25),
      cursor: stringOpt(values, "cursor"),
    });
    return { action, list };
  }
  if (action === "show") {
    only([]);
    if (positionals[1] === undefined) throw new UsageError("requests show needs a request id.");
    const { requestId } = parseInput(GetDeletionStatusInput, { requestId: positionals[1] });
    return { action, requestId: requestId! };
  }
  throw new UsageError("requests needs an action: list, show, extend, resend.");
}
