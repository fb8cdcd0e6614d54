import { createRootRoute, createRoute, createRouter, Link, Outlet, useNavigate, useRouterState } from "@tanstack/react-router";
import { useEffect, type ReactNode } from "react";
import { isStaff, useSession, type Role } from "./session";
import { ApprovalsView } from "./views/approvals";
import { DashboardView } from "./views/dashboard";
import { EvidenceView } from "./views/evidence";
import { HoldsView } from "./views/holds";
import { NotAuthorisedView } from "./views/not-authorised";
import { RequestDetailView } from "./views/request-detail";
import { RequestsView } from "./views/requests";
import { SignInView } from "./views/sign-in";

const NAV: { to: string; label: string; role: Role }[] = [
  { to: "/requests", label: "Requests", role: "compliance" },
  { to: "/holds", label: "Holds", role: "compliance" },
  { to: "/approvals", label: "Approvals", role: "retention-admin" },
  { to: "/evidence", label: "Evidence", role: "compliance" },
  { to: "/dashboard", label: "Dashboard", role: "compliance" },
];

const OPEN_PATHS = new Set(["/sign-in", "/not-authorised"]);

/** Where a person belongs when they land somewhere else: sign-in, the refusal, or their first view. */
function redirectFor(path: string, signedIn: boolean | undefined, roles: readonly Role[]): string | null {
  if (signedIn === undefined) return null;
  if (!signedIn) return path === "/sign-in" ? null : "/sign-in";
  if (!isStaff(roles)) return path === "/not-authorised" ? null : "/not-authorised";
  if (path === "/" || OPEN_PATHS.has(path)) return roles.includes("compliance") ? "/requests" : "/approvals";
  return null;
}

/** The shell: who is signed in, the views their roles open, and the guard every view sits behind. */
function Layout() {
  const { user, roles, signOut } = useSession();
  const path = useRouterState({ select: (s) => s.location.pathname });
  const navigate = useNavigate();
  const redirect = redirectFor(path, user === undefined ? undefined : user !== null, roles);
  useEffect(() => {
    if (redirect !== null) void navigate({ to: redirect, replace: true });
  }, [redirect, navigate]);
  if (user === undefined || redirect !== null) return <p className="loading">Loading…</p>;
  const staff = user !== null && isStaff(roles);
  return (
    <>
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="top">
        <p className="brand">Retention console</p>
        {staff && (
          <nav aria-label="Views">
            <ul>
              {NAV.filter((n) => roles.includes(n.role) || (n.to === "/approvals" && roles.includes("compliance"))).map((n) => (
                <li key={n.to}>
                  <Link to={n.to} activeProps={{ "aria-current": "page", className: "active" }}>
                    {n.label}
                  </Link>
                </li>
              ))}
            </ul>
          </nav>
        )}
        {user && (
          <div className="who">
            <span data-testid="signed-in-as">
              {user.email} {staff ? `(${roles.join(", ")})` : ""}
            </span>
            <button type="button" onClick={() => void signOut()}>
              Sign out
            </button>
          </div>
        )}
      </header>
      <main id="main" tabIndex={-1}>
        {OPEN_PATHS.has(path) || staff ? <Outlet /> : null}
      </main>
    </>
  );
}

/** A view only some roles may open; the others get a plain explanation and no data. */
export function RequireRole({ role, children }: { role: Role | Role[]; children: ReactNode }) {
  const { roles } = useSession();
  const wanted = Array.isArray(role) ? role : [role];
  if (!wanted.some((r) => roles.includes(r))) {
    return (
      <section>
        <h1>Not available to your role</h1>
        <p>This view needs the {wanted.join(" or ")} role.</p>
      </section>
    );
  }
  return <>{children}</>;
}

/** "/" only ever redirects (the shell sends each person to their first view). */
function Home() {
  return null;
}

const root = createRootRoute({ component: Layout });
const routes = [
  createRoute({ getParentRoute: () => root, path: "/", component: Home }),
  createRoute({ getParentRoute: () => root, path: "/sign-in", component: SignInView }),
  createRoute({ getParentRoute: () => root, path: "/not-authorised", component: NotAuthorisedView }),
  createRoute({ getParentRoute: () => root, path: "/requests", component: () => <RequireRole role="compliance"><RequestsView /></RequireRole> }),
  createRoute({ getParentRoute: () => root, path: "/requests/$requestId", component: () => <RequireRole role="compliance"><RequestDetailView /></RequireRole> }),
  createRoute({ getParentRoute: () => root, path: "/holds", component: () => <RequireRole role="compliance"><HoldsView /></RequireRole> }),
  createRoute({ getParentRoute: () => root, path: "/approvals", component: () => <RequireRole role={["retention-admin", "compliance"]}><ApprovalsView /></RequireRole> }),
  createRoute({ getParentRoute: () => root, path: "/evidence", component: () => <RequireRole role="compliance"><EvidenceView /></RequireRole> }),
  createRoute({ getParentRoute: () => root, path: "/dashboard", component: () => <RequireRole role="compliance"><DashboardView /></RequireRole> }),
];

export const router = createRouter({ routeTree: root.addChildren(routes), defaultPreload: false });

declare module "@tanstack/react-router" {
  interface Register {
    router: typeof router;
  }
}
