import { useQuery } from "@tanstack/react-query";
import { dueTimeline, histogram, horizontalBars } from "../../../functions/src/audit/report/svg";
import { PathText, Problem, when } from "../format";
import { useSession, useUserKey } from "../session";

/** An SVG chart drawn by the report's own chart functions (functions/src/audit/report/svg.ts): escaped, no scripts. */
function Chart({ svg, testId }: { svg: string; testId: string }) {
  return <div className="chart" data-testid={testId} dangerouslySetInnerHTML={{ __html: svg }} />;
}

function Tile({ label, value, testId, alert = false }: { label: string; value: number; testId: string; alert?: boolean }) {
  return (
    <div className={alert ? "tile alert" : "tile"}>
      <span className="tile-value" data-testid={testId}>
        {value}
      </span>
      <span className="tile-label">{label}</span>
    </div>
  );
}

/** The report's charts, live: the same audit and evidence walk as `retention report`, fetched on demand. */
export function DashboardView() {
  const { fb } = useSession();
  const userKey = useUserKey();
  const q = useQuery({ queryKey: [...userKey, "report"], queryFn: () => fb.client.getRetentionReport({ skipSubjects: true }), staleTime: 60_000 });
  const d = q.data;
  return (
    <section>
      <h1>Dashboard</h1>
      <button type="button" onClick={() => void q.refetch()} disabled={q.isFetching}>
        {q.isFetching ? "Auditing…" : "Refresh"}
      </button>
      {q.isError && <Problem error={q.error} />}
      {d && (() => {
        const classes = Object.entries(d.audit.byClass).sort(([a], [b]) => a.localeCompare(b));
        const candidates = classes.reduce((n, [, c]) => n + c.candidates, 0);
        const nowMs = Date.parse(d.auditedAs);
        return (
          <>
            <p className="muted">
              Policy {d.policyVersion}, audited {when(d.auditedAs)}.{" "}
              <span className={d.audit.ok ? "badge ok-badge" : "badge warn"}>{d.audit.ok ? "Audit: no findings" : `Audit: ${d.audit.totalFindings} finding(s)`}</span>{" "}
              <span className={d.evidence.ok ? "badge ok-badge" : "badge danger"} data-testid="dashboard-chain">
                {d.evidence.ok ? "Evidence ledger verifies" : "Evidence ledger BROKEN"}
              </span>
            </p>
            <div className="tiles">
              <Tile label="Documents scanned" value={d.audit.documents} testId="tile-documents" />
              <Tile label="Deletion candidates" value={candidates} testId="tile-candidates" />
              <Tile label="Held documents" value={d.audit.heldDocuments} testId="tile-held" />
              <Tile label="Active hold records" value={d.audit.activeHoldRecords} testId="tile-holds" />
              <Tile label="Open deletion requests" value={d.audit.requests.unfinished} testId="tile-requests" />
              <Tile label="Requests past due" value={d.audit.requests.overdue} testId="tile-overdue" alert={d.audit.requests.overdue > 0} />
            </div>
            <h2>Deletion candidates by class</h2>
            <Chart testId="chart-candidates" svg={horizontalBars("Deletion candidates by class", classes.map(([cls, c]) => ({ label: cls, value: c.candidates })))} />
            <h2>Soft-delete age</h2>
            <Chart testId="chart-soft-delete" svg={histogram("Soft-delete age histogram", d.audit.softDeleteAge.map((b) => ({ label: b.label, value: b.count, color: "#5a3f96" })))} />
            <h2>Expiration-to-deletion delay (TTL)</h2>
            {d.ttlDelay.count === 0 ? (
              <p className="empty">No TTL deletes in the evidence yet.</p>
            ) : (
              <Chart testId="chart-ttl" svg={histogram("Expiration-to-deletion delay", d.ttlDelay.buckets.map((b, i) => ({ label: b.label, value: b.count, color: i >= 4 ? "#a3231b" : "#276b43" })), { markerAfter: 3, markerLabel: "SLA" })} />
            )}
            <h2>Requests against their due date</h2>
            <Chart testId="chart-due" svg={histogram("Requests by time left until due", d.audit.requests.dueBuckets.map((b) => ({ label: b.label, value: b.count, color: b.label === "overdue" ? "#a3231b" : "#2f5f94" })))} />
            <Chart
              testId="chart-urgent"
              svg={dueTimeline(
                "Most urgent requests",
                d.audit.requests.mostUrgent.map((r) => ({ label: r.path.split("/").pop() ?? r.path, startMs: r.requestedAt ? Date.parse(r.requestedAt) : Date.parse(r.dueAt), endMs: Date.parse(r.dueAt), overdue: Date.parse(r.dueAt) < nowMs })),
                nowMs,
              )}
            />
            <h2>Findings</h2>
            {d.audit.findings.length === 0 ? (
              <p className="empty">No findings.</p>
            ) : (
              <div className="table-wrap">
                <table>
                  <caption className="visually-hidden">Audit findings</caption>
                  <thead>
                    <tr>
                      <th scope="col">Code</th>
                      <th scope="col">Path</th>
                      <th scope="col">Detail</th>
                    </tr>
                  </thead>
                  <tbody>
                    {d.audit.findings.slice(0, 50).map((f, i) => (
                      <tr key={i}>
                        <td>{f.code}</td>
                        <td>
                          <PathText path={f.path} />
                        </td>
                        <td>{f.detail}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
          </>
        );
      })()}
    </section>
  );
}
