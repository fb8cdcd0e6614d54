import { zodResolver } from "@hookform/resolvers/zod";
import { inputs, type CallableOutput } from "@atlasmart/retention-client";
import { useInfiniteQuery, useMutation, useQueryClient } from "@tanstack/react-query";
import type { ColumnDef } from "@tanstack/react-table";
import { useEffect, useMemo, useState } from "react";
import { useForm } from "react-hook-form";
import { z } from "zod";
import { PathText, personName, Problem, when } from "../format";
import { localEcho, parseUtc, pathCheck, RELEASE_AFTER_FORMAT } from "../hold-form";
import type { PolicyIndex } from "../../../functions/src/kernel/policy";
import { useRegistry, type Enforced } from "../registry";
import { useSession, useUserKey } from "../session";
import { DataTable } from "../table";

type Page = CallableOutput<"listRetentionHolds">;
type Hold = Page["items"][number];
interface Filters {
  state: "ACTIVE" | "RELEASED";
  reasonCode: string;
  placedBy: string;
  targetPath: string;
}

/**
 * The place-hold form: the contract's shapes, and the enforced registry's verdict on the path before anything is sent
 * (by the part of the registry of the database the hold goes to, when it governs several).
 */
const placeForm = (policy: PolicyIndex) =>
  z
    .object({ targetPath: z.string().trim().min(1, "the path of the document to hold"), database: z.string(), reasonCode: inputs.code, releaseAfter: z.string(), note: inputs.text })
    .superRefine((v, ctx) => {
      const check = pathCheck(policy, v.targetPath, v.database);
      if (v.targetPath !== "" && !check.ok) ctx.addIssue({ code: "custom", path: ["targetPath"], message: check.code ? `${check.text} (code ${check.code})` : check.text });
      if (v.releaseAfter.trim() !== "" && parseUtc(v.releaseAfter) === null) ctx.addIssue({ code: "custom", path: ["releaseAfter"], message: RELEASE_AFTER_FORMAT });
    });
type PlaceValues = z.infer<ReturnType<typeof placeForm>>;

function PlaceHold({ onPlaced, enforced }: { onPlaced: () => void; enforced: Enforced }) {
  const { fb } = useSession();
  const { policy, words } = enforced;
  const schema = useMemo(() => placeForm(policy), [policy]);
  const form = useForm<PlaceValues>({ resolver: zodResolver(schema), mode: "onChange", defaultValues: { targetPath: "", database: "primary", reasonCode: "", releaseAfter: "", note: "" } });
  const place = useMutation({
    mutationFn: (v: PlaceValues) => {
      const releaseAfterMs = parseUtc(v.releaseAfter);
      return fb.client.placeRetentionHold({
        targetPath: v.targetPath.trim(),
        ...(v.database !== "primary" ? { database: v.database } : {}),
        reasonCode: v.reasonCode,
        ...(releaseAfterMs !== null ? { releaseAfter: new Date(releaseAfterMs).toISOString() } : {}),
        ...(v.note ? { note: v.note } : {}),
      });
    },
    onSuccess: () => {
      form.reset();
      onPlaced();
    },
  });
  // A refusal is about what was sent: once a field changes, it no longer applies and goes.
  const { reset: clearRefusal, isError: refused } = place;
  useEffect(() => {
    const sub = form.watch(() => {
      if (refused) clearRefusal();
    });
    return () => sub.unsubscribe();
  }, [form, refused, clearRefusal]);
  const path = form.watch("targetPath").trim();
  const database = form.watch("database");
  const check = path ? pathCheck(policy, path, database) : null;
  const releaseAfter = form.watch("releaseAfter").trim();
  const releaseAfterMs = parseUtc(releaseAfter);
  const { errors } = form.formState;
  return (
    <form className="card" aria-labelledby="place-heading" onSubmit={(e) => void form.handleSubmit((v) => place.mutate(v))(e)} noValidate>
      <h2 id="place-heading">Place a hold</h2>
      <p className="muted legend">{words.holdLegend} from being deleted or masked, whatever its retention says, until an officer releases it.</p>
      <label htmlFor="hold-target">{words.holdPathLabel}</label>
      <input id="hold-target" placeholder={words.documentExample} aria-describedby="hold-target-check" aria-invalid={errors.targetPath ? true : undefined} {...form.register("targetPath")} />
      <p id="hold-target-check" className={errors.targetPath || (check && !check.ok) ? "field-error" : "muted"} data-testid="path-check">
        {check ? (
          <>
            {check.text}
            {check.code && <span className="code-detail"> Code: {check.code}</span>}
          </>
        ) : (
          (errors.targetPath?.message ?? words.holdPathHint)
        )}
      </p>
      {policy.cells().length > 1 && (
        <>
          <label htmlFor="hold-database">Database</label>
          <select id="hold-database" {...form.register("database")}>
            {policy.cells().map((c) => (
              <option key={c} value={c}>
                {c === "primary" ? "primary (the app's main database)" : `${c}: ${policy.database(c)?.description ?? ""}`}
              </option>
            ))}
          </select>
        </>
      )}
      <label htmlFor="hold-reason">Reason for the hold</label>
      <select id="hold-reason" aria-invalid={errors.reasonCode ? true : undefined} aria-describedby={errors.reasonCode ? "hold-reason-error" : undefined} {...form.register("reasonCode")}>
        <option value="">Choose a reason</option>
        {policy.registry.holdReasons.map((r) => (
          <option key={r.code} value={r.code}>
            {r.code}: {r.description}
            {r.twoPersonRelease ? " (two-person release)" : ""}
          </option>
        ))}
      </select>
      {errors.reasonCode && (
        <p className="field-error" id="hold-reason-error">
          Choose a reason.
        </p>
      )}
      <label htmlFor="hold-release-after">Release after (optional): date and time in UTC</label>
      <input id="hold-release-after" inputMode="numeric" placeholder="YYYY-MM-DD HH:MM (UTC)" aria-describedby="hold-release-after-hint" aria-invalid={errors.releaseAfter ? true : undefined} {...form.register("releaseAfter")} />
      <p id="hold-release-after-hint" className={releaseAfter !== "" && releaseAfterMs === null ? "field-error" : "muted"} data-testid="release-after-hint">
        {releaseAfter === ""
          ? "In UTC, not your local time. Leave it empty to let it be released at any time."
          : releaseAfterMs === null
            ? RELEASE_AFTER_FORMAT
            : `No one can release it before ${localEcho(releaseAfterMs)}`}
      </p>
      <label htmlFor="hold-note">Note (optional, staff only; never shown to the subject)</label>
      <textarea id="hold-note" rows={2} {...form.register("note")} />
      <div className="buttons">
        <button type="submit" className="primary" disabled={place.isPending}>
          Place hold
        </button>
        <button
          type="button"
          onClick={() => {
            form.reset();
            place.reset();
          }}
        >
          Clear
        </button>
      </div>
      {place.isError && <Problem error={place.error} />}
      {place.isSuccess && (
        <p role="status" className="ok" data-testid="hold-placed">
          Hold placed: {place.data.holdId}
        </p>
      )}
    </form>
  );
}

function ReleaseControl({ hold, people, onReleased }: { hold: Hold; people: Page["people"]; onReleased: (hold: Hold) => void }) {
  const { fb } = useSession();
  const [open, setOpen] = useState(false);
  const form = useForm<{ reason: string }>({ resolver: zodResolver(z.object({ reason: inputs.text.min(1, "why the hold no longer applies") })), defaultValues: { reason: "" } });
  const release = useMutation({ mutationFn: (reason: string) => fb.client.releaseRetentionHold({ holdId: hold.holdId, reason }), onSuccess: () => onReleased(hold) });
  const { setFocus } = form;
  // The reason box takes the focus as soon as it opens: where the officer types next.
  useEffect(() => {
    if (open) setFocus("reason");
  }, [open, setFocus]);
  const { reset: clearRefusal, isError: refused } = release;
  useEffect(() => {
    const sub = form.watch(() => {
      if (refused) clearRefusal();
    });
    return () => sub.unsubscribe();
  }, [form, refused, clearRefusal]);
  if (hold.state !== "ACTIVE")
    return (
      <span data-testid="released">
        Released {when(hold.releasedAt)} by {personName(people, hold.releasedBy)}
        {hold.releaseReason ? (
          <>
            : “{hold.releaseReason}”
          </>
        ) : null}
      </span>
    );
  if (hold.releaseRefusal === "TWO_PERSON_RULE") return <span className="badge">Awaiting a second officer: you placed it</span>;
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
      <input id={id} aria-describedby={`${id}-hint`} {...form.register("reason")} />
      <p id={`${id}-hint`} className={form.formState.errors.reason ? "field-error" : "muted"}>
        {form.formState.errors.reason ? `Say ${form.formState.errors.reason.message}.` : "Kept with the hold's history; the evidence records its hash."}
      </p>
      <div className="buttons">
        <button type="submit" className="primary" disabled={release.isPending}>
          Confirm release
        </button>
        <button
          type="button"
          onClick={() => {
            form.reset();
            release.reset();
            setOpen(false);
          }}
        >
          Cancel
        </button>
      </div>
      {release.isError && <Problem error={release.error} />}
    </form>
  );
}

/** The value after it has stopped changing for `ms`: a typed filter is applied once the typing pauses. */
function useSettled<T>(value: T, ms: number): T {
  const [settled, setSettled] = useState(value);
  useEffect(() => {
    const t = setTimeout(() => setSettled(value), ms);
    return () => clearTimeout(t);
  }, [value, ms]);
  return settled;
}

/** Active holds filterable by reason, target and placer; place; release under the two-person rule; history. */
export function HoldsView() {
  const registry = useRegistry();
  const { fb } = useSession();
  const userKey = useUserKey();
  const qc = useQueryClient();
  const [filters, setFilters] = useState<Filters>({ state: "ACTIVE", reasonCode: "", placedBy: "", targetPath: "" });
  const [notice, setNotice] = useState<string | null>(null);
  const typedTarget = useSettled(filters.targetPath.trim(), 400);
  const typedPlacer = useSettled(filters.placedBy.trim(), 400);
  // A partly typed path or email is not sent: the field says what it still needs.
  const targetOk = typedTarget === "" || inputs.documentPath.safeParse(typedTarget).success;
  const placerOk = typedPlacer === "" || inputs.id.safeParse(typedPlacer).success || z.email().safeParse(typedPlacer).success;
  const applied = { state: filters.state, reasonCode: filters.reasonCode, targetPath: targetOk ? typedTarget : "", placedBy: placerOk ? typedPlacer : "" };
  const q = useInfiniteQuery({
    queryKey: [...userKey, "holds", applied],
    initialPageParam: undefined as string | undefined,
    queryFn: ({ pageParam }) =>
      fb.client.listRetentionHolds({
        state: applied.state,
        ...(applied.reasonCode ? { reasonCode: applied.reasonCode } : {}),
        ...(applied.placedBy ? { placedBy: applied.placedBy } : {}),
        ...(applied.targetPath ? { targetPath: applied.targetPath } : {}),
        pageSize: 25,
        ...(pageParam ? { cursor: pageParam } : {}),
      }),
    getNextPageParam: (last) => last.nextCursor ?? undefined,
  });
  const refresh = () => void qc.invalidateQueries({ queryKey: [...userKey, "holds"] });
  const people = Object.assign({}, ...(q.data?.pages.map((p) => p.people) ?? [])) as Page["people"];
  const set = (patch: Partial<Filters>) => {
    setNotice(null);
    setFilters((f) => ({ ...f, ...patch }));
  };
  const columns: ColumnDef<Hold, unknown>[] = [
    { header: "Hold", accessorKey: "holdId", cell: (c) => <code>{c.row.original.holdId}</code> },
    { header: "Reason", accessorKey: "reasonCode", cell: (c) => <span title={c.row.original.reasonDescription ?? undefined}>{c.row.original.reasonCode}</span> },
    { header: "Target", accessorKey: "targetPath", cell: (c) => <PathText path={c.row.original.targetPath} /> },
    // Under a registry with several governed databases: where the hold lives (every database a scope hold is in).
    ...((q.data?.pages ?? []).some((p) => p.items.some((h) => h.databases !== undefined))
      ? [{ header: "Database", id: "database", accessorFn: (h: Hold) => `${(h.databases ?? []).join(", ")}${h.placing ? " (placing)" : ""}` } satisfies ColumnDef<Hold, unknown>]
      : []),
    { header: "Placed by", id: "placedBy", accessorFn: (h) => personName(people, h.placedBy) },
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
    {
      header: filters.state === "ACTIVE" ? "Release" : "Released",
      id: "release",
      cell: (c) => (
        <ReleaseControl
          hold={c.row.original}
          people={people}
          onReleased={(h) => {
            setNotice(`Hold ${h.holdId} on ${h.targetPath} is released. It is listed under History (released).`);
            refresh();
          }}
        />
      ),
    },
  ];
  const items = q.data?.pages.flatMap((p) => p.items) ?? [];
  return (
    <section>
      <h1>Retention holds</h1>
      <p className="muted legend">Filters apply as you change them.</p>
      <form className="filters" aria-label="Filter holds" onSubmit={(e) => e.preventDefault()}>
        <label htmlFor="f-state">Show</label>
        <select id="f-state" value={filters.state} onChange={(e) => set({ state: e.target.value as Filters["state"] })}>
          <option value="ACTIVE">Active holds</option>
          <option value="RELEASED">History (released)</option>
        </select>
        <label htmlFor="f-reason">Reason</label>
        <select id="f-reason" value={filters.reasonCode} onChange={(e) => set({ reasonCode: e.target.value })}>
          <option value="">Any reason</option>
          {(registry.enforced?.policy.registry.holdReasons ?? []).map((r) => (
            <option key={r.code} value={r.code}>
              {r.code}
            </option>
          ))}
        </select>
        <label htmlFor="f-target">Target path</label>
        <input id="f-target" value={filters.targetPath} aria-invalid={targetOk ? undefined : true} aria-describedby={targetOk ? undefined : "f-target-error"} onChange={(e) => set({ targetPath: e.target.value })} />
        <label htmlFor="f-placer">Placed by (staff email)</label>
        <input id="f-placer" type="email" value={filters.placedBy} aria-invalid={placerOk ? undefined : true} aria-describedby={placerOk ? undefined : "f-placer-error"} onChange={(e) => set({ placedBy: e.target.value })} />
        {!targetOk && (
          <p className="field-error" id="f-target-error">
            The target filter needs a whole document path (collection and id pairs).
          </p>
        )}
        {!placerOk && (
          <p className="field-error" id="f-placer-error">
            The placed-by filter needs a whole email address.
          </p>
        )}
      </form>
      {notice && (
        <p role="status" className="notice ok" data-testid="hold-released">
          {notice}
        </p>
      )}
      {q.isPending && <p className="loading">Loading holds…</p>}
      {q.isError && <Problem error={q.error} />}
      {q.isSuccess && <DataTable caption={filters.state === "ACTIVE" ? "Active holds, newest first" : "Released holds, newest first"} columns={columns} data={items} rowKey={(h) => h.holdId} testId="holds" />}
      {q.hasNextPage && (
        <button type="button" onClick={() => void q.fetchNextPage()}>
          Load more
        </button>
      )}
      {registry.enforced ? <PlaceHold onPlaced={refresh} enforced={registry.enforced} /> : registry.error ? <Problem error={registry.error} /> : <p className="loading">Loading the retention registry…</p>}
    </section>
  );
}
