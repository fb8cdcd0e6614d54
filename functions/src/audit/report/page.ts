import { dueTimeline, esc, histogram, horizontalBars } from "./svg";
import type { ReportData } from "./types";

/**
 * The dashboard: one self-contained HTML page (inline CSS, JS and SVG). The Content-Security-Policy forbids
 * every fetch, so the page works from a file, an email attachment or an air-gapped laptop, and cannot leak
 * what it shows. Charts where a person would rather look than read; tables for what they must act on.
 */
export function renderReport(d: ReportData): string {
  const a = d.audit;
  const candidates = Object.values(a.byClass).reduce((n, c) => n + c.candidates, 0);
  const softDeleted = Object.values(a.byClass).reduce((n, c) => n + c.softDeleted, 0);
  const classes = Object.entries(a.byClass).sort(([x], [y]) => (x < y ? -1 : 1));
  const codes = Object.entries(a.byCode).filter(([, n]) => n > 0);
  const nowMs = Date.parse(d.auditedAs);

  const body = [
    `<header><h1>Retention dashboard</h1><p class="meta">${esc(d.target)} · policy ${esc(d.policyVersion)} · audited as ${esc(d.auditedAs)} · generated ${esc(d.generatedAt)}</p>`,
    `<div class="badges">${badge(a.ok, a.ok ? "Audit: no findings" : `Audit: ${a.totalFindings} finding(s)`, "audit-status")}${badge(d.evidence.ok, d.evidence.ok ? "Evidence ledger verifies" : "Evidence ledger BROKEN", "chain-status")}</div></header>`,
    `<section class="tiles">`,
    tile("Documents scanned", a.documents, "documents"),
    tile("Deletion candidates", candidates, "candidates-total"),
    tile("Held documents", a.heldDocuments, "hold-count"),
    tile("Active hold records", a.activeHoldRecords, "hold-records"),
    tile("Soft-deleted", softDeleted, "soft-deleted"),
    tile("Open deletion requests", a.requests.unfinished, "requests-open"),
    tile("Requests past due", a.requests.overdue, "requests-overdue", a.requests.overdue > 0),
    tile("Answered within deadline", `${a.deadlines.withinDeadline} of ${a.deadlines.answered}`, "requests-within-deadline", a.deadlines.late > 0),
    tile("Audit findings", a.totalFindings, "findings-total", a.totalFindings > 0),
    `</section>`,

    section(
      "Deletion candidates by class",
      "Unheld data that the purge or TTL will remove: PURGE_ELIGIBLE, SOFT_DELETED, or past its retention.",
      horizontalBars(
        "Deletion candidates by class",
        classes.map(([cls, c]) => ({ label: cls, value: c.candidates, testId: `candidates-${cls}` })),
      ) +
        table(
          ["Class", "Documents", "Candidates", "Held", "Soft-deleted"],
          classes.map(([cls, c]) => [cls, c.documents, c.candidates, c.held, c.softDeleted]),
        ),
    ),

    section(
      "Soft-delete age",
      "How long soft-deleted documents have waited for their purge. Mass in the right-hand buckets means the purge is not keeping up.",
      histogram(
        "Soft-delete age histogram",
        a.softDeleteAge.map((b) => ({ label: b.label, value: b.count, testId: `soft-delete-age-${b.label}`, color: "#6b4fa8" })),
      ),
    ),

    section(
      "Expiration-to-deletion delay (TTL cleanup lag)",
      `Event time minus expireAt for each TTL_DELETE in the evidence. This is storage cleanup, not visibility: expired data is invisible at once. SLA ${Math.round(d.ttlDelay.slaMs / 3_600_000)} h.`,
      d.ttlDelay.count === 0
        ? `<p class="empty" data-testid="ttl-delay-count">0</p><p class="empty">No TTL_DELETE evidence yet.</p>`
        : histogram(
            "Expiration-to-deletion delay",
            d.ttlDelay.buckets.map((b, i) => ({ label: b.label, value: b.count, testId: `ttl-delay-${b.label}`, color: i >= 4 ? "#b3261e" : "#2f7d4f" })),
            { markerAfter: 3, markerLabel: "SLA" },
          ) +
            kv([
              ["TTL deletes", `<span data-testid="ttl-delay-count">${d.ttlDelay.count}</span>`],
              ["mean delay", fmtDuration(d.ttlDelay.meanMs)],
              ["max delay", fmtDuration(d.ttlDelay.maxMs)],
              ["over SLA", `<span data-testid="ttl-delay-over-sla">${d.ttlDelay.overSla}</span>`],
            ]),
    ),

    section(
      "Deletion requests against their due date",
      "Unfinished requests (PENDING, PROCESSING, BLOCKED). Each bar runs from the request to its due date; red bars are past due.",
      histogram(
        "Requests by time left until due",
        a.requests.dueBuckets.map((b) => ({ label: b.label, value: b.count, testId: `requests-due-${b.label}`, color: b.label === "overdue" ? "#b3261e" : "#3b6ea8" })),
      ) +
        dueTimeline(
          "Most urgent requests",
          a.requests.mostUrgent
            .filter((r) => r.requestedAt !== null)
            .map((r) => ({ label: r.path.split("/").pop() ?? r.path, startMs: Date.parse(r.requestedAt!), endMs: Date.parse(r.dueAt), overdue: Date.parse(r.dueAt) < nowMs })),
          nowMs,
        ) +
        table(
          ["Request", "State", "Requested", "Due"],
          a.requests.mostUrgent.map((r) => [r.path, r.state, r.requestedAt ?? "-", r.dueAt]),
        ),
    ),

    section(
      "Latest audit findings",
      a.ok ? "The audit found nothing." : `${a.totalFindings} finding(s)${a.findings.length < a.totalFindings ? `; ${a.findings.length} are listed: the first of each code, then the rest by path` : ""}.`,
      (codes.length > 0
        ? horizontalBars(
            "Findings by code",
            codes.map(([code, n]) => ({ label: code, value: n, testId: `findings-${code}`, color: "#b3261e" })),
          )
        : "") +
        (a.findings.length > 0
          ? `<p><label>Filter <input id="finding-filter" type="search" placeholder="code or path"></label> <span id="finding-shown"></span></p>` +
            table(
              ["Code", "Path", "Detail"],
              a.findings.map((f) => [f.code, f.path, f.detail]),
              "findings-table",
            )
          : "") +
        (d.lastStoredAudit
          ? `<p class="meta">Last stored audit report: ${esc(d.lastStoredAudit.id)} (${esc(d.lastStoredAudit.createdAt ?? "-")}), ${d.lastStoredAudit.ok ? "no findings" : `${d.lastStoredAudit.totalFindings} finding(s)`}.</p>`
          : `<p class="meta">No stored audit report yet (the scheduled audit writes one per run).</p>`),
    ),

    section(
      "Evidence ledger",
      "deletionAudits verified entry by entry against its chains, their heads, their MACs and the anchors.",
      kv([
        ["status", `<span data-testid="chain-ok">${d.evidence.ok ? "verifies" : "BROKEN"}</span>`],
        ["entries checked", `<span data-testid="chain-checked">${d.evidence.checked}</span>`],
        ["chains", `<span data-testid="chain-count">${d.evidence.chains}</span>`],
        ["MACs", esc(d.evidence.macs === "checked" ? "checked with the evidence key" : "not checked (no evidence key)")],
        ["anchors", esc(d.evidence.anchors ?? "none read")],
      ]) +
        (d.evidence.problems.length > 0
          ? table(
              ["Problem", "Chain", "Seq", "Doc id", "Detail"],
              d.evidence.problems.map((p) => [p.problem, p.chain, p.seq, p.docId ?? "-", p.detail]),
              "chain-problems",
            )
          : ""),
    ),
  ].join("\n");

  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Retention dashboard · ${esc(d.policyVersion)} · ${esc(d.auditedAs)}</title>
<style>${CSS}</style></head>
<body>
${body}
<script type="application/json" id="report-data">${jsonForScript(d)}</script>
<script>${SCRIPT}</script>
</body></html>
`;
}

function badge(ok: boolean, text: string, testId: string): string {
  return `<span class="badge ${ok ? "ok" : "bad"}" data-testid="${testId}">${esc(text)}</span>`;
}

function tile(label: string, value: number | string, testId: string, alarm = false): string {
  return `<div class="tile${alarm ? " alarm" : ""}"><div class="num" data-testid="${testId}">${esc(String(value))}</div><div class="lbl">${esc(label)}</div></div>`;
}

function section(title: string, intro: string, content: string): string {
  return `<section><h2>${esc(title)}</h2><p class="intro">${esc(intro)}</p>${content}</section>`;
}

function table(headers: string[], rows: (string | number)[][], id?: string): string {
  const head = headers.map((h) => `<th>${esc(h)}</th>`).join("");
  const body = rows.map((r) => `<tr>${r.map((c) => `<td>${esc(c)}</td>`).join("")}</tr>`).join("");
  return `<table${id ? ` id="${id}"` : ""}><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table>`;
}

/** Key/value rows whose values are trusted markup built here (numbers in spans). */
function kv(rows: [string, string][]): string {
  return `<dl class="kv">${rows.map(([k, v]) => `<dt>${esc(k)}</dt><dd>${v}</dd>`).join("")}</dl>`;
}

export function fmtDuration(ms: number | null): string {
  if (ms === null) return "-";
  if (ms < 60_000) return `${Math.round(ms / 1000)} s`;
  if (ms < 3_600_000) return `${Math.round(ms / 60_000)} min`;
  if (ms < 172_800_000) return `${(ms / 3_600_000).toFixed(1)} h`;
  return `${(ms / 86_400_000).toFixed(1)} d`;
}

/** JSON inside a script element: `<` escaped so no string in the data can close the element. */
function jsonForScript(value: unknown): string {
  return JSON.stringify(value).replace(/</g, "\\u003c").replace(/\u2028/g, "\\u2028").replace(/\u2029/g, "\\u2029");
}

const CSS = `
:root{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d1d1f;background:#f6f7f9}
body{max-width:1040px;margin:0 auto;padding:24px}
h1{margin:0 0 4px;font-size:26px}h2{font-size:18px;margin:0 0 4px}
.meta{color:#555;font-size:13px;margin:4px 0}
.intro{color:#555;font-size:13px;margin:0 0 12px}
.badges{margin:10px 0}.badge{display:inline-block;padding:4px 10px;border-radius:12px;font-weight:600;font-size:13px;margin-right:8px}
.badge.ok{background:#dff3e4;color:#1e6b37}.badge.bad{background:#fbe0de;color:#9c1c14}
.tiles{display:grid;grid-template-columns:repeat(auto-fill,minmax(180px,1fr));gap:10px;margin:16px 0}
.tile{background:#fff;border-radius:8px;padding:12px 14px;box-shadow:0 1px 2px rgba(0,0,0,.08)}
.tile .num{font-size:28px;font-weight:700}.tile .lbl{font-size:12px;color:#555}
.tile.alarm .num{color:#b3261e}
section{background:#fff;border-radius:8px;padding:16px 18px;margin:14px 0;box-shadow:0 1px 2px rgba(0,0,0,.08)}
svg.chart{max-width:100%;height:auto;display:block;margin:6px 0 10px}
svg .lbl{font-size:12px;fill:#444}svg .val{font-size:12px;font-weight:600;fill:#1d1d1f}svg .warn{fill:#b3261e}
table{border-collapse:collapse;width:100%;font-size:13px;margin:8px 0}
th,td{text-align:left;padding:5px 8px;border-bottom:1px solid #e4e6ea;vertical-align:top}
td{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px;word-break:break-all}
th{background:#f0f2f5}
dl.kv{display:grid;grid-template-columns:max-content auto;gap:4px 16px;font-size:14px}dl.kv dt{color:#555}dl.kv dd{margin:0;font-weight:600}
.empty{color:#555}
input[type=search]{padding:4px 8px;border:1px solid #ccc;border-radius:6px;min-width:240px}
`;

/** Filters the findings table as the operator types; no other behaviour, so nothing can fail silently. */
const SCRIPT = `
(function () {
  "use strict";
  var input = document.getElementById("finding-filter");
  var table = document.getElementById("findings-table");
  var shown = document.getElementById("finding-shown");
  if (!input || !table || !shown) return;
  var rows = Array.prototype.slice.call(table.tBodies[0].rows);
  function apply() {
    var q = input.value.trim().toLowerCase();
    var n = 0;
    rows.forEach(function (row) {
      var hit = q === "" || row.textContent.toLowerCase().indexOf(q) !== -1;
      row.hidden = !hit;
      if (hit) n++;
    });
    shown.textContent = n + " of " + rows.length + " shown";
  }
  input.addEventListener("input", apply);
  apply();
})();
`;
