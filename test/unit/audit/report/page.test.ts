import { describe, expect, it } from "vitest";
import type { ChainedEvidence } from "../../../../functions/src/evidence/rules";
import { TtlDelayFold } from "../../../../functions/src/audit/report/data";
import { fmtDuration, renderReport } from "../../../../functions/src/audit/report/page";
import { esc, histogram, horizontalBars } from "../../../../functions/src/audit/report/svg";
import type { ReportData } from "../../../../functions/src/audit/report/types";

const HOUR = 3_600_000;

function data(over: Partial<ReportData> = {}): ReportData {
  return {
    generatedAt: "2027-03-01T00:00:00.000Z",
    auditedAs: "2027-03-01T00:00:00.000Z",
    target: "project demo-x, database (default), via emulator 127.0.0.1:8080",
    policyVersion: "v1",
    audit: {
      ok: true,
      totalFindings: 0,
      findings: [],
      byCode: {},
      documents: 5,
      byClass: { "event-90d": { documents: 5, candidates: 2, held: 1, softDeleted: 0 } },
      heldDocuments: 1,
      activeHoldRecords: 1,
      softDeleteAge: [{ label: "<1d", count: 0 }],
      requests: { unfinished: 0, overdue: 0, dueBuckets: [{ label: "overdue", count: 0 }], mostUrgent: [] },
      deadlines: { answered: 3, withinDeadline: 2, late: 1 },
      archives: { entries: 0, unverified: 0 },
    },
    evidence: { ok: true, checked: 3, chains: 2, macs: "checked", anchors: "1 from emulator database evidence-anchors", problems: [] },
    ttlDelay: { count: 0, buckets: [], meanMs: null, maxMs: null, overSla: 0, slaMs: 72 * HOUR },
    lastStoredAudit: null,
    ...over,
  };
}

describe("report page", () => {
  it("is one self-contained document: a CSP forbidding fetches, no external references", () => {
    const html = renderReport(data());
    expect(html).toMatch(/^<!doctype html>/);
    expect(html).toContain(`content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"`);
    expect(html).not.toMatch(/<(link|img|iframe)\b/);
    expect(html).not.toMatch(/\bsrc=/);
  });

  it("counts the requests answered within their deadline, and flags a missed one", () => {
    expect(renderReport(data())).toContain('<div class="tile alarm"><div class="num" data-testid="requests-within-deadline">2 of 3</div>');
    const onTime = renderReport(data({ audit: { ...data().audit, deadlines: { answered: 2, withinDeadline: 2, late: 0 } } }));
    expect(onTime).toContain('<div class="tile"><div class="num" data-testid="requests-within-deadline">2 of 2</div>');
  });

  it("escapes whatever the data says, in markup and in the embedded JSON", () => {
    const evil = `tenants/<script>alert(1)</script>/users/"x"`;
    const html = renderReport(
      data({
        audit: { ...data().audit, ok: false, totalFindings: 1, byCode: { UNKNOWN_CLASS: 1 }, findings: [{ path: evil, code: "UNKNOWN_CLASS", detail: "</script><b>x</b>" }] },
      }),
    );
    expect(html).not.toContain("<script>alert(1)");
    expect(html).not.toContain("</script><b>");
    expect(html).toContain("tenants/&lt;script&gt;alert(1)&lt;/script&gt;");
    expect(html).toContain("\\u003c/script>\\u003cb>");
    expect(html.match(/<script/g)).toHaveLength(2);
  });

  it("shows a broken chain and its problems", () => {
    const html = renderReport(
      data({ evidence: { ok: false, checked: 9, chains: 3, macs: "unchecked", anchors: null, problems: [{ problem: "TRUNCATED", chain: "s0007", seq: 10, docId: null, detail: "gone" }] } }),
    );
    expect(html).toContain('data-testid="chain-status">Evidence ledger BROKEN');
    expect(html).toContain('<span data-testid="chain-ok">BROKEN</span>');
    expect(html).toContain("<td>TRUNCATED</td><td>s0007</td><td>10</td>");
    expect(html).toContain("not checked (no evidence key)");
    expect(html).toContain("none read");
  });

  it("charts carry their numbers as text, and bars scale to the largest value", () => {
    const svg = horizontalBars("t", [{ label: "a", value: 10, testId: "a" }, { label: "b", value: 5 }], { width: 400 });
    expect(svg).toContain('data-testid="a">10</text>');
    const widths = [...svg.matchAll(/<rect [^>]*width="([0-9.]+)"/g)].map((m) => Number(m[1]));
    expect(widths[0]).toBeCloseTo(widths[1]! * 2, 0);
    expect(histogram("h", [{ label: "x", value: 0 }])).toContain('height="0"');
    expect(esc(`<&"'>`)).toBe("&lt;&amp;&quot;&#39;&gt;");
  });

  it("formats durations for people", () => {
    expect([null, 5_000, 5 * 60_000, 10 * HOUR, 80 * HOUR].map(fmtDuration)).toEqual(["-", "5 s", "5 min", "10.0 h", "3.3 d"]);
  });
});

describe("TTL delay fold", () => {
  const entry = (action: string, detail: ChainedEvidence["detail"]): ChainedEvidence => ({
    action,
    actor: { type: "system", id: "t" },
    decision: { reason: "SWEEPER" },
    policyVersion: "v1",
    atMs: 0,
    seq: 1,
    prevHash: "",
    hash: "",
    detail,
  });

  it("buckets TTL_DELETE lags, takes the two times when the lag is absent, and ignores everything else", () => {
    const f = new TtlDelayFold();
    f.add(entry("TTL_DELETE", { deletionLagMs: 0.5 * HOUR }));
    f.add(entry("TTL_DELETE", { expireAtMs: 0, eventTimeMs: 100 * HOUR }));
    f.add(entry("TTL_DELETE", { deletionLagMs: null }));
    f.add(entry("PURGE_DELETE", { deletionLagMs: 5 * HOUR }));
    const r = f.result();
    expect(r.count).toBe(2);
    expect(r.overSla).toBe(1);
    expect(r.maxMs).toBe(100 * HOUR);
    expect(r.meanMs).toBe(Math.round((0.5 * HOUR + 100 * HOUR) / 2));
    expect(r.buckets).toEqual([
      { label: "<1h", count: 1 },
      { label: "1-6h", count: 0 },
      { label: "6-24h", count: 0 },
      { label: "24-72h", count: 0 },
      { label: ">72h", count: 1 },
    ]);
  });
});
