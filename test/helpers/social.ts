import { afterAll, beforeAll } from "vitest";
import { SOCIAL_ANALYTICS, SOCIAL_ANALYTICS_DATABASE, SOCIAL_DATABASE } from "../../examples/social/registry";
import { useSocialRegistry } from "../../examples/social/seed";

/** The mapping the example's suites run with: its analytics database under a physical id of the example's own. */
export const SOCIAL_DATABASES_SETTING = `${SOCIAL_ANALYTICS}=${SOCIAL_ANALYTICS_DATABASE}`;

/**
 * Runs the calling suite on the social example: its own databases (the primary and analytics, set at once, before
 * anything resolves db()) and its registry enforced, all put back after the suite. Call it at the top of the suite's
 * file.
 */
export function onSocialExample(): void {
  const previousDatabase = process.env.RETENTION_DATABASE_ID;
  const previousDatabases = process.env.RETENTION_DATABASES;
  process.env.RETENTION_DATABASE_ID = SOCIAL_DATABASE;
  process.env.RETENTION_DATABASES = SOCIAL_DATABASES_SETTING;
  let restoreRegistry: () => void = () => undefined;
  beforeAll(() => {
    restoreRegistry = useSocialRegistry();
  });
  afterAll(() => {
    restoreRegistry();
    for (const [name, value] of [
      ["RETENTION_DATABASE_ID", previousDatabase],
      ["RETENTION_DATABASES", previousDatabases],
    ] as const) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });
}
