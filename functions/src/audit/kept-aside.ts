import { letGoOfWalk } from "../kernel/held";
import { COLLECTIONS, db } from "../platform/firestore";
import { toMs } from "../platform/governed-doc";
import { standsAfterScan, type Finding, type FindingCode, type HoldRecordNow } from "./rules";

/** What a finding kept aside is about: a document, an archive copy, or a Cloud Storage object. */
export type KeptKind = "document" | "copy" | "object";

/** Hold records read in one `getAll` when the audit confirms what it kept aside. */
const CONFIRM_READS = 300;

/** Findings of one code, about one kind, naming the same holds: those kept (with their paths) and how many beyond. */
interface Group {
  code: FindingCode;
  kind: KeptKind;
  holdIds: readonly string[];
  kept: Finding[];
  beyond: number;
}

/**
 * The findings that depend on hold records (audit/rules.ts#CONFIRMED_AFTER_SCAN), kept aside while the audit scans and
 * confirmed once it is over against the records read again (audit/rules.ts#standsAfterScan). Memory is bounded: each
 * group keeps at most `perGroup` findings (the audit lists no more than that anyway), and all groups together at
 * most four times that; the rest are counted, and stand while one of their holds is ACTIVE.
 */
export class KeptAside {
  private readonly groups = new Map<string, Group>();
  private kept = 0;

  constructor(private readonly perGroup: number) {}

  offer(f: Finding & { holdIds: readonly string[] }, kind: KeptKind): void {
    const key = `${f.code}\u0000${kind}\u0000${f.holdIds.join("\u0000")}`;
    const g = this.groups.get(key) ?? { code: f.code, kind, holdIds: f.holdIds, kept: [], beyond: 0 };
    if (g.kept.length < this.perGroup && this.kept < 4 * this.perGroup) {
      g.kept.push(f);
      this.kept++;
    } else g.beyond++;
    this.groups.set(key, g);
  }

  /**
   * Hands each code's findings that still stand to `report` (how many, and those kept): one read of every hold the
   * kept findings name. `scanStartedMs`: the wall clock just before the audit read the active holds.
   */
  async confirm(scanStartedMs: number, report: (code: FindingCode, n: number, kept: readonly Finding[]) => void): Promise<void> {
    const records = await holdsNow([...new Set([...this.groups.values()].flatMap((g) => g.holdIds))]);
    for (const g of this.groups.values()) {
      const named = g.holdIds.map((id) => records.get(id) ?? null);
      const standing = g.kept.filter((f) => standsAfterScan(g.code, f.path, g.kind, named, scanStartedMs));
      const beyond = g.beyond > 0 && standsAfterScan(g.code, null, g.kind, named, scanStartedMs) ? g.beyond : 0;
      if (standing.length + beyond > 0) report(g.code, standing.length + beyond, standing);
    }
    this.groups.clear();
    this.kept = 0;
  }
}

/** The named hold records as they are now (null where there is none). */
async function holdsNow(ids: readonly string[]): Promise<Map<string, HoldRecordNow | null>> {
  const out = new Map<string, HoldRecordNow | null>();
  const col = db().collection(COLLECTIONS.retentionHolds);
  for (let i = 0; i < ids.length; i += CONFIRM_READS) {
    const snaps = await db().getAll(...ids.slice(i, i + CONFIRM_READS).map((id) => col.doc(id)), { fieldMask: ["state", "releasing", "unflagging", "placedAt"] });
    for (const s of snaps) {
      out.set(s.id, s.exists ? { state: typeof s.get("state") === "string" ? (s.get("state") as string) : null, letGo: letGoOfWalk(s.get("releasing"), s.get("unflagging")), placedAtMs: toMs(s.get("placedAt")) } : null);
    }
  }
  return out;
}
