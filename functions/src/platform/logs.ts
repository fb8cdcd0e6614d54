import { logger } from "firebase-functions";

/**
 * The one list of named log events. Structured fields only: ids, counts, codes, never personal data or
 * deleted content (evidence about a person goes to `deletionAudits`, where access is controlled).
 */
export type LogEvent =
  | "callable.rejected"
  | "callable.evidence_key_missing"
  | "deletion.requested"
  | "deletion.closure.approved"
  | "deletion.cancelled"
  | "deletion.cancel.resumed"
  | "deletion.backstop.opened"
  | "deletion.backstop.no_tenant"
  | "deletion.cell.opened"
  | "deletion.cell.released"
  | "deletion.cells.followed"
  | "deletion.cells.accounts"
  | "deletion.cells.failed"
  | "hold.cells.placed"
  | "hold.cells.released"
  | "purge.cells.enqueued"
  | "hold.placed"
  | "hold.applied"
  | "hold.apply.enqueued"
  | "hold.target_vanished"
  | "hold.released"
  | "lifecycle.transition"
  | "ttl.delete.processed"
  | "ttl.delete.duplicate"
  | "ttl.delete.held_incident"
  | "ttl.delete.unexplained"
  | "ttl.delete.workflow_observed"
  | "backfill.orphan.kept_held"
  | "backfill.batch.done"
  | "backfill.done"
  | "purge.request.leased"
  | "purge.batch.done"
  | "purge.batch.changed"
  | "purge.late.found"
  | "purge.request.done"
  | "purge.request.retained"
  | "purge.request.moved_on"
  | "purge.hold_stopped"
  | "purge.brake.tripped"
  | "purge.archive.unverified"
  | "purge.verify.failed"
  | "purge.archive.verified"
  | "purge.brake.approved"
  | "purge.brake.deferred"
  | "purge.brake.decided"
  | "status.summary.planned"
  | "purge.auth.deleted"
  | "purge.auth.tenant_accounts"
  | "purge.chunk.enqueued"
  | "purge.chunk.stale"
  | "purge.chunk.busy"
  | "purge.budget.spent"
  | "purge.requests.enqueued"
  | "purge.request.task"
  | "purge.request.busy"
  | "purge.unit.blocked"
  | "purge.lease.lost"
  | "purge.erasure_complete"
  | "purge.fully_gone_by_dated"
  | "audit.done"
  | "audit.findings"
  | "evidence.anchored"
  | "evidence.anchor.incident"
  | "evidence.head.unpublished"
  | "evidence.verified"
  | "job.done"
  | "erasure.ledger.recorded"
  | "erasure.replay.reopened"
  | "erasure.replay.done";

type Fields = Record<string, string | number | boolean | null | undefined | string[]>;

export const log = {
  info: (event: LogEvent, fields: Fields = {}) => logger.info(event, { event, ...fields }),
  warn: (event: LogEvent, fields: Fields = {}) => logger.warn(event, { event, ...fields }),
  error: (event: LogEvent, fields: Fields = {}) => logger.error(event, { event, ...fields }),
};
