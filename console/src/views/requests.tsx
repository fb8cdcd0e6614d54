import { REQUEST_STATES, type CallableOutput } from "@atlasmart/retention-client";
import { useInfiniteQuery } from "@tanstack/react-query";
import { Link } from "@tanstack/react-router";
import type { ColumnDef } from "@tanstack/react-table";
import { useState } from "react";
import { countdown, openedBy, Problem, subjectLabel, useNow, when, whereItStands } from "../format";
import { useRegistry } from "../registry";
import { useSession, useUserKey } from "../session";
import { DataTable } from "../table";

type Page = CallableOutput<"listDeletionRequests">;
type Item = Page["items"][number];

const columnsAt = (nowMs: number, people: Page["people"], scope: string | null): ColumnDef<Item, unknown>[] => [
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
  { header: "Whose data", id: "subject", accessorFn: (r) => subjectLabel(r.subject, scope) },
  { header: "Opened by", id: "openedBy", accessorFn: (r) => openedBy(r.source, r.requestedBy, people) },
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
    // The legal clock's days left (negative once past), while erasure is owed: sortable, fewest first.
    header: "Days left",
    id: "daysLeft",
    accessorFn: (r) => r.daysLeft ?? Number.POSITIVE_INFINITY,
    cell: (c) => {
      const r = c.row.original;
      if (r.daysLeft === null) return <span className="muted">-</span>;
      return (
        <span data-testid={`days-left-${r.requestId}`}>
          <span className={r.daysLeft < 0 ? "badge danger" : r.daysLeft < 7 ? "badge warn" : undefined}>{r.daysLeft < 0 ? `${-r.daysLeft} days late` : `${r.daysLeft} days`}</span>
          {r.law && <span className="muted"> {r.law.toUpperCase()}</span>}
          {r.extended && <span className="badge"> extended</span>}
        </span>
      );
    },
  },
  {
    header: "Where it stands",
    id: "why",
    cell: (c) => {
      const r = c.row.original;
      const text = whereItStands(r, nowMs);
      return <span className={r.state === "BLOCKED" ? "badge warn" : r.state === "RETAINED_UNDER_HOLD" ? "badge" : undefined}>{text}</span>;
    },
  },
];

/** Deletion requests by state, the due date counting down, overdue ones flagged; paged. */
export function RequestsView() {
  const { fb } = useSession();
  const userKey = useUserKey();
  const nowMs = useNow();
  const [state, setState] = useState<string>("");
  const [overdueOnly, setOverdueOnly] = useState(false);
  const q = useInfiniteQuery({
    queryKey: [...userKey, "requests", state, overdueOnly],
    initialPageParam: undefined as string | undefined,
    queryFn: ({ pageParam }) =>
      fb.client.listDeletionRequests({ ...(state ? { state: state as Item["state"] } : {}), ...(overdueOnly ? { overdueOnly } : {}), pageSize: 25, ...(pageParam ? { cursor: pageParam } : {}) }),
    getNextPageParam: (last) => last.nextCursor ?? undefined,
  });
  // A tenant's closure awaiting its second approval has no due date yet, so the most-urgent-first list leaves it
  // out: with no filter, those closures are listed first, from their own state's list.
  const everything = state === "" && !overdueOnly;
  const awaiting = useInfiniteQuery({
    queryKey: [...userKey, "requests", "AWAITING_APPROVAL", false],
    enabled: everything,
    initialPageParam: undefined as string | undefined,
    queryFn: ({ pageParam }) => fb.client.listDeletionRequests({ state: "AWAITING_APPROVAL", pageSize: 25, ...(pageParam ? { cursor: pageParam } : {}) }),
    getNextPageParam: (last) => last.nextCursor ?? undefined,
  });
  const pages = [...(everything ? (awaiting.data?.pages ?? []) : []), ...(q.data?.pages ?? [])];
  const items = pages.flatMap((p) => p.items);
  const people = Object.assign({}, ...pages.map((p) => p.people)) as Page["people"];
  const { enforced } = useRegistry();
  const scope = enforced?.words.scope ?? null;
  const columns = columnsAt(nowMs, people, scope);
  return (
    <section>
      <h1>Deletion requests</h1>
      <p className="muted legend">Each request erases {enforced?.words.requestsWhose ?? "one person's data"}. It waits out a grace period in which it can be cancelled, then the nightly run erases what no law or hold keeps. Filters apply as you change them.</p>
      <form className="filters" aria-label="Filter requests" onSubmit={(e) => e.preventDefault()}>
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
      {(q.isPending || (everything && awaiting.isPending)) && <p className="loading">Loading requests…</p>}
      {q.isError && <Problem error={q.error} />}
      {everything && awaiting.isError && <Problem error={awaiting.error} />}
      {q.isSuccess && (!everything || awaiting.isSuccess) && <DataTable caption={everything ? "Closures awaiting approval, then deletion requests, most urgent first" : "Deletion requests, most urgent first"} columns={columns} data={items} rowKey={(r) => r.requestId} testId="requests" />}
      {everything && awaiting.hasNextPage && (
        <button type="button" onClick={() => void awaiting.fetchNextPage()} disabled={awaiting.isFetchingNextPage}>
          More closures awaiting approval
        </button>
      )}
      {q.hasNextPage && (
        <button type="button" onClick={() => void q.fetchNextPage()} disabled={q.isFetchingNextPage}>
          Load more
        </button>
      )}
    </section>
  );
}
