import { z } from "zod";
import { inputs } from "./inputs";

/**
 * A subject in its general form, wherever a callable names one (docs/SUBJECTS.md): a user (a Firebase Auth
 * account) by uid, or a scope (the owner users belong to: a tenant, a workspace, an organisation, whatever the
 * registry calls it) by its id. A user may name one of their scopes (`scope`): without it, a user the registry finds
 * in several scopes is taken in all of them. A scope in an app whose registry declares no scope kind is refused with
 * NO_SCOPE_KIND. The documented AtlasMart inputs (`subjectUid`, `tenantId`) stay as they are beside it.
 */
export const SubjectInput = z.discriminatedUnion("type", [
  z.object({ type: z.literal("user"), uid: inputs.id, scope: inputs.id.optional() }).strict(),
  z.object({ type: z.literal("scope"), id: inputs.id }).strict(),
]);

/** A scope named in the general form (the scope's closure callables take only a scope). */
export const ScopeInput = z.object({ type: z.literal("scope"), id: inputs.id }).strict();

/**
 * A subject as outputs name it in the general form, beside their documented fields: a user with the scope the
 * record is about (null in an app without scopes), or a scope by its id.
 */
export const SubjectView = z.discriminatedUnion("type", [
  z.object({ type: z.literal("user"), uid: z.string(), scope: z.string().nullable() }),
  z.object({ type: z.literal("scope"), id: z.string() }),
]);
