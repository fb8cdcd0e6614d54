import { createRetentionClient, type RetentionClient } from "@atlasmart/retention-client";
import { initializeApp, type FirebaseApp, type FirebaseOptions } from "firebase/app";
import { initializeAppCheck, ReCaptchaEnterpriseProvider } from "firebase/app-check";
import { browserSessionPersistence, connectAuthEmulator, initializeAuth, type Auth } from "firebase/auth";
import { getFunctions } from "firebase/functions";
import firebaseJson from "../../firebase.json";

export interface ConsoleFirebase {
  app: FirebaseApp;
  auth: Auth;
  client: RetentionClient;
  /** Running against the emulators (a demo- project): the sign-in page lists the demo users. */
  emulated: boolean;
}

/**
 * Where the console finds its project: Firebase Hosting's reserved `/__/firebase/init.json` (the deployed web
 * app's config; on the Hosting emulator, the demo project's). On a `demo-` project the console talks to the
 * emulators: the Auth emulator's port is the configured one moved by as much as the Hosting emulator's own port
 * was (the harness shifts every port by EMULATOR_PORT_OFFSET).
 */
export function emulatorAuthUrl(pagePort: number): string {
  const offset = pagePort - firebaseJson.emulators.hosting.port;
  return `http://${firebaseJson.emulators.auth.host}:${firebaseJson.emulators.auth.port + offset}`;
}

export async function connectFirebase(): Promise<ConsoleFirebase> {
  const res = await fetch("/__/firebase/init.json");
  if (!res.ok) throw new Error(`Could not read the Firebase configuration (/__/firebase/init.json: ${res.status}).`);
  const config = (await res.json()) as FirebaseOptions & { projectId: string };
  const emulated = config.projectId.startsWith("demo-");
  const app = initializeApp(config);
  // App Check in production (reCAPTCHA Enterprise, site key given at build time). The emulators have no App
  // Check service to exchange a token with (offline), and enforcement is off there (functions/.env.local).
  const siteKey = import.meta.env.VITE_APP_CHECK_SITE_KEY as string | undefined;
  if (!emulated && siteKey) initializeAppCheck(app, { provider: new ReCaptchaEnterpriseProvider(siteKey), isTokenAutoRefreshEnabled: true });
  const auth = initializeAuth(app, { persistence: browserSessionPersistence });
  if (emulated) connectAuthEmulator(auth, emulatorAuthUrl(Number(location.port || 80)), { disableWarnings: true });
  // The callables are reached through the Hosting rewrites (/api/<name>): same origin, so no CORS and a CSP
  // whose connect-src is 'self' for them.
  const client = createRetentionClient(getFunctions(app), { baseUrl: `${location.origin}/api`, timeoutMs: 540_000 });
  return { app, auth, client, emulated };
}
