import { hashCanonical } from "../kernel/canonical";
import { sortedUnique } from "../kernel/paths";
import { isObjectPath } from "../kernel/storage-map";
import { planSubject } from "../plan/index";
import type { DeletionPlan, Subject } from "../plan/rules";
import { subjectView, type SubjectView } from "./rules/subject-view";
import { resolveTenantSubject, resolveUserSubject, resolveUserSubjects } from "./subjects";

/** A subject as a caller names it in the general form (contract/subjects.ts#SubjectInput). */
export type SubjectRef = { type: "user"; uid: string; scope?: string } | { type: "scope"; id: string };

/** One scope's part of a user's plan in several scopes. */
export interface ScopePart {
  scope: string;
  lead: boolean;
  manifestHash: string;
  delete: number;
  retain: number;
}

/** A plan for a subject named in the general form: one manifest, or for a user in several scopes their union. */
export interface SubjectPlan {
  subject: SubjectView;
  /** The subjects planned: one, or each member of the request group the user's erasure would open, lead first. */
  subjects: Subject[];
  plan: Omit<DeletionPlan, "subject">;
  /** A user in several scopes: each scope's own manifest, the lead's first. */
  scopes?: ScopePart[];
}

/** The subjects a reference names: a scope; a user in a named scope; a user in every scope the registry finds. */
export async function subjectsOf(ref: SubjectRef): Promise<Subject[]> {
  if (ref.type === "scope") return [await resolveTenantSubject(ref.id)];
  return ref.scope !== undefined ? [await resolveUserSubject(ref.uid, ref.scope)] : resolveUserSubjects(ref.uid);
}

/**
 * Plans a subject named in the general form, read-only. A user the registry finds in several scopes is planned in
 * each, as the request group their erasure would open (the lead alone erases the data that names the uid alone):
 * the lists are the union of the members' manifests, `scopes` gives each one's hash and counts, and the hash is
 * over the members' hashes in order, so it is as deterministic as one manifest's. Plans the database `db()` names.
 */
export async function planSubjectRef(ref: SubjectRef, nowMs: number, resolved?: readonly Subject[]): Promise<SubjectPlan> {
  // `resolved`: the subjects already found (in the primary, where the registry's lookups read), when each governed
  // database plans its part of the same subjects (docs/decisions/0036-several-databases.md).
  const subjects = resolved ? [...resolved] : await subjectsOf(ref);
  const plans = await Promise.all(subjects.map((s) => planSubject(s, nowMs)));
  if (plans.length === 1) {
    const { subject, ...plan } = plans[0]!;
    return { subject: subjectView(subject), subjects, plan };
  }
  const scopes = plans.map((p, i) => ({ scope: subjects[i]!.tenantId, lead: i === 0, manifestHash: p.manifestHash, delete: p.delete.length, retain: p.retain.length }));
  const byPath = <T extends { path: string }>(xs: T[]) => xs.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  // As in one manifest: documents first, then Cloud Storage objects (gs://bucket/name), each sorted.
  const docsThenObjects = <T extends { path: string }>(xs: T[]) => [...byPath(xs.filter((x) => !isObjectPath(x.path))), ...byPath(xs.filter((x) => isObjectPath(x.path)))];
  const deleted = plans.flatMap((p) => p.delete);
  const objects = new Map(plans.flatMap((p) => p.objects).map((o) => [o.path, o] as const));
  return {
    subject: { type: "user", uid: ref.type === "user" ? ref.uid : "", scope: null },
    subjects,
    plan: {
      delete: [...sortedUnique(deleted.filter((p) => !isObjectPath(p))), ...sortedUnique(deleted.filter(isObjectPath))],
      archive: byPath(plans.flatMap((p) => p.archive)),
      retain: docsThenObjects(plans.flatMap((p) => p.retain)),
      externalCopiesToReview: sortedUnique(plans.flatMap((p) => p.externalCopiesToReview)),
      policyVersion: plans[0]!.policyVersion,
      objects: byPath([...objects.values()]),
      manifestHash: hashCanonical({ scopes: scopes.map((s) => ({ scope: s.scope, manifestHash: s.manifestHash })) }),
    },
    scopes,
  };
}
