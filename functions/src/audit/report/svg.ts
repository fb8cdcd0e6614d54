/** Inline SVG charts, drawn on the server: no chart library, no fonts or images to fetch. */

export function esc(text: string | number): string {
  return String(text).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] ?? c);
}

export interface Bar {
  label: string;
  value: number;
  /** A CSS colour; the chart's default otherwise. */
  color?: string;
  /** data-testid on the value label, so a test can read the number a person sees. */
  testId?: string;
}

const round = (n: number) => Math.round(n * 10) / 10;

/** Horizontal bars: one row per category, label on the left, value at the bar's end. */
export function horizontalBars(title: string, bars: readonly Bar[], opts: { width?: number; color?: string } = {}): string {
  const width = opts.width ?? 640;
  const rowH = 26;
  // Labels are mostly class ids and SCREAMING codes: about 8 px per character at 12 px.
  const labelW = Math.min(260, Math.max(80, ...bars.map((b) => b.label.length * 8 + 12)));
  const valueW = 60;
  const plotW = width - labelW - valueW;
  const max = Math.max(1, ...bars.map((b) => b.value));
  const height = Math.max(1, bars.length) * rowH + 8;
  const rows = bars.map((b, i) => {
    const y = 4 + i * rowH;
    const w = round((b.value / max) * plotW);
    const fill = b.color ?? opts.color ?? "#3b6ea8";
    const tid = b.testId ? ` data-testid="${esc(b.testId)}"` : "";
    return (
      `<text x="${labelW - 8}" y="${y + 17}" text-anchor="end" class="lbl">${esc(b.label)}</text>` +
      `<rect x="${labelW}" y="${y + 4}" width="${Math.max(w, b.value > 0 ? 2 : 0)}" height="${rowH - 8}" rx="3" fill="${fill}"/>` +
      `<text x="${labelW + w + 6}" y="${y + 17}" class="val"${tid}>${esc(b.value)}</text>`
    );
  });
  const empty = bars.length === 0 ? `<text x="${width / 2}" y="20" text-anchor="middle" class="lbl">no data</text>` : "";
  return svg(title, width, height, rows.join("") + empty);
}

/** Vertical columns over ordered buckets (a histogram): buckets left to right, counts on top. */
export function histogram(title: string, bars: readonly Bar[], opts: { width?: number; height?: number; markerAfter?: number; markerLabel?: string } = {}): string {
  const width = opts.width ?? 520;
  const height = opts.height ?? 200;
  const top = 22;
  const bottom = 28;
  const plotH = height - top - bottom;
  const colW = (width - 20) / Math.max(1, bars.length);
  const max = Math.max(1, ...bars.map((b) => b.value));
  const cols = bars.map((b, i) => {
    const x = 10 + i * colW;
    const h = round((b.value / max) * plotH);
    const y = top + plotH - h;
    const tid = b.testId ? ` data-testid="${esc(b.testId)}"` : "";
    return (
      `<rect x="${round(x + 6)}" y="${round(y)}" width="${round(colW - 12)}" height="${Math.max(h, b.value > 0 ? 2 : 0)}" rx="3" fill="${b.color ?? "#3b6ea8"}"/>` +
      `<text x="${round(x + colW / 2)}" y="${round(y - 6)}" text-anchor="middle" class="val"${tid}>${esc(b.value)}</text>` +
      `<text x="${round(x + colW / 2)}" y="${height - 9}" text-anchor="middle" class="lbl">${esc(b.label)}</text>`
    );
  });
  let marker = "";
  if (opts.markerAfter !== undefined && opts.markerAfter >= 0 && opts.markerAfter < bars.length) {
    const x = round(10 + (opts.markerAfter + 1) * colW);
    marker =
      `<line x1="${x}" y1="${top - 14}" x2="${x}" y2="${top + plotH}" stroke="#b3261e" stroke-dasharray="4 3"/>` +
      `<text x="${x + 4}" y="${top - 6}" class="lbl warn">${esc(opts.markerLabel ?? "")}</text>`;
  }
  const axis = `<line x1="10" y1="${top + plotH}" x2="${width - 10}" y2="${top + plotH}" stroke="#999"/>`;
  return svg(title, width, height, cols.join("") + axis + marker);
}

export interface Span {
  label: string;
  startMs: number;
  endMs: number;
  overdue: boolean;
}

/**
 * Requests against their due date: one row per request, a bar from the request to its due date and a line at
 * "now". A bar that ends left of the line is overdue and drawn red.
 */
export function dueTimeline(title: string, spans: readonly Span[], nowMs: number, opts: { width?: number } = {}): string {
  const width = opts.width ?? 640;
  const rowH = 22;
  const labelW = 200;
  const plotW = width - labelW - 20;
  const height = Math.max(1, spans.length) * rowH + 30;
  if (spans.length === 0) return svg(title, width, 40, `<text x="${width / 2}" y="24" text-anchor="middle" class="lbl">no open requests</text>`);
  const min = Math.min(nowMs, ...spans.map((s) => s.startMs));
  const max = Math.max(nowMs, ...spans.map((s) => s.endMs));
  const span = Math.max(1, max - min);
  const xOf = (ms: number) => round(labelW + ((ms - min) / span) * plotW);
  const rows = spans.map((s, i) => {
    const y = 8 + i * rowH;
    const x1 = xOf(s.startMs);
    const x2 = xOf(s.endMs);
    return (
      `<text x="${labelW - 8}" y="${y + 14}" text-anchor="end" class="lbl">${esc(s.label)}</text>` +
      `<rect x="${x1}" y="${y + 3}" width="${Math.max(2, round(x2 - x1))}" height="${rowH - 8}" rx="3" fill="${s.overdue ? "#b3261e" : "#3b6ea8"}"/>`
    );
  });
  const nx = xOf(nowMs);
  const now = `<line x1="${nx}" y1="2" x2="${nx}" y2="${height - 18}" stroke="#222" stroke-dasharray="3 3"/><text x="${nx}" y="${height - 5}" text-anchor="middle" class="lbl">now</text>`;
  return svg(title, width, height, rows.join("") + now);
}

function svg(title: string, width: number, height: number, body: string): string {
  return `<svg class="chart" role="img" aria-label="${esc(title)}" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" xmlns="http://www.w3.org/2000/svg"><title>${esc(title)}</title>${body}</svg>`;
}
