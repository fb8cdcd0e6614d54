import { zodResolver } from "@hookform/resolvers/zod";
import { inputs, type CallableOutput } from "@atlasmart/retention-client";
import { useInfiniteQuery } from "@tanstack/react-query";
import type { ColumnDef } from "@tanstack/react-table";
import { useState } from "react";
import { useForm } from "react-hook-form";
import { z } from "zod";
import { problem, when } from "../format";
import { useSession } from "../session";
import { DataTable } from "../table";

type Explained = CallableOutput<"explainDeletion">;
type Entry = Explained["entries"][number];

const Question = z
  .object({ kind: z.enum(["path", "request", "subject"]), value: z.string().trim().min(1, "what to explain"), chain: z.boolean() })
  .superRefine((v, ctx) => {
    const ok = v.kind === "path" ? inputs.documentPath.safeParse(v.value).success : inputs.id.safeParse(v.value).success;
    if (!ok) ctx.addIssue({ code: "custom", path: ["value"], message: v.kind === "path" ? "a document path (collection/id pairs)" : "an id (letters, digits, - and _)" });
  });
type QuestionValues = z.infer<typeof Question>;

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

const columns: ColumnDef<Entry, unknown>[] = [
  { header: "Entry", accessorKey: "id" },
  { header: "When", accessorKey: "at", cell: (c) => when(c.row.original.at) },
  { header: "What", accessorKey: "action" },
  { header: "Who acted", id: "actor", accessorFn: (e) => `${e.actor.type} ${e.actor.id}` },
  { header: "Reason", accessorKey: "reason" },
  { header: "Policy", accessorKey: "policyVersion" },
  { header: "Request", accessorKey: "requestId", cell: (c) => c.row.original.requestId ?? "-" },
  { header: "Shown as", accessorKey: "role", cell: (c) => (c.row.original.role === "match" ? "names it" : "who allowed it") },
  { header: "Verifies", accessorKey: "verified", cell: (c) => (c.row.original.verified ? "yes" : <span className="badge danger">NO</span>) },
];

/** "Why was this deleted?" by path, request or subject; whether the chain verifies; CSV and JSON export. */
export function EvidenceView() {
  const { fb } = useSession();
  const [asked, setAsked] = useState<QuestionValues | null>(null);
  const form = useForm<QuestionValues>({ resolver: zodResolver(Question), defaultValues: { kind: "path", value: "", chain: false } });
  const q = useInfiniteQuery({
    queryKey: ["explain", asked],
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
  return (
    <section>
      <h1>Why was this deleted?</h1>
      <form className="filters" aria-label="Explain" onSubmit={(e) => void form.handleSubmit((v) => setAsked(v))(e)} noValidate>
        <label htmlFor="ex-kind">Explain a</label>
        <select id="ex-kind" {...form.register("kind")}>
          <option value="path">document path</option>
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
      {q.isError && (
        <p role="alert" className="error">
          {problem(q.error)}
        </p>
      )}
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
                <li key={i}>{s}</li>
              ))}
            </ul>
          )}
          <h2>Entries</h2>
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
