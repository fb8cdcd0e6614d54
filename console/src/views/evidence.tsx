import { zodResolver } from "@hookform/resolvers/zod";
import { inputs, type CallableOutput } from "@atlasmart/retention-client";
import { useInfiniteQuery } from "@tanstack/react-query";
import type { ColumnDef } from "@tanstack/react-table";
import { useEffect, useMemo, useState } from "react";
import { useForm } from "react-hook-form";
import { z } from "zod";
import { humanTimes, namePeople, objectOutcomes, personName, Problem, when } from "../format";
import { useRegistry } from "../registry";
import { useSession, useUserKey } from "../session";
import { DataTable } from "../table";

type Explained = CallableOutput<"explainDeletion">;
type Entry = Explained["entries"][number];

/** The question form; `pathHint` is the app's own example of a document path (the enforced registry's). */
const question = (pathHint: string) =>
  z
    .object({ kind: z.enum(["path", "request", "subject"]), value: z.string().trim().min(1, "what to explain"), chain: z.boolean() })
    .superRefine((v, ctx) => {
      const ok = v.kind === "path" ? inputs.evidencePath.safeParse(v.value).success : inputs.id.safeParse(v.value).success;
      if (!ok) {
        const object = v.kind === "path" && v.value.startsWith("gs://");
        const odd = v.kind === "path" && !object && v.value.split("/").length % 2 === 1 && !v.value.split("/").includes("");
        const message =
          v.kind !== "path"
            ? "an id: letters, digits, - and _ only"
            : object
              ? "a Cloud Storage object: gs:// then the bucket's name, a slash, and the object's name"
              : odd
                ? `a document's path: “${v.value.split("/").pop() ?? ""}” is a collection, so add the document's id after it`
                : `${pathHint}, or an object, gs://bucket/name`;
        ctx.addIssue({ code: "custom", path: ["value"], message });
      }
    });
type QuestionValues = z.infer<ReturnType<typeof question>>;

const CSV_COLUMNS = ["id", "chain", "seq", "at", "action", "actorType", "actorId", "reason", "policyVersion", "requestId", "holdId", "correlationId", "manifestHash", "role", "verified", "hash", "paths"] as const;

/** The entries as CSV for an auditor: one row per entry, RFC 4180 quoting. */
export function toCsv(entries: readonly Entry[]): string {
  const cell = (v: string | number | boolean | null) => {
    const s = v === null ? "" : String(v);
    return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
  };
  const rows = entries.map((e) =>
    [e.id, e.chain, e.seq, e.at, e.action, e.actor.type, e.actor.id, e.reason, e.policyVersion, e.requestId, e.holdId, e.correlationId, e.manifestHash, e.role, e.verified, e.hash, e.paths.join(" ")].map(cell).join(","),
  );
  return [CSV_COLUMNS.join(","), ...rows].join("\r\n") + "\r\n";
}

function download(name: string, type: string, text: string) {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

type People = Explained["people"];

/** Who acted, for people: a staff member by name, a user by uid, the system by its job. */
export function actorText(actor: Entry["actor"], people: People): string {
  if (actor.type === "staff") return `${personName(people, actor.id)} (staff)`;
  if (actor.type === "user") return `user ${actor.id}`;
  return `the system (${actor.id})`;
}

const columnsFor = (people: People): ColumnDef<Entry, unknown>[] => [
  { header: "Entry", accessorKey: "id", cell: (c) => <code>{c.row.original.id}</code> },
  { header: "When", accessorKey: "at", cell: (c) => when(c.row.original.at) },
  {
    header: "What",
    accessorKey: "action",
    cell: (c) => {
      const lines = objectOutcomes(c.row.original);
      if (lines.length === 0) return c.row.original.action;
      return (
        <span>
          {c.row.original.action}
          {lines.map((l) => (
            <span key={l} className="object-outcome">
              <br />
              <code>{l}</code>
            </span>
          ))}
        </span>
      );
    },
  },
  { header: "Who acted", id: "actor", accessorFn: (e) => actorText(e.actor, people) },
  {
    header: "Reason",
    accessorKey: "reason",
    cell: (c) => {
      const e = c.row.original;
      if (e.statement === null) return e.reason;
      return (
        <span data-testid="release-reason">
          Released because: “{e.statement.text}”
          {!e.statement.matchesEvidence && <span className="badge danger"> does not match the hash in the evidence</span>}
          <br />
          <span className="muted">The hold's own reason: {e.reason}</span>
        </span>
      );
    },
  },
  { header: "Policy", accessorKey: "policyVersion" },
  { header: "Request", accessorKey: "requestId", cell: (c) => c.row.original.requestId ?? "-" },
  { header: "Why it is listed", accessorKey: "role", cell: (c) => (c.row.original.role === "match" ? "It names what you asked about" : "Context: what allowed it") },
  { header: "Verifies", accessorKey: "verified", cell: (c) => (c.row.original.verified ? "yes" : <span className="badge danger">NO</span>) },
];

/** "Why was this deleted?" by path, request or subject; whether the chain verifies; CSV and JSON export. */
export function EvidenceView() {
  const { fb } = useSession();
  const userKey = useUserKey();
  const [asked, setAsked] = useState<QuestionValues | null>(null);
  const pathHint = useRegistry().enforced?.words.evidencePathHint ?? "a document's path: collection and id pairs";
  const schema = useMemo(() => question(pathHint), [pathHint]);
  const form = useForm<QuestionValues>({ resolver: zodResolver(schema), defaultValues: { kind: "path", value: "", chain: false } });
  const q = useInfiniteQuery({
    queryKey: [...userKey, "explain", asked],
    enabled: asked !== null,
    initialPageParam: undefined as string | undefined,
    queryFn: ({ pageParam }) => {
      const a = asked!;
      const base = { pageSize: 50, verify: a.chain ? ("chain" as const) : ("entries" as const), ...(pageParam ? { cursor: pageParam } : {}) };
      return fb.client.explainDeletion(a.kind === "path" ? { path: a.value, ...base } : a.kind === "request" ? { requestId: a.value, ...base } : { subjectUid: a.value, ...base });
    },
    getNextPageParam: (last) => last.nextCursor ?? undefined,
  });
  const pages = q.data?.pages ?? [];
  const entries = pages.flatMap((p) => p.entries);
  const first = pages[0];
  const verified = pages.every((p) => p.verification.ok);
  const { errors } = form.formState;
  const people = Object.assign({}, ...pages.map((p) => p.people)) as People;
  const columns = columnsFor(people);
  // A refusal answers the question as it was asked: once the question changes, it goes.
  const failed = q.isError;
  useEffect(() => {
    const sub = form.watch(() => {
      if (failed) setAsked(null);
    });
    return () => sub.unsubscribe();
  }, [form, failed]);
  return (
    <section>
      <h1>Why was this deleted?</h1>
      <form className="filters" aria-label="Explain" onSubmit={(e) => void form.handleSubmit((v) => setAsked(v))(e)} noValidate>
        <label htmlFor="ex-kind">Explain a</label>
        <select id="ex-kind" {...form.register("kind")}>
          <option value="path">document or object path</option>
          <option value="request">deletion request</option>
          <option value="subject">subject (uid)</option>
        </select>
        <label htmlFor="ex-value">Path or id</label>
        <input id="ex-value" aria-invalid={errors.value ? true : undefined} aria-describedby={errors.value ? "ex-value-error" : undefined} {...form.register("value")} />
        <label className="inline">
          <input type="checkbox" {...form.register("chain")} /> Verify the whole chain
        </label>
        <button type="submit" className="primary">
          Explain
        </button>
        {errors.value && (
          <p className="field-error" id="ex-value-error">
            Enter {errors.value.message}.
          </p>
        )}
      </form>
      {q.isFetching && <p className="loading">Reading the evidence…</p>}
      {q.isError && <Problem error={q.error} />}
      {first && (
        <>
          <p className={verified ? "badge ok-badge" : "badge danger"} data-testid="chain-status">
            {verified ? `Evidence verifies (${first.verification.mode === "chain" ? `whole chain, ${first.verification.checked} entries` : "each entry and its links"})` : "Verification FAILED"}
          </p>
          {pages.flatMap((p) => p.verification.problems).map((p, i) => (
            <p key={i} className="error">
              Entry {p.id ?? `${p.chain} #${p.seq}`}: {p.problem}: {p.detail}
            </p>
          ))}
          <h2>What happened</h2>
          {first.summary.length === 0 ? (
            <p className="empty">No evidence names this {first.query.kind}.</p>
          ) : (
            <ul data-testid="summary">
              {pages.flatMap((p) => p.summary).map((s, i) => (
                <li key={i}>{namePeople(humanTimes(s), people)}</li>
              ))}
            </ul>
          )}
          <h2>Entries</h2>
          <p className="muted legend" data-testid="entries-legend">
            Each entry is one record in the tamper-evident evidence ledger. Its id names the chain it belongs to and its number in that chain: <code>s0406-000000000002</code> is entry 2 of chain s0406. “Why it is listed” says
            whether the entry names what you asked about, or is shown as context: the request, the run or the approval that allowed it. “Verifies” says whether the entry's hash and its links to its neighbours check out.
          </p>
          <DataTable caption="Evidence entries in the order they happened" columns={columns} data={entries} rowKey={(e) => e.id} testId="evidence" />
          {q.hasNextPage && (
            <button type="button" onClick={() => void q.fetchNextPage()}>
              Load more
            </button>
          )}
          <div className="buttons">
            <button type="button" onClick={() => download(`evidence-${first.query.kind}.csv`, "text/csv", toCsv(entries))}>
              Export CSV
            </button>
            <button type="button" onClick={() => download(`evidence-${first.query.kind}.json`, "application/json", JSON.stringify({ query: first.query, verification: pages.map((p) => p.verification), entries }, null, 2))}>
              Export JSON
            </button>
          </div>
        </>
      )}
    </section>
  );
}
