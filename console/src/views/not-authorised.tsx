import { useSession } from "../session";

/** A signed-in account without a staff role: a clear refusal, and nothing is fetched. */
export function NotAuthorisedView() {
  const { user, signOut } = useSession();
  if (!user) return null;
  return (
    <section className="narrow" data-testid="not-authorised">
      <h1>Not authorised</h1>
      <p>
        You are signed in as <strong>{user.email}</strong>, which has no compliance or retention-admin role. This console is for compliance staff and retention administrators only, so it shows you
        nothing.
      </p>
      <p>To ask about your own data or account deletion, use the app itself.</p>
      <button type="button" onClick={() => void signOut()}>
        Sign out
      </button>
    </section>
  );
}
