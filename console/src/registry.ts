import { useQuery } from "@tanstack/react-query";
import { PolicyIndex } from "../../functions/src/kernel/policy";
import { appWords, type AppWords } from "./app-words";
import type { Registry } from "../../functions/src/kernel/policy-schema";
import { useSession, useUserKey } from "./session";

export interface Enforced {
  policy: PolicyIndex;
  words: AppWords;
}

/** Made once per registry the server sent: the same answer gives the same object, so memoised views stay still. */
const made = new WeakMap<Registry, Enforced>();

/**
 * The registry the functions enforce (getRetentionRegistry), read once per signed-in staff member and kept for the
 * session: it changes only with a deployment. Undefined until it has arrived; views that need it wait. Only staff
 * views call it, so a signed-in non-staff account makes no call.
 */
export function useRegistry(): { enforced: Enforced | undefined; error: unknown } {
  const { fb } = useSession();
  const userKey = useUserKey();
  const q = useQuery({ queryKey: [...userKey, "registry"], queryFn: () => fb.client.getRetentionRegistry({}), staleTime: Infinity });
  const registry = q.data?.registry;
  let enforced: Enforced | undefined;
  if (registry) {
    enforced = made.get(registry);
    if (!enforced) {
      const policy = new PolicyIndex(registry);
      enforced = { policy, words: appWords(policy) };
      made.set(registry, enforced);
    }
  }
  return { enforced, error: q.error };
}
