import { zodResolver } from "@hookform/resolvers/zod";
import { inputs, type CallableOutput } from "@atlasmart/retention-client";
import { holdTargetVerdict } from "../../../functions/src/contract/hold-target";
import { useInfiniteQuery, useMutation, useQueryClient } from "@tanstack/react-query";
import type { ColumnDef } from "@tanstack/react-table";
import { useState } from "react";
import { useForm } from "react-hook-form";
import { z } from "zod";
import { problem, when } from "../format";
import { policy } from "../registry";
import { useSession } from "../session";
import { DataTable } from "../table";

type Hold = CallableOutput<"listRetentionHolds">["items"][number];
interface Filters {
  state: "ACTIVE" | "RELEASED";
  reasonCode: string;
  placedBy: string;
  targetPath: string;
}

/** The place-hold form: the contract's shapes, and the registry's verdict on the path before anything is sent. */
const PlaceForm = z
  .object({ targetPath: inputs.documentPath, reasonCode: inputs.code, releaseAfter: z.string(), note: inputs.text })
  .superRefine((v, ctx) => {
    const verdict = holdTargetVerdict(policy, v.targetPath);
    if (!verdict.ok) ctx.addIssue({ code: "custom", path: ["targetPath"], message: `${verdict.reason}: ${verdict.message}` });
    if (v.releaseAfter !== "" && Number.isNaN(Date.parse(`${v.releaseAfter}:00Z`))) ctx.addIssue({ code: "custom", path: ["releaseAfter"], message: "a date and time" });
  });
type PlaceValues = z.infer<typeof PlaceForm>;

function PlaceHold({ onPlaced }: { onPlaced: () => void }) {
  const { fb } = useSession();
  const form = useForm<PlaceValues>({ resolver: zodResolver(PlaceForm), mode: "onChange", defaultValues: { targetPath: "", reasonCode: "", releaseAfter: "", note: "" } });
  const place = useMutation({
    mutationFn: (v: PlaceValues) =>
      fb.client.placeRetentionHold({
        targetPath: v.targetPath,
        reasonCode: v.reasonCode,
        ...(v.releaseAfter ? { releaseAfter: new Date(`${v.releaseAfter}:00Z`).toISOString() } : {}),
        ...(v.note ? { note: v.note } : {}),
      }),
    onSuccess: () => {
      form.reset();
      onPlaced();
    },
  });
  const path = form.watch("targetPath");
  const verdict = path ? holdTargetVerdict(policy, path) : null;
  const { errors } = form.formState;
  return (
    <form className="card" aria-labelledby="place-heading" onSubmit={(e) => void form.handleSubmit((v) => place.mutate(v))(e)} noValidate>
      <h2 id="place-heading">Place a hold</h2>
      <label htmlFor="hold-target">Document or tenant path</label>
      <input id="hold-target" placeholder="tenants/t-acme/orders/o-1002" aria-describedby="hold-target-check" aria-invalid={errors.targetPath ? true : undefined} {...form.register("targetPath")} />
      <p id="hold-target-check" className={errors.targetPath ? "field-error" : "muted"} data-testid="path-check">
        {errors.targetPath?.message ?? (verdict?.ok ? (verdict.targetType === "subtree" ? "A tenant: the hold covers it and everything under it." : `A document of class ${verdict.retentionClass}: it may be held.`) : "A document path: collection/id pairs.")}
      </p>
      <label htmlFor="hold-reason">Reason for the hold</label>
      <select id="hold-reason" aria-invalid={errors.reasonCode ? true : undefined} {...form.register("reasonCode")}>
        <option value="">Choose a reason</option>
        {policy.registry.holdReasons.map((r) => (
          <option key={r.code} value={r.code}>
            {r.code}: {r.description}
            {r.twoPersonRelease ? " (two-person release)" : ""}
          </option>
        ))}
      </select>
      {errors.reasonCode && <p className="field-error">Choose a reason.</p>}
      <label htmlFor="hold-release-after">Release after (UTC, optional)</label>
      <input id="hold-release-after" type="datetime-local" {...form.register("releaseAfter")} />
      <label htmlFor="hold-note">Note (optional, staff only; never shown to the subject)</label>
      <textarea id="hold-note" rows={2} {...form.register("note")} />
      <button type="submit" className="primary" disabled={place.isPending}>
        Place hold
      </button>
      {place.isError && (
        <p role="alert" className="error">
          {problem(place.error)}
        </p>
      )}
      {place.isSuccess && (
        <p role="status" className="ok" data-testid="hold-placed">
          Hold placed: {place.data.holdId}
        </p>
      )}
    </form>
  );
}

function ReleaseControl({ hold, onReleased }: { hold: Hold; onReleased: () => void }) {
  const { fb } = useSession();
  const [open, setOpen] = useState(false);
  const form = useForm<{ reason: string }>({ resolver: zodResolver(z.object({ reason: inputs.text.min(1, "why the hold no longer applies") })), defaultValues: { reason: "" } });
  const release = useMutation({ mutationFn: (reason: string) => fb.client.releaseRetentionHold({ holdId: hold.holdId, reason }), onSuccess: onReleased });
  if (hold.state !== "ACTIVE") return <span className="muted">Released {when(hold.releasedAt)} by {hold.releasedBy}</span>;
  if (hold.releaseRefusal === "TWO_PERSON_RULE") return <span className="badge">Awaiting a second officer</span>;
  if (hold.releaseRefusal === "RELEASE_BEFORE_RELEASE_AFTER") return <span className="muted">Locked until {when(hold.releaseAfter)}</span>;
  if (!open)
    return (
      <button type="button" onClick={() => setOpen(true)} aria-label={`Release hold ${hold.holdId}`}>
        Release…
      </button>
    );
  const id = `release-${hold.holdId}`;
  return (
    <form onSubmit={(e) => void form.handleSubmit((v) => release.mutate(v.reason))(e)} noValidate>
      <label htmlFor={id}>Why release it?</label>
      <input id={id} {...form.register("reason")} />
      {form.formState.errors.reason && <p className="field-error">Say {form.formState.errors.reason.message}.</p>}
      <button type="submit" className="primary" disabled={release.isPending}>
        Confirm release
      </button>
      {release.isError && (
        <p role="alert" className="error">
          {problem(release.error)}
        </p>
      )}
    </form>
  );
}

/** Active holds filterable by reason, target and placer; place; release under the two-person rule; history. */
export function HoldsView() {
  const { fb } = useSession();
  const qc = useQueryClient();
  const [filters, setFilters] = useState<Filters>({ state: "ACTIVE", reasonCode: "", placedBy: "", targetPath: "" });
  const filterForm = useForm<Filters>({ defaultValues: filters });
  const q = useInfiniteQuery({
    queryKey: ["holds", filters],
    initialPageParam: undefined as string | undefined,
    queryFn: ({ pageParam }) =>
      fb.client.listRetentionHolds({
        state: filters.state,
        ...(filters.reasonCode ? { reasonCode: filters.reasonCode } : {}),
        ...(filters.placedBy ? { placedBy: filters.placedBy } : {}),
        ...(filters.targetPath ? { targetPath: filters.targetPath } : {}),
        pageSize: 25,
        ...(pageParam ? { cursor: pageParam } : {}),
      }),
    getNextPageParam: (last) => last.nextCursor ?? undefined,
  });
  const refresh = () => void qc.invalidateQueries({ queryKey: ["holds"] });
  const columns: ColumnDef<Hold, unknown>[] = [
    { header: "Hold", accessorKey: "holdId", cell: (c) => <code>{c.row.original.holdId}</code> },
    { header: "Reason", accessorKey: "reasonCode" },
    { header: "Target", accessorKey: "targetPath", cell: (c) => <code>{c.row.original.targetPath}</code> },
    { header: "Placed by", accessorKey: "placedBy" },
    { header: "Placed", accessorKey: "placedAt", cell: (c) => when(c.row.original.placedAt) },
    {
      header: "Release after",
      accessorKey: "releaseAfter",
      cell: (c) => (
        <span>
          {when(c.row.original.releaseAfter)}
          {c.row.original.pastReleaseAfter && (
            <>
              <br />
              <span className="badge danger">Past release-after</span>
            </>
          )}
        </span>
      ),
    },
    { header: "Note", accessorKey: "note", cell: (c) => c.row.original.note ?? "-" },
    { header: "Release", id: "release", cell: (c) => <ReleaseControl hold={c.row.original} onReleased={refresh} /> },
  ];
  const items = q.data?.pages.flatMap((p) => p.items) ?? [];
  return (
    <section>
      <h1>Retention holds</h1>
      <form className="filters" aria-label="Filter holds" onSubmit={(e) => void filterForm.handleSubmit((v) => setFilters({ ...v, reasonCode: v.reasonCode.trim(), placedBy: v.placedBy.trim(), targetPath: v.targetPath.trim() }))(e)}>
        <label htmlFor="f-state">Show</label>
        <select id="f-state" {...filterForm.register("state")}>
          <option value="ACTIVE">Active holds</option>
          <option value="RELEASED">History (released)</option>
        </select>
        <label htmlFor="f-reason">Reason</label>
        <select id="f-reason" {...filterForm.register("reasonCode")}>
          <option value="">Any reason</option>
          {policy.registry.holdReasons.map((r) => (
            <option key={r.code} value={r.code}>
              {r.code}
            </option>
          ))}
        </select>
        <label htmlFor="f-target">Target path</label>
        <input id="f-target" {...filterForm.register("targetPath")} />
        <label htmlFor="f-placer">Placed by (uid)</label>
        <input id="f-placer" {...filterForm.register("placedBy")} />
        <button type="submit">Apply</button>
      </form>
      {q.isPending && <p className="loading">Loading holds…</p>}
      {q.isError && (
        <p role="alert" className="error">
          {problem(q.error)}
        </p>
      )}
      {q.isSuccess && <DataTable caption={filters.state === "ACTIVE" ? "Active holds, newest first" : "Released holds, newest first"} columns={columns} data={items} rowKey={(h) => h.holdId} testId="holds" />}
      {q.hasNextPage && (
        <button type="button" onClick={() => void q.fetchNextPage()}>
          Load more
        </button>
      )}
      <PlaceHold onPlaced={refresh} />
    </section>
  );
}
