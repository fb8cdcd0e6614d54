import { zodResolver } from "@hookform/resolvers/zod";
import { signInWithEmailAndPassword } from "firebase/auth";
import { useState } from "react";
import { useForm } from "react-hook-form";
import { z } from "zod";
import { demoSignIns } from "../demo-users";
import { useSession } from "../session";

const SignIn = z.object({ email: z.email("an email address"), password: z.string().min(1, "the password") });
type SignInForm = z.infer<typeof SignIn>;

export function SignInView() {
  const { fb } = useSession();
  const [failure, setFailure] = useState<string | null>(null);
  const form = useForm<SignInForm>({ resolver: zodResolver(SignIn), defaultValues: { email: "", password: "" } });
  const submit = form.handleSubmit(async ({ email, password }) => {
    setFailure(null);
    try {
      await signInWithEmailAndPassword(fb.auth, email, password);
    } catch {
      setFailure("Sign-in failed: check the email address and the password.");
    }
  });
  const { errors, isSubmitting } = form.formState;
  const demo = fb.emulated ? demoSignIns(fb.app.options.projectId) : null;
  return (
    <section className="narrow">
      <h1>Sign in</h1>
      <p>For compliance staff and retention administrators.</p>
      <form onSubmit={(e) => void submit(e)} noValidate>
        <label htmlFor="email">Email</label>
        <input id="email" type="email" autoComplete="username" aria-invalid={errors.email ? true : undefined} aria-describedby={errors.email ? "email-error" : undefined} {...form.register("email")} />
        {errors.email && (
          <p className="field-error" id="email-error">
            Enter {errors.email.message}.
          </p>
        )}
        <label htmlFor="password">Password</label>
        <input id="password" type="password" autoComplete="current-password" aria-invalid={errors.password ? true : undefined} aria-describedby={errors.password ? "password-error" : undefined} {...form.register("password")} />
        {errors.password && (
          <p className="field-error" id="password-error">
            Enter {errors.password.message}.
          </p>
        )}
        <button type="submit" className="primary" disabled={isSubmitting}>
          {isSubmitting ? "Signing in…" : "Sign in"}
        </button>
        {failure && (
          <p role="alert" className="error">
            {failure}
          </p>
        )}
      </form>
      {demo && (
        <aside className="demo" aria-labelledby="demo-heading">
          <h2 id="demo-heading">Demo users (emulators): {demo.title}</h2>
          <p>
            Password <code>{demo.password}</code> for each:
          </p>
          <ul>
            {demo.signIns.map(([email, role]) => (
              <li key={email}>
                <code>{email}</code>: {role}
              </li>
            ))}
          </ul>
        </aside>
      )}
    </section>
  );
}
