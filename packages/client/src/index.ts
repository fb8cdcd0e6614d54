/**
 * @atlasmart/retention-client: a typed function for every callable of the retention control plane.
 *
 *   const retention = createRetentionClient(getFunctions(app));
 *   const { requestId, group } = await retention.requestAccountDeletion({});
 *   const status = await retention.getDeletionStatus({});   // the caller's latest request
 *   // A user in several scopes (workspaces): `requestId` names the request group, `group.requests` each scope's part;
 *   // status and cancel take that id and answer for the whole group.
 *   const plan = await retention.planDeletion({ subject: { type: "user", uid, scope: "w-1" } }); // the general form
 *
 * Inputs are checked with the same zod schemas the functions use (functions/src/contract, bundled here),
 * before anything is sent; answers are checked against the contract's output schemas, so a client and a
 * deployment that disagree fail loudly instead of silently.
 */
import { FunctionsError, httpsCallable, httpsCallableFromURL, type Functions } from "firebase/functions";
import { CALLABLE_NAMES, CALLABLES, type CallableInput, type CallableName, type CallableOutput } from "../../../functions/src/contract";

export * from "../../../functions/src/contract";

export type RetentionClient = { readonly [N in CallableName]: (input: CallableInput<N>) => Promise<CallableOutput<N>> };

export interface ClientOptions {
  /** Check each answer against the contract's output schema (default true). */
  validateOutput?: boolean;
  /** Per-call timeout in ms (the SDK's default is 70 s; a whole-chain explain or a tenant plan may need more). */
  timeoutMs?: number;
  /**
   * Call through this URL prefix instead of the functions' own URLs, e.g. `${location.origin}/api` behind the
   * Hosting rewrites in firebase.json (same origin: no CORS, one Content-Security-Policy origin).
   */
  baseUrl?: string;
  /**
   * What precedes each callable's name in its function id: `kit-<instance>-` for the functions of a function kit
   * instance (firebase-tools deploys them as `kit-<instance>-<name>`), none for this project's own deployment.
   * Not used with `baseUrl`, whose rewrites name the functions.
   */
  functionPrefix?: string;
}

/** The input did not pass the callable's schema: nothing was sent. */
export class RetentionInputError extends Error {
  constructor(
    readonly callable: CallableName,
    readonly issues: { path: string; message: string }[],
  ) {
    super(`Invalid ${callable} input: ${issues.map((i) => `${i.path || "(input)"}: ${i.message}`).join("; ")}`);
    this.name = "RetentionInputError";
  }
}

/** The answer did not match the contract: the deployment and this client disagree. */
export class RetentionContractError extends Error {
  constructor(readonly callable: CallableName, detail: string) {
    super(`${callable} answered outside the contract: ${detail}`);
    this.name = "RetentionContractError";
  }
}

/** The refusal's machine code (`details.reason`, e.g. TWO_PERSON_RULE) of a failed call, or null. */
export function refusalReason(err: unknown): string | null {
  if (err instanceof FunctionsError || (typeof err === "object" && err !== null && "details" in err)) {
    const details = (err as { details?: unknown }).details;
    if (typeof details === "object" && details !== null && typeof (details as { reason?: unknown }).reason === "string") return (details as { reason: string }).reason;
  }
  return null;
}

/** One typed function per callable, bound to a Firebase Functions instance (region, emulator and App Check as set up on it). */
export function createRetentionClient(functions: Functions, options: ClientOptions = {}): RetentionClient {
  const validate = options.validateOutput ?? true;
  const entries = CALLABLE_NAMES.map((name) => {
    const spec = CALLABLES[name];
    const callOptions = options.timeoutMs !== undefined ? { timeout: options.timeoutMs } : undefined;
    const fn = options.baseUrl !== undefined ? httpsCallableFromURL(functions, `${options.baseUrl.replace(/\/$/, "")}/${name}`, callOptions) : httpsCallable(functions, `${options.functionPrefix ?? ""}${name}`, callOptions);
    const call = async (input: unknown) => {
      const parsed = spec.input.safeParse(input);
      if (!parsed.success) throw new RetentionInputError(name, parsed.error.issues.map((i) => ({ path: i.path.map(String).join("."), message: i.message })));
      const { data } = await fn(parsed.data);
      if (validate) {
        const checked = spec.output.safeParse(data);
        if (!checked.success) throw new RetentionContractError(name, checked.error.issues.map((i) => `${i.path.map(String).join(".")}: ${i.message}`).join("; "));
      }
      return data;
    };
    return [name, call] as const;
  });
  return Object.freeze(Object.fromEntries(entries)) as unknown as RetentionClient;
}
