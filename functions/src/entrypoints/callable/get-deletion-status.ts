import { z } from "zod";
import { describeRetained } from "../../domain/deletion-status";
import { permissionDenied } from "../../domain/errors";
import { planSubject } from "../../infra/planning";
import { policy } from "../../infra/registry";
import { readRequest } from "../../infra/requests";
import { callable, inputs, type Caller } from "./shared";

export const GetDeletionStatusInput = z.object({ requestId: inputs.id }).strict();

const iso = (ms: number) => new Date(ms).toISOString();

/** The owner (or compliance) sees the request's timeline and what will be kept, and why. */
export async function getDeletionStatusHandler(input: z.infer<typeof GetDeletionStatusInput>, caller: Caller) {
  const request = await readRequest(input.requestId);
  if (request.uid !== caller.uid && !caller.roles.includes("compliance")) {
    throw permissionDenied("NOT_OWNER", "Only the subject or compliance staff may read this request.");
  }
  const plan = await planSubject({ type: "user", uid: request.uid, tenantId: request.tenantId }, Date.now());
  return {
    requestId: request.requestId,
    state: request.state,
    graceEndsAt: iso(request.graceEndsAtMs),
    dueAt: iso(request.dueAtMs),
    timeline: request.timeline.map((t) => ({ at: iso(t.atMs), event: t.event, ...(t.detail !== undefined ? { detail: t.detail } : {}) })),
    retained: describeRetained(plan.retain, policy()),
  };
}

export const getDeletionStatus = callable("getDeletionStatus", GetDeletionStatusInput, getDeletionStatusHandler);
