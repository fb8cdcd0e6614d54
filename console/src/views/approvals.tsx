import { zodResolver } from "@hookform/resolvers/zod";
import { BRAKE_RUN_STATES, inputs, type CallableOutput } from "@atlasmart/retention-client";
import { useInfiniteQuery, useMutation, useQueryClient } from "@tanstack/react-query";
import { useEffect, useState } from "react";
import { useForm } from "react-hook-form";
import { z } from "zod";
import { brakeWhy, personName, Problem, when } from "../format";
import { useSession, useUserKey } from "../session";

type Page = CallableOutput<"listBrakeRuns">;
type Run = Page["items"][number];

function Decide({ run }: { run: Run }) {
  const { fb } = useSession();
  const userKey = useUserKey();
  const qc = useQueryClient();
  const form = useForm<{ note: string }>({ resolver: zodResolver(z.object({ note: inputs.text.min(1, "why") })), defaultValues: { note: "" } });
  const decide = useMutation({
    mutationFn: (v: { decision: "APPROVE" | "DENY"; note: string }) => fb.client.approvePurgeRun({ runKey: run.runKey, ...v }),
    onSuccess: () => void qc.invalidateQueries({ queryKey: [...userKey, "brake"] }),
  });
  // A refusal is about the note as it was sent: editing it clears the refusal.
  const { reset: clearRefusal, isError: refused } = decide;
  useEffect(() => {
    const sub = form.watch(() => {
      if (refused) clearRefusal();
    });
    return () => sub.unsubscribe();
  }, [form, refused, clearRefusal]);
  const id = `note-${run.runKey}`;
  const submit = (decision: "APPROVE" | "DENY") => form.handleSubmit((v) => decide.mutate({ decision, note: v.note }));
  return (
    <form className="decide" onSubmit={(e) => e.preventDefault()} noValidate>
      <label htmlFor={id}>Decision note (kept on the record; its hash goes into the evidence)</label>
      <textarea id={id} rows={2} {...form.register("note")} />
      {form.formState.errors.note && <p className="field-error">Say why.</p>}
      <div className="buttons">
        <button type="button" className="primary" disabled={decide.isPending} onClick={() => void submit("APPROVE")()}>
          Approve this deletion set
        </button>
        <button type="button" disabled={decide.isPending} onClick={() => void submit("DENY")()}>
          Deny
        </button>
      </div>
      {decide.isError && <Problem error={decide.error} />}
      {decide.isSuccess && (
        <p role="status" className="ok" data-testid="decision">
          {decide.data.state}
          {decide.data.expiresAt ? ` until ${when(decide.data.expiresAt)}` : ""} (evidence {decide.data.evidenceShard} #{decide.data.evidenceSeq})
        </p>
      )}
    </form>
  );
}

/** Tripped brake units with their exact deletion set and counts; a retention-admin approves or denies. */
export function ApprovalsView() {
  const { fb, roles } = useSession();
  const userKey = useUserKey();
  const [state, setState] = useState<string>("");
  const admin = roles.includes("retention-admin");
  const q = useInfiniteQuery({
    queryKey: [...userKey, "brake", state],
    initialPageParam: undefined as string | undefined,
    queryFn: ({ pageParam }) => fb.client.listBrakeRuns({ ...(state ? { state: state as Run["state"] } : {}), pageSize: 10, ...(pageParam ? { cursor: pageParam } : {}) }),
    getNextPageParam: (last) => last.nextCursor ?? undefined,
  });
  const runs = q.data?.pages.flatMap((p) => p.items) ?? [];
  const people = Object.assign({}, ...(q.data?.pages.map((p) => p.people) ?? [])) as Page["people"];
  return (
    <section>
      <h1>Purge approvals</h1>
      <p>Deletion sets the mass-deletion brake holds back. An approval lets exactly the set below (its manifest hashes) run once, within the approval window; a denial keeps it held back.</p>
      <form className="filters" onSubmit={(e) => e.preventDefault()}>
        <label htmlFor="brake-state">Show</label>
        <select id="brake-state" value={state} onChange={(e) => setState(e.target.value)}>
          <option value="">Waiting, denied or approved</option>
          {BRAKE_RUN_STATES.map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
      </form>
      {q.isPending && <p className="loading">Loading…</p>}
      {q.isError && <Problem error={q.error} />}
      {q.isSuccess && runs.length === 0 && <p className="empty">No deletion set is held back.</p>}
      {runs.map((run) => (
        <article key={run.runKey} className="card" aria-labelledby={`run-${run.runKey}`} data-testid="brake-run">
          <h2 id={`run-${run.runKey}`}>
            {run.kind === "request" ? `Request ${run.requestId ?? ""}` : `Sweep of ${run.collection ?? ""}`}: <span className={`state state-${run.state}`}>{run.state}</span>
          </h2>
          <dl className="facts">
            <dt>Run key</dt>
            <dd>
              <code>{run.runKey}</code>
            </dd>
            <dt>Would delete</dt>
            <dd data-testid="would-delete">{run.wouldDelete} documents</dd>
            <dt>Tripped</dt>
            <dd>
              {when(run.lastTrippedAt)} ({run.trips} time(s)). Held back because {run.violations.map((v) => brakeWhy(v)).join("; ") || "-"}.{" "}
              <span className="code-detail">{run.violations.map((v) => v.kind).join(", ")}</span>
            </dd>
            <dt>Policy</dt>
            <dd>{run.policyVersion}</dd>
            {run.decision && (
              <>
                <dt>Decision</dt>
                <dd>
                  {run.decision.decision} by {personName(people, run.decision.by)} at {when(run.decision.at)}
                  {run.decision.expiresAt ? `, usable until ${when(run.decision.expiresAt)}` : ""}: “{run.decision.note}”
                </dd>
              </>
            )}
          </dl>
          <div className="table-wrap">
            <table>
              <caption>Counts per retention class</caption>
              <thead>
                <tr>
                  <th scope="col">Class</th>
                  <th scope="col">Documents</th>
                </tr>
              </thead>
              <tbody>
                {Object.entries(run.countsByClass).map(([cls, n]) => (
                  <tr key={cls}>
                    <th scope="row">{cls}</th>
                    <td>{n}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <div className="table-wrap">
            <table>
              <caption>The exact deletion set: units and manifest hashes</caption>
              <thead>
                <tr>
                  <th scope="col">Unit</th>
                  <th scope="col">Manifest hash</th>
                </tr>
              </thead>
              <tbody>
                {run.units.map((u) => (
                  <tr key={u.unitKey}>
                    <th scope="row">{u.unitKey}</th>
                    <td>
                      <code className="hash">{u.manifestHash}</code>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          {admin && run.state !== "USED" ? <Decide run={run} /> : !admin && <p className="muted">Only a retention-admin decides.</p>}
        </article>
      ))}
      {q.hasNextPage && (
        <button type="button" onClick={() => void q.fetchNextPage()}>
          Load more
        </button>
      )}
    </section>
  );
}
