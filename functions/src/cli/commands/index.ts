import type { Command } from "../command";
import { auditCommand } from "./audit";
import { exportCommand } from "./export";
import { planCommand } from "./plan";
import { reportCommand } from "./report";
import { runCommand } from "./run";
import { seedDemoCommand } from "./seed-demo";
import { verifyEvidenceCommand } from "./verify-evidence";

export const COMMANDS: readonly Command[] = [seedDemoCommand, auditCommand, verifyEvidenceCommand, planCommand, runCommand, reportCommand, exportCommand];
