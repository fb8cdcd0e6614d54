import { afterAll, beforeAll } from "vitest";
import { SOCIAL_DATABASE } from "../../examples/social/registry";
import { useSocialRegistry } from "../../examples/social/seed";

/**
 * Runs the calling suite on the social example: its own database (set at once, before anything resolves db()) and
 * its registry enforced, both put back after the suite. Call it at the top of the suite's file.
 */
export function onSocialExample(): void {
  const previousDatabase = process.env.RETENTION_DATABASE_ID;
  process.env.RETENTION_DATABASE_ID = SOCIAL_DATABASE;
  let restoreRegistry: () => void = () => undefined;
  beforeAll(() => {
    restoreRegistry = useSocialRegistry();
  });
  afterAll(() => {
    restoreRegistry();
    if (previousDatabase === undefined) delete process.env.RETENTION_DATABASE_ID;
    else process.env.RETENTION_DATABASE_ID = previousDatabase;
  });
}
