import { isDocumentPath, matchPattern } from "../kernel/paths";
import { isObjectPath } from "../kernel/storage-map";
import type { PolicyIndex } from "../kernel/policy";

export type HoldTargetVerdict =
  | { ok: true; targetType: "document" | "subtree"; retentionClass: string | null }
  | { ok: false; reason: "INVALID_TARGET_PATH" | "NOT_GOVERNED_PATH" | "HOLD_NOT_ALLOWED_FOR_CLASS"; message: string };

/**
 * What `placeRetentionHold` will say about a target path before it looks at the database, so a form can
 * check the path before it is submitted: a subtree root the registry names (the scope's record, such as a
 * tenant, and its `subtreeHoldRoots`) is held as a subtree; any other
 * document must be governed (or an archive copy) and of a class that allows holds. Whether the document
 * exists is the server's to say (TARGET_NOT_FOUND). A unit test keeps this equal to the server's checks
 * (holds/rules.ts: classifyHoldTarget, holdClassForPath, assertHoldableClass).
 */
export function holdTargetVerdict(policy: PolicyIndex, path: string): HoldTargetVerdict {
  if (isObjectPath(path)) {
    return { ok: false, reason: "INVALID_TARGET_PATH", message: "A Cloud Storage object is held through the document the data map holds it with (its heldWith): hold that document." };
  }
  if (!isDocumentPath(path)) return { ok: false, reason: "INVALID_TARGET_PATH", message: "A document path: collection/id pairs." };
  if (policy.subtreeHoldRoots().some((p) => matchPattern(p, path) !== null)) return { ok: true, targetType: "subtree", retentionClass: policy.classForPath(path)?.id ?? null };
  const s = path.split("/");
  const cls = policy.classForPath(path) ?? (s.length === 2 && s[0] === "archives" ? policy.controlPlaneClass("archives") : undefined);
  if (!cls) return { ok: false, reason: "NOT_GOVERNED_PATH", message: "No retention class governs this collection." };
  if (cls.holdBehaviour !== "allow") return { ok: false, reason: "HOLD_NOT_ALLOWED_FOR_CLASS", message: `Class ${cls.id} does not allow holds.` };
  return { ok: true, targetType: "document", retentionClass: cls.id };
}
