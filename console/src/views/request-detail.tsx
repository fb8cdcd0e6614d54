import { refusalReason, type CallableOutput } from "@atlasmart/retention-client";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { Link, useParams } from "@tanstack/react-router";
import { collectionOf, countdown, erasureCompleteText, goneByText, openedBy, PathText, Problem, subjectLabel, timelineText, useNow, when, whereItStands } from "../format";
import { useRegistry } from "../registry";
import { useSession, useUserKey } from "../session";

type Plan = CallableOutput<"planDeletion">;
type ProcessorRow = NonNullable<CallableOutput<"getDeletionStatus">["processors"]>[number];

/** What a processor's state means to an officer. */
const PROCESSOR_STATUS_TEXT: Record<ProcessorRow["status"], string> = {
  pending: "not sent yet",
  held: "held back by a hold",
  sent: "sent, awaiting its confirmation",
  acknowledged: "confirmed",
  overdue: "OVERDUE: not confirmed by its deadline",
  failed: "delivery failed",
};

/** A compliance officer confirms a manual processor's deletion with the vendor's ticket or receipt id. */
function ConfirmProcessor({ row }: { row: ProcessorRow }) {
  const { fb } = useSession();
  const userKey = useUserKey();
  const qc = useQueryClient();
  const [receiptId, setReceiptId] = useState("");
  const confirm = useMutation({
    mutationFn: () => fb.client.confirmProcessorNotice({ requestId: row.requestId, processor: row.processor, receiptId: receiptId.trim() }),
    onSuccess: () => void qc.invalidateQueries({ queryKey: [...userKey, "status"] }),
  });
  const id = `receipt-${row.requestId}-${row.processor}`;
  return (
    <form
      className="confirm-processor"
      onSubmit={(e) => {
        e.preventDefault();
        if (receiptId.trim() !== "") confirm.mutate();
      }}
    >
      <label htmlFor={id}>Vendor's ticket or receipt</label> <input id={id} value={receiptId} maxLength={200} onChange={(e) => setReceiptId(e.target.value)} />{" "}
      <button type="submit" className="primary" disabled={confirm.isPending || receiptId.trim() === ""}>
        Confirm {row.processor} erased it
      </button>
      {confirm.isError && <Problem error={confirm.error} />}
    </form>
  );
}

/**
 * A compliance officer extends a request's legal deadline: once, to the law's limit, with the reason the law asks for
 * (recorded as evidence, and shown to the officers who come after).
 */
function ExtendDeadline({ requestId, limit }: { requestId: string; limit: string }) {
  const { fb } = useSession();
  const userKey = useUserKey();
  const qc = useQueryClient();
  const [reason, setReason] = useState("");
  const extend = useMutation({
    mutationFn: () => fb.client.extendRequestDeadline({ requestId, reason: reason.trim() }),
    onSuccess: () => void qc.invalidateQueries({ queryKey: [...userKey, "status"] }),
  });
  const id = `extend-${requestId}`;
  return (
    <form
      className="extend-deadline"
      onSubmit={(e) => {
        e.preventDefault();
        if (reason.trim() !== "") extend.mutate();
      }}
    >
      <label htmlFor={id}>Why it needs more time</label> <input id={id} value={reason} maxLength={500} onChange={(e) => setReason(e.target.value)} />{" "}
      <button type="submit" className="primary" disabled={extend.isPending || reason.trim() === ""}>
        Extend the deadline to {when(limit)}
      </button>
      {extend.isError && <Problem error={extend.error} />}
    </form>
  );
}

interface PlanRow {
  collection: string;
  deleted: number;
  masked: number;
  kept: number;
  reasons: Map<string, number>;
}

/** Counts per collection: what goes, what is masked, what is kept and under which legal reason. */
export function planByCollection(plan: Pick<Plan, "delete" | "retain">): PlanRow[] {
  const rows = new Map<string, PlanRow>();
  const row = (c: string) => {
    let r = rows.get(c);
    if (!r) rows.set(c, (r = { collection: c, deleted: 0, masked: 0, kept: 0, reasons: new Map() }));
    return r;
  };
  for (const p of plan.delete) row(collectionOf(p)).deleted++;
  for (const item of plan.retain) {
    const r = row(collectionOf(item.path));
    if (item.action === "mask") r.masked++;
    else r.kept++;
    r.reasons.set(item.reasonCode, (r.reasons.get(item.reasonCode) ?? 0) + 1);
  }
  return [...rows.values()].sort((a, b) => a.collection.localeCompare(b.collection));
}

export function RequestDetailView() {
  const { requestId } = useParams({ from: "/requests/$requestId" });
  const { fb } = useSession();
  const scope = useRegistry().enforced?.words.scope ?? null;
  const userKey = useUserKey();
  const nowMs = useNow();
  const status = useQuery({ queryKey: [...userKey, "status", requestId], queryFn: () => fb.client.getDeletionStatus({ requestId }) });
  const subject = status.data?.staff?.subject;
  // A user's erasure is planned by uid, a tenant's closure by tenant.
  const planInput = subject === undefined ? undefined : subject.type === "user" ? { subjectUid: subject.uid } : { tenantId: subject.tenantId };
  const plan = useQuery({ queryKey: [...userKey, "plan", planInput], enabled: planInput !== undefined, queryFn: () => fb.client.planDeletion(planInput!) });
  const s = status.data;
  return (
    <section>
      <p>
        <Link to="/requests">← All requests</Link>
      </p>
      <h1>Request {requestId}</h1>
      {status.isPending && <p className="loading">Loading…</p>}
      {status.isError && <Problem error={status.error} />}
      {s && (
        <>
          <dl className="facts" data-testid="request-facts">
            <dt>State</dt>
            <dd>
              <span className={`state state-${s.state}`}>{s.state}</span>
            </dd>
            <dt>Where it stands</dt>
            <dd data-testid="where-it-stands">{whereItStands({ state: s.state, graceEndsAt: s.graceEndsAt, blockedReason: s.staff?.blockedReason ?? null, retainedUnderHold: s.staff?.retainedUnderHold?.count ?? null }, nowMs)}</dd>
            <dt>Whose data</dt>
            <dd>{s.staff && subjectLabel(s.staff.subject, scope)}</dd>
            <dt>Opened by</dt>
            <dd data-testid="opened-by">{s.staff && openedBy(s.staff.source, s.staff.requestedBy, s.staff.people)}</dd>
            <dt>Grace period ends</dt>
            <dd>{when(s.graceEndsAt)}</dd>
            <dt>Due</dt>
            <dd>
              {when(s.dueAt)} ({countdown(s.dueAt)})
            </dd>
            {s.legalClock && (
              <>
                <dt>Legal deadline</dt>
                <dd data-testid="legal-clock">
                  {s.legalClock.name}: {when(s.legalClock.dueAt)}
                  {s.legalClock.daysLeft !== null && ` (${s.legalClock.daysLeft < 0 ? `${-s.legalClock.daysLeft} days late` : `${s.legalClock.daysLeft} days left`})`}
                  {s.legalClock.outcome === "late" && <span className="badge danger"> answered late</span>}
                  {s.legalClock.extension ? (
                    <span className="muted">
                      {" "}
                      Extended from {when(s.legalClock.originalDueAt)} by {s.legalClock.extension.by ?? "staff"}: {s.legalClock.extension.reason}
                    </span>
                  ) : (
                    // Only while the deadline runs: an answered or withdrawn request's clock has stopped.
                    s.legalClock.limit &&
                    (s.legalClock.outcome === "open" || s.legalClock.outcome === "overdue") && (
                      <>
                        <span className="muted"> Extendable once, to {when(s.legalClock.limit)} at the latest.</span>
                        <ExtendDeadline requestId={s.requestId} limit={s.legalClock.limit} />
                      </>
                    )
                  )}
                </dd>
              </>
            )}
            <dt>Fully gone by</dt>
            <dd data-testid="fully-gone-by">{goneByText(s)}</dd>
            <dt>Erasure complete</dt>
            <dd data-testid="erasure-complete">{erasureCompleteText(s)}</dd>
            {s.staff?.blockedReason && (
              <>
                <dt>Blocked because</dt>
                <dd className="danger-text">{s.staff.blockedReason}</dd>
              </>
            )}
            {s.staff?.retainedUnderHold && (
              <>
                <dt>Retained under hold</dt>
                <dd>
                  {s.staff.retainedUnderHold.count} document(s), by {s.staff.retainedUnderHold.holds.map((h) => `${h.reasonCode}${h.holdId ? ` (${h.holdId})` : ""}`).join(", ")}
                </dd>
              </>
            )}
          </dl>
          {s.cells && (
            <>
              <h2>Databases</h2>
              <div className="table-wrap">
                <table data-testid="request-cells">
                  <caption className="visually-hidden">Each governed database's part of the request</caption>
                  <thead>
                    <tr>
                      <th scope="col">Database</th>
                      <th scope="col">State</th>
                      <th scope="col">Fully gone by</th>
                      <th scope="col">Erasure complete</th>
                      <th scope="col">Under hold</th>
                    </tr>
                  </thead>
                  <tbody>
                    {s.cells.map((c) => (
                      <tr key={c.database}>
                        <th scope="row">{c.database}</th>
                        <td>{c.state === null ? "not opened yet" : c.awaitingRecord ? `${c.state} (waits for the primary's purge)` : c.state}</td>
                        <td>{c.fullyGoneBy ? when(c.fullyGoneBy) : "-"}</td>
                        <td>{c.erasureComplete ? "yes" : "no"}</td>
                        <td>{c.underHold}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            </>
          )}
          {s.processors && s.processors.length > 0 && (
            <>
              <h2>Processors</h2>
              <p className="muted">The services that hold a copy of this subject's data, and whether each has confirmed the deletion.</p>
              <div className="table-wrap">
                <table data-testid="processors">
                  <caption className="visually-hidden">Each processor's part of the erasure</caption>
                  <thead>
                    <tr>
                      <th scope="col">Processor</th>
                      <th scope="col">How</th>
                      <th scope="col">State</th>
                      <th scope="col">Deadline</th>
                      <th scope="col">Confirmed</th>
                    </tr>
                  </thead>
                  <tbody>
                    {s.processors.map((p) => (
                      <tr key={`${p.requestId}:${p.processor}`} data-testid={`processor-${p.processor}`}>
                        <th scope="row">{p.processor}</th>
                        <td>{p.kind === "manual" ? "by staff" : p.kind}</td>
                        <td className={p.status === "overdue" || p.status === "failed" ? "danger-text" : undefined}>
                          {PROCESSOR_STATUS_TEXT[p.status]}
                          {p.lastError && p.status !== "acknowledged" ? <span className="code-detail"> ({p.lastError})</span> : null}
                        </td>
                        <td>{when(p.deadline)}</td>
                        <td>
                          {p.acknowledgedAt ? (
                            <>
                              {when(p.acknowledgedAt)} <span className="code-detail">receipt {p.receiptId}</span>
                            </>
                          ) : p.kind === "manual" ? (
                            <ConfirmProcessor row={p} />
                          ) : (
                            "-"
                          )}
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            </>
          )}
          <h2>Timeline</h2>
          <ol className="timeline" data-testid="timeline">
            {s.timeline.map((t, i) => {
              const words = timelineText(t.event, t.detail);
              return (
                <li key={i}>
                  <span className="muted">{when(t.at)}</span> {t.database && <span className="code-detail">[{t.database}]</span>} <strong>{words.event}</strong> {words.detail}
                </li>
              );
            })}
          </ol>
          <h2>What is kept, and why</h2>
          {s.retained.length === 0 ? (
            <p className="empty">Nothing is retained.</p>
          ) : (
            <ul data-testid="retained">
              {s.retained.map((r) => (
                <li key={`${r.database ?? ""}:${r.path}`}>
                  <PathText path={r.path} />
                  {r.database && <span className="code-detail"> in {r.database}</span>}: {r.reason} <span className="code-detail">({r.reasonCode})</span>
                  {r.until ? ` until ${r.until}` : ""}
                </li>
              ))}
            </ul>
          )}
        </>
      )}
      <h2>Plan preview</h2>
      {plan.isPending && planInput !== undefined && <p className="loading">Planning…</p>}
      {plan.isError && (
        refusalReason(plan.error) === "SUBJECT_NOT_FOUND" ? (
          <p className="empty" role="status">
            The subject's data is gone: nothing is left to plan.
          </p>
        ) : (
          <Problem error={plan.error} role="status" />
        )
      )}
      {plan.data && (
        <>
          <div className="table-wrap">
            <table data-testid="plan">
              <caption className="visually-hidden">Plan preview per collection</caption>
              <thead>
                <tr>
                  <th scope="col">Collection</th>
                  <th scope="col">Deleted</th>
                  <th scope="col">Masked</th>
                  <th scope="col">Kept</th>
                  <th scope="col">Legal reason</th>
                </tr>
              </thead>
              <tbody>
                {planByCollection(plan.data).map((r) => (
                  <tr key={r.collection}>
                    <th scope="row">{r.collection}</th>
                    <td>{r.deleted}</td>
                    <td>{r.masked}</td>
                    <td>{r.kept}</td>
                    <td>{[...r.reasons].map(([code, n]) => `${code} (${n})`).join(", ") || "-"}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <p className="muted">
            Policy {plan.data.policyVersion}, manifest <code>{plan.data.manifestHash.slice(0, 16)}…</code>
          </p>
          {Object.entries(plan.data.databases ?? {}).map(([database, part]) => (
            <div className="table-wrap" key={database}>
              <table data-testid={`plan-${database}`}>
                <caption>Database {database}</caption>
                <thead>
                  <tr>
                    <th scope="col">Collection</th>
                    <th scope="col">Deleted</th>
                    <th scope="col">Masked</th>
                    <th scope="col">Kept</th>
                    <th scope="col">Legal reason</th>
                  </tr>
                </thead>
                <tbody>
                  {planByCollection(part).map((r) => (
                    <tr key={r.collection}>
                      <th scope="row">{r.collection}</th>
                      <td>{r.deleted}</td>
                      <td>{r.masked}</td>
                      <td>{r.kept}</td>
                      <td>{[...r.reasons].map(([code, n]) => `${code} (${n})`).join(", ") || "-"}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          ))}
        </>
      )}
    </section>
  );
}
