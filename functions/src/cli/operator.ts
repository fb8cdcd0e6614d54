import { userInfo } from "node:os";
import { applicationDefault } from "firebase-admin/app";
import type { Actor } from "../evidence/rules";
import { stringOpt, type OptionValues } from "./command";
import { ConnectionError, UsageError, type Target } from "./target";

/** Who runs the CLI, as evidence records it, and where that identity came from. */
export interface Operator {
  actor: Actor;
  source: "flag" | "env" | "os-user" | "adc";
}

export interface OperatorSources {
  /** `--as <uid>`. */
  flag: string | undefined;
  /** RETENTION_OPERATOR. */
  env: string | undefined;
  /** The OS account running the CLI. */
  osUser: () => string | null;
  /** The account of Application Default Credentials (a person's or a service account's email). */
  adcAccount: () => Promise<string | null>;
}

const IDENTITY = /^[A-Za-z0-9._@+-]{1,128}$/;

function checked(value: string, from: string): string {
  if (!IDENTITY.test(value)) throw new UsageError(`${from} ${JSON.stringify(value)} is not an identity (1-128 of letters, digits, . _ @ + -).`);
  return value;
}

/**
 * The operator's real identity, never a fixed name:
 * - on the emulators, who the operator says they are: `--as <uid>`, else RETENTION_OPERATOR, else the OS user
 *   (there is no credential to prove anything against, and a demo wants to act as its demo staff);
 * - on a project, the account whose Application Default Credentials the CLI uses to reach Firestore: that is
 *   who actually acts. `--as` and RETENTION_OPERATOR are refused there, because nobody may claim another
 *   identity, and a command that cannot tell who is acting does not run.
 */
export async function resolveOperator(target: Pick<Target, "emulator">, src: OperatorSources): Promise<Operator> {
  const staff = (id: string, source: Operator["source"]): Operator => ({ actor: { type: "staff", id }, source });
  if (target.emulator) {
    if (src.flag !== undefined) return staff(checked(src.flag, "--as"), "flag");
    if (src.env) return staff(checked(src.env, "RETENTION_OPERATOR"), "env");
    const os = src.osUser();
    if (os) return staff(checked(os, "the OS user"), "os-user");
    throw new UsageError("Cannot tell who is running the CLI: pass --as <uid> or set RETENTION_OPERATOR.");
  }
  if (src.flag !== undefined || src.env) {
    throw new UsageError("--as and RETENTION_OPERATOR are accepted only on the emulators: on a project the operator is the Application Default Credentials' account.");
  }
  const account = await src.adcAccount();
  if (!account) {
    throw new ConnectionError(
      "Cannot tell who is running the CLI from Application Default Credentials (no account email). Sign in with `gcloud auth application-default login` or use a service account.",
    );
  }
  return staff(checked(account, "the credentials' account"), "adc");
}

/**
 * The email of the Application Default Credentials' account: the access token the Admin SDK would use,
 * asked of Google's token-info endpoint (the token carries the userinfo.email scope the Admin SDK requests).
 * One way for every credential kind: a person's `gcloud auth application-default login`, a key file, an
 * impersonated or an attached service account.
 */
export async function adcAccount(): Promise<string | null> {
  const { access_token: token } = await applicationDefault().getAccessToken();
  const res = await fetch(`https://oauth2.googleapis.com/tokeninfo?access_token=${encodeURIComponent(token)}`);
  if (!res.ok) return null;
  const body = (await res.json()) as { email?: unknown };
  return typeof body.email === "string" && body.email !== "" ? body.email : null;
}

function osUser(): string | null {
  try {
    return userInfo().username || null;
  } catch {
    return null;
  }
}

/** The operator of this CLI invocation, from its options, environment, OS account or credentials. */
export function operatorOf(values: OptionValues, target: Target): Promise<Operator> {
  return resolveOperator(target, { flag: stringOpt(values, "as"), env: process.env.RETENTION_OPERATOR, osUser, adcAccount });
}
