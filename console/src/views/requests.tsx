import { REQUEST_STATES, type CallableOutput } from "@atlasmart/retention-client";
import { useInfiniteQuery } from "@tanstack/react-query";
import { Link } from "@tanstack/react-router";
import type { ColumnDef } from "@tanstack/react-table";
import { useState } from "react";
import { countdown, problem, subjectLabel, useNow, when } from "../format";
import { useSession } from "../session";
import { DataTable } from "../table";

type Item = CallableOutput<"listDeletionRequests">["items"][number];

const columnsAt = (nowMs: number): ColumnDef<Item, unknown>[] => [
  {
    header: "Request",
    accessorKey: "requestId",
    cell: (c) => (
      <Link to="/requests/$requestId" params={{ requestId: c.row.original.requestId }}>
        {c.row.original.requestId}
      </Link>
    ),
  },
  { header: "State", accessorKey: "state", cell: (c) => <span className={`state state-${c.row.original.state}`}>{c.row.original.state}</span> },
  { header: "Subject", id: "subject", accessorFn: (r) => subjectLabel(r.subject) },
  { header: "Requested", accessorKey: "requestedAt", cell: (c) => when(c.row.original.requestedAt) },
  {
    header: "Due",
    accessorKey: "dueAt",
    cell: (c) => (
      <span>
        {when(c.row.original.dueAt)}
        <br />
        <span className={c.row.original.overdue ? "badge danger" : "muted"}>{c.row.original.overdue ? `Overdue: ${countdown(c.row.original.dueAt, nowMs)}` : countdown(c.row.original.dueAt, nowMs)}</span>
      </span>
    ),
  },
  {
    header: "Why not done",
    id: "why",
    cell: (c) => {
      const r = c.row.original;
      if (r.blockedReason) return <span className="badge warn">Blocked: {r.blockedReason}</span>;
      if (r.retainedUnderHold !== null) return <span className="badge">{r.retainedUnderHold} kept under a hold</span>;
      return <span className="muted">-</span>;
    },
  },
];

/** Deletion requests by state, the due date counting down, overdue ones flagged; paged. */
export function RequestsView() {
  const { fb } = useSession();
  const nowMs = useNow();
  const columns = columnsAt(nowMs);
  const [state, setState] = useState<string>("");
  const [overdueOnly, setOverdueOnly] = useState(false);
  const q = useInfiniteQuery({
    queryKey: ["requests", state, overdueOnly],
    initialPageParam: undefined as string | undefined,
    queryFn: ({ pageParam }) =>
      fb.client.listDeletionRequests({ ...(state ? { state: state as Item["state"] } : {}), ...(overdueOnly ? { overdueOnly } : {}), pageSize: 25, ...(pageParam ? { cursor: pageParam } : {}) }),
    getNextPageParam: (last) => last.nextCursor ?? undefined,
  });
  const items = q.data?.pages.flatMap((p) => p.items) ?? [];
  return (
    <section>
      <h1>Deletion requests</h1>
      <form className="filters" onSubmit={(e) => e.preventDefault()}>
        <label htmlFor="state-filter">State</label>
        <select id="state-filter" value={state} onChange={(e) => setState(e.target.value)}>
          <option value="">All states</option>
          {REQUEST_STATES.map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
        <label className="inline">
          <input type="checkbox" checked={overdueOnly} onChange={(e) => setOverdueOnly(e.target.checked)} /> Only overdue
        </label>
      </form>
      {q.isPending && <p className="loading">Loading requests…</p>}
      {q.isError && (
        <p role="alert" className="error">
          {problem(q.error)}
        </p>
      )}
      {q.isSuccess && <DataTable caption="Deletion requests, most urgent first" columns={columns} data={items} rowKey={(r) => r.requestId} testId="requests" />}
      {q.hasNextPage && (
        <button type="button" onClick={() => void q.fetchNextPage()} disabled={q.isFetchingNextPage}>
          Load more
        </button>
      )}
    </section>
  );
}
