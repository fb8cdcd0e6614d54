import type { Command } from "../command";
import { approveCommand } from "./approve";
import { auditCommand } from "./audit";
import { discoverCommand } from "./discover";
import { explainCommand } from "./explain";
import { holdsCommand } from "./holds";
import { exportCommand } from "./export";
import { planCommand } from "./plan";
import { replayErasuresCommand } from "./replay-erasures";
import { reportCommand } from "./report";
import { requestsCommand } from "./requests";
import { rulesCommand } from "./rules";
import { initCommand } from "./init";
import { setupCommand } from "./setup";
import { publishCommand } from "./publish";
import { runCommand } from "./run";
import { exportEvidenceCommand } from "./export-evidence";
import { verifyEvidenceCommand } from "./verify-evidence";

export const COMMANDS: readonly Command[] = [
  auditCommand,
  verifyEvidenceCommand,
  exportEvidenceCommand,
  planCommand,
  runCommand,
  reportCommand,
  holdsCommand,
  requestsCommand,
  explainCommand,
  approveCommand,
  replayErasuresCommand,
  exportCommand,
  discoverCommand,
  rulesCommand,
  initCommand,
  setupCommand,
  publishCommand,
];
