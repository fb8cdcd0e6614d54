import { getAuth } from "firebase-admin/auth";
import { permissionDenied } from "../kernel/errors";
import type { Actor } from "../kernel/actor";
import { adminApp } from "../platform/firestore";
import type { OptionValues } from "./command";
import { operatorOf } from "./operator";
import { UsageError, type Target } from "./target";

export type StaffRole = "compliance" | "retention-admin";

/**
 * The operator as the staff member they are in Firebase Auth, for commands that act where roles and people
 * matter (holds and their two-person rule, brake approvals the purge checks against Auth). The operator
 * (`cli/operator.ts`: --as on the emulators, the credentials' account on a project) is looked up by uid, or
 * by email when it is one, and must hold `role` in its custom claims, as a callable's caller must. Evidence
 * then names the same uid the console would, so one person is one identity whichever door they use.
 */
export async function staffOperator(values: OptionValues, target: Target, role: StaffRole): Promise<Actor> {
  if (target.emulator && !target.authEmulator) throw new UsageError("FIREBASE_AUTH_EMULATOR_HOST is not set: staff commands check the operator's role in Auth.");
  const operator = await operatorOf(values, target);
  const auth = getAuth(adminApp());
  const id = operator.actor.id;
  let user;
  try {
    user = id.includes("@") ? await auth.getUserByEmail(id) : await auth.getUser(id);
  } catch (err) {
    if ((err as { code?: string }).code === "auth/user-not-found") {
      throw new UsageError(`The operator ${JSON.stringify(id)} is not a staff user in Firebase Auth${target.emulator ? " (pass --as <uid> of a demo staff user)" : ""}.`);
    }
    throw err;
  }
  const roles = (user.customClaims?.roles as unknown[] | undefined) ?? [];
  if (!roles.includes(role)) {
    throw permissionDenied(role === "compliance" ? "NOT_COMPLIANCE" : "NOT_RETENTION_ADMIN", `The operator ${user.uid} lacks the ${role} role.`);
  }
  return { type: "staff", id: user.uid };
}

/** Parses a command's input with the callable's own zod schema: a bad value is a usage error, with zod's words. */
export function parseInput<T>(schema: { safeParse: (v: unknown) => { success: true; data: T } | { success: false; error: { issues: { path: PropertyKey[]; message: string }[] } } }, value: unknown): T {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  throw new UsageError(r.error.issues.map((i) => `${i.path.map(String).join(".") || "(input)"}: ${i.message}`).join("; "));
}
