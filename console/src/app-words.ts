import type { PolicyIndex } from "../../functions/src/kernel/policy";

/**
 * The app's own words and paths, from the registry the functions enforce: the console has none of its own, so one
 * build serves any app. Pure, for a unit test.
 */
export interface AppWords {
  /** The scope kind's name ("tenant", "workspace"), or null for an app whose users belong to no scope. */
  scope: string | null;
  /** The hold form's label for its path field. */
  holdPathLabel: string;
  /** What a hold keeps, in the form's legend. */
  holdLegend: string;
  /** A document a hold could target, as its pattern (`tenants/{tenantId}/orders/{orderId}`): the form's placeholder. */
  documentExample: string;
  /** The form's hint under an empty path field: a document's path, and each subtree root's. */
  holdPathHint: string;
  /** The evidence view's hint for a path. */
  evidencePathHint: string;
  /** "one person's data (or a whole tenant's)", for the requests view's legend. */
  requestsWhose: string;
}

export function appWords(policy: PolicyIndex): AppWords {
  const scope = policy.registry.subjects?.scope?.name ?? null;
  const roots = policy.subtreeHoldRoots();
  const holdable = policy.registry.collections.filter((r) => policy.classById(r.retentionClass)?.holdBehaviour === "allow").map((r) => r.pattern);
  // A nested document reads best as an example (it shows the pairs); else any holdable one.
  const documentExample = holdable.filter((p) => !roots.includes(p)).sort((a, b) => b.split("/").length - a.split("/").length)[0] ?? holdable[0] ?? "collection/{id}";
  const rootText = roots.length === 0 ? "" : `, or ${roots.map((r) => (r === policy.registry.subjects?.scope?.record ? `a ${scope ?? "scope"}: ${r}` : r)).join(", or ")}, which holds everything under it`;
  return {
    scope,
    holdPathLabel: scope ? `Document or ${scope} path` : "Document path",
    holdLegend: roots.length === 0 ? "A hold keeps a document" : `A hold keeps a document (or everything under ${scope ? `a whole ${scope}` : roots.join(" or ")})`,
    documentExample,
    holdPathHint: `A document's path: collection and id pairs, e.g. ${documentExample}${rootText}.`,
    evidencePathHint: `a document's path: collection and id pairs, such as ${documentExample}`,
    requestsWhose: scope ? `one person's data (or a whole ${scope}'s)` : "one person's data",
  };
}
