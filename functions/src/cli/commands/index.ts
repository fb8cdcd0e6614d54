import type { Command } from "../command";
import { auditCommand } from "./audit";
import { planCommand } from "./plan";
import { replayErasuresCommand } from "./replay-erasures";
import { reportCommand } from "./report";
import { runCommand } from "./run";
import { seedDemoCommand } from "./seed-demo";
import { exportEvidenceCommand } from "./export-evidence";
import { verifyEvidenceCommand } from "./verify-evidence";

export const COMMANDS: readonly Command[] = [seedDemoCommand, auditCommand, verifyEvidenceCommand, exportEvidenceCommand, planCommand, runCommand, reportCommand, replayErasuresCommand];
