import { useQueryClient, type QueryClient } from "@tanstack/react-query";
import { onIdTokenChanged, signOut, type User } from "firebase/auth";
import { createContext, useContext, useEffect, useRef, useState, type ReactNode } from "react";
import type { ConsoleFirebase } from "./firebase";

export type Role = "compliance" | "retention-admin";

export interface Session {
  fb: ConsoleFirebase;
  /** undefined while Auth restores the session. */
  user: User | null | undefined;
  roles: Role[];
  signOut: () => Promise<void>;
}

const SessionContext = createContext<Session | null>(null);

/**
 * Forgets every answer the console holds: in-flight calls are cancelled and the cache emptied, so what one person
 * was shown can never be shown to the next one signed in in the same tab.
 */
export function forgetAnswers(qc: QueryClient): void {
  void qc.cancelQueries();
  qc.getMutationCache().clear();
  qc.clear();
}

/**
 * Roles come from the ID token's custom claims, as the callables read them. Whenever the signed-in uid changes
 * (a sign-out, or another person signing in), the answers cached for the previous one are forgotten before the
 * new session is shown, and every query is keyed by uid (`useUserKey`), so a call of the previous person's that
 * lands after the switch fills a key the new person never reads.
 */
export function SessionProvider({ fb, children }: { fb: ConsoleFirebase; children: ReactNode }) {
  const qc = useQueryClient();
  const [user, setUser] = useState<User | null | undefined>(undefined);
  const [roles, setRoles] = useState<Role[]>([]);
  const shownUid = useRef<string | null | undefined>(undefined);
  useEffect(
    () =>
      onIdTokenChanged(fb.auth, (u) => {
        const uid = u?.uid ?? null;
        if (shownUid.current !== uid) {
          forgetAnswers(qc);
          shownUid.current = uid;
          // Nobody is shown until the new person's roles are read: the views unmount at once.
          setRoles([]);
          setUser(uid === null ? null : undefined);
        }
        if (!u) return;
        void u.getIdTokenResult().then((t) => {
          // A token of someone who has since signed out (or been replaced) changes nothing.
          if (fb.auth.currentUser?.uid !== u.uid) return;
          const claimed = Array.isArray(t.claims.roles) ? (t.claims.roles as unknown[]) : [];
          setRoles(claimed.filter((r): r is Role => r === "compliance" || r === "retention-admin"));
          setUser(u);
        });
      }),
    [fb.auth, qc],
  );
  const value: Session = {
    fb,
    user,
    roles,
    signOut: async () => {
      await signOut(fb.auth);
      forgetAnswers(qc);
    },
  };
  return <SessionContext.Provider value={value}>{children}</SessionContext.Provider>;
}

export function useSession(): Session {
  const s = useContext(SessionContext);
  if (!s) throw new Error("useSession outside SessionProvider");
  return s;
}

/**
 * The first part of every query key: the signed-in uid. Answers are cached per person, so nothing fetched for
 * one can be read from the cache for another.
 */
export function useUserKey(): readonly [string] {
  const { user } = useSession();
  return [user?.uid ?? "signed-out"];
}

export const isStaff = (roles: readonly Role[]) => roles.length > 0;
