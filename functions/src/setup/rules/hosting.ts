/**
 * The compliance console on a Firebase Hosting site: the console is a static build that reaches the callables through
 * same-origin rewrites (`/api/<name>`) and reads its project from Hosting's `/__/firebase/init.json`, so one build
 * serves any project and any kit instance; only the rewrites name the functions. This project's own firebase.json
 * `hosting` is `consoleHosting` for its functions (a unit test holds them equal); `retention setup --console <site>`
 * writes it for a kit instance, whose functions deploy as `kit-<instance>-<name>`. Pure.
 */

/** The callables the console calls, in the order the rewrites list them. */
export const CONSOLE_CALLABLES = [
  "requestAccountDeletion",
  "cancelAccountDeletion",
  "getDeletionStatus",
  "listDeletionRequests",
  "placeRetentionHold",
  "releaseRetentionHold",
  "listRetentionHolds",
  "planDeletion",
  "explainDeletion",
  "getRetentionReport",
  "getRetentionRegistry",
  "transitionLifecycle",
  "runRetentionJob",
  "listBrakeRuns",
  "approvePurgeRun",
  "confirmProcessorNotice",
  "extendRequestDeadline",
] as const;

/**
 * The console's response headers. Its scripts, styles and calls are its own origin's; Auth, App Check and reCAPTCHA
 * Enterprise are the only others it reaches. Nothing may frame it, and its pages are never cached (the data is
 * personal); the hashed assets are.
 */
export const CONSOLE_HEADERS = [
  {
    source: "**",
    headers: [
      {
        key: "Content-Security-Policy",
        value:
          "default-src 'self'; script-src 'self' https://www.google.com/recaptcha/ https://www.gstatic.com/recaptcha/; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self' https://identitytoolkit.googleapis.com https://securetoken.googleapis.com https://firebaseappcheck.googleapis.com https://content-firebaseappcheck.googleapis.com https://www.google.com/recaptcha/; frame-src https://www.google.com/recaptcha/ https://recaptcha.google.com/recaptcha/; object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'; upgrade-insecure-requests",
      },
      { key: "Strict-Transport-Security", value: "max-age=31536000; includeSubDomains" },
      { key: "X-Content-Type-Options", value: "nosniff" },
      { key: "X-Frame-Options", value: "DENY" },
      { key: "Referrer-Policy", value: "no-referrer" },
      { key: "Permissions-Policy", value: "camera=(), microphone=(), geolocation=(), payment=(), usb=()" },
      { key: "Cross-Origin-Opener-Policy", value: "same-origin" },
      { key: "Cache-Control", value: "no-store" },
    ],
  },
  { source: "/assets/**", headers: [{ key: "Cache-Control", value: "public, max-age=31536000, immutable" }] },
];

export interface ConsoleHostingOptions {
  /** The folder Hosting serves: the console's build (console/dist here; the installed kit's console/ in a project). */
  public: string;
  /** What precedes each callable's name in its function id: "" here, `kit-<instance>-` for a kit instance. */
  functionIdPrefix: string;
  region: string;
  /** The Hosting site, for a project that serves several (a kit's console goes on a site of its own). */
  site?: string;
}

/** A firebase.json `hosting` entry that serves the console and routes its calls to the functions. */
export function consoleHosting(o: ConsoleHostingOptions): Record<string, unknown> {
  return {
    ...(o.site !== undefined ? { site: o.site } : {}),
    public: o.public,
    ignore: ["firebase.json", "**/.*", "**/node_modules/**"],
    cleanUrls: true,
    rewrites: [
      ...CONSOLE_CALLABLES.map((name) => ({ source: `/api/${name}`, function: { functionId: `${o.functionIdPrefix}${name}`, region: o.region } })),
      { source: "**", destination: "/index.html" },
    ],
    headers: CONSOLE_HEADERS,
  };
}
