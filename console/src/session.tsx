import { onIdTokenChanged, signOut, type User } from "firebase/auth";
import { createContext, useContext, useEffect, useState, type ReactNode } from "react";
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

/** Roles come from the ID token's custom claims, as the callables read them. */
export function SessionProvider({ fb, children }: { fb: ConsoleFirebase; children: ReactNode }) {
  const [user, setUser] = useState<User | null | undefined>(undefined);
  const [roles, setRoles] = useState<Role[]>([]);
  useEffect(
    () =>
      onIdTokenChanged(fb.auth, (u) => {
        if (!u) {
          setRoles([]);
          setUser(null);
          return;
        }
        void u.getIdTokenResult().then((t) => {
          const claimed = Array.isArray(t.claims.roles) ? (t.claims.roles as unknown[]) : [];
          setRoles(claimed.filter((r): r is Role => r === "compliance" || r === "retention-admin"));
          setUser(u);
        });
      }),
    [fb.auth],
  );
  const value: Session = { fb, user, roles, signOut: () => signOut(fb.auth) };
  return <SessionContext.Provider value={value}>{children}</SessionContext.Provider>;
}

export function useSession(): Session {
  const s = useContext(SessionContext);
  if (!s) throw new Error("useSession outside SessionProvider");
  return s;
}

export const isStaff = (roles: readonly Role[]) => roles.length > 0;
