/**
 * The CLI's output: command results go to stdout (a table, or JSON with --json); everything else
 * (progress, notes, logs) goes to stderr, so `retention audit --json | jq` always sees clean JSON.
 */

export function writeOut(text: string): void {
  process.stdout.write(text.endsWith("\n") ? text : `${text}\n`);
}

export function writeErr(text: string): void {
  process.stderr.write(text.endsWith("\n") ? text : `${text}\n`);
}

export function writeJson(value: unknown): void {
  writeOut(JSON.stringify(value, null, 2));
}

/** A plain-text table: columns padded to their widest cell; the last column is not padded. */
export function table(headers: readonly string[], rows: readonly (readonly (string | number)[])[]): string {
  const cells = [headers, ...rows].map((r) => r.map((c) => String(c)));
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? "").length)));
  const line = (r: string[]) =>
    r
      .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join("  ")
      .trimEnd();
  const rule = widths.map((w) => "-".repeat(w)).join("  ");
  return [line(cells[0]!), rule, ...cells.slice(1).map(line)].join("\n");
}

/** Two columns, key and value: for summaries. */
export function keyValues(pairs: readonly (readonly [string, string | number | boolean | null])[]): string {
  const width = Math.max(...pairs.map(([k]) => k.length));
  return pairs.map(([k, v]) => `${k.padEnd(width)}  ${v === null ? "-" : String(v)}`).join("\n");
}

/**
 * Progress for long scans, on stderr and only when stderr is a terminal: a redrawn single line, so logs
 * and pipes never fill up with progress noise.
 */
export function progressLine(enabled: boolean = process.stderr.isTTY === true): { update: (text: string) => void; done: () => void } {
  let last = 0;
  let shown = false;
  return {
    update(text: string) {
      if (!enabled) return;
      const now = Date.now();
      if (now - last < 100) return;
      last = now;
      shown = true;
      process.stderr.write(`\r\x1b[K${text}`);
    },
    done() {
      if (enabled && shown) process.stderr.write("\r\x1b[K");
    },
  };
}
