import type { Subject } from "../../plan/rules";

/**
 * A subject in the general form the callables and the CLI speak (contract/subjects.ts): a user, with the scope
 * this erasure is about (null in an app without scopes), or a scope by its id, whatever the registry calls it
 * (a tenant, a workspace). Stored records keep the product's own fields (`tenantId`, `subjectType: "tenant"`).
 */
export type SubjectView = { type: "user"; uid: string; scope: string | null } | { type: "scope"; id: string };

export function subjectView(subject: Subject): SubjectView {
  return subject.type === "user" ? { type: "user", uid: subject.uid, scope: subject.tenantId === "" ? null : subject.tenantId } : { type: "scope", id: subject.tenantId };
}
