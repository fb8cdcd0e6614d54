/**
 * Expiry is a business fact: an expired session is invisible to the product read path and to clients at
 * once, while its document still waits for the TTL sweeper. Children written through the one write path
 * carry their parent's expiry.
 */
import type { RulesTestEnvironment } from "@firebase/rules-unit-testing";
import { assertFails, assertSucceeds } from "@firebase/rules-unit-testing";
import { Timestamp, collection, doc, getDoc, getDocs, query, where } from "firebase/firestore";
import { FieldValue } from "firebase-admin/firestore";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DomainError } from "../../../functions/src/kernel/errors";
import { DAY_MS } from "../../../functions/src/kernel/policy";
import { writeGoverned } from "../../../functions/src/platform/governed-repo";
import { getVisible, readVisible } from "../../../functions/src/ttl/product-reads";
import { getSessionIfValid, requireValidSession } from "../../../examples/atlasmart/sessions";
import { clearFirestore, db } from "../../helpers/emulator";
import { clientAs, startRulesEnv } from "../../helpers/rules";
import { TENANT, putGoverned } from "./fixtures";

const OWNER = { uid: "u-vis", claims: { tenantId: TENANT }, label: "session owner" };

describe("business visibility of expired data", () => {
  let env: RulesTestEnvironment;
  const now = Date.now();

  beforeAll(async () => {
    await clearFirestore();
    env = await startRulesEnv();
    // The sessions' tenant: its data shows only while its document exists and carries no closure.
    await putGoverned(`tenants/${TENANT}`, { name: "Acme" }, { createdAtMs: now - DAY_MS });
    await putGoverned("sessions/s-live", { uid: OWNER.uid }, { createdAtMs: now - DAY_MS, expireAtMs: now + 29 * DAY_MS });
    await putGoverned("sessions/s-expired", { uid: OWNER.uid }, { createdAtMs: now - 31 * DAY_MS, expireAtMs: now - DAY_MS });
    await putGoverned("sessions/s-soft", { uid: OWNER.uid }, { createdAtMs: now - DAY_MS, expireAtMs: now + 29 * DAY_MS, lifecycleState: "SOFT_DELETED" });
  });
  afterAll(async () => {
    await env.cleanup();
  });

  it("the expired session's document still exists: only the sweeper removes storage", async () => {
    expect((await db().doc("sessions/s-expired").get()).exists).toBe(true);
  });

  it("the product read path returns only the live session", async () => {
    const visible = await readVisible(db().collection("sessions").where("uid", "==", OWNER.uid), now);
    expect(visible.map((d) => d.id)).toEqual(["s-live"]);
    expect(await getVisible("sessions/s-expired", now)).toBeNull();
    expect(await getVisible("sessions/s-soft", now)).toBeNull();
    expect((await getVisible("sessions/s-live", now))?.id).toBe("s-live");
  });

  it("a session past its business expiry is rejected, with a stable reason", async () => {
    expect(await getSessionIfValid("s-live", now)).toMatchObject({ sessionId: "s-live", uid: OWNER.uid, tenantId: TENANT });
    expect(await getSessionIfValid("s-expired", now)).toBeNull();
    await expect(requireValidSession("s-expired", now)).rejects.toMatchObject({ reason: "SESSION_EXPIRED", kind: "failed-precondition" });
    await expect(requireValidSession("s-soft", now)).rejects.toMatchObject({ reason: "SESSION_NOT_ACTIVE" });
    await expect(requireValidSession("s-missing", now)).rejects.toBeInstanceOf(DomainError);
    // The same session was valid the moment before it expired: expiry, not deletion, is what counts.
    const expiredAt = ((await db().doc("sessions/s-expired").get()).get("expireAt") as { toMillis(): number }).toMillis();
    expect(await getSessionIfValid("s-expired", expiredAt - 1)).not.toBeNull();
  });

  it("a closed tenant's live session, and everything else of it, is out of the product read path", async () => {
    const tenant = db().doc(`tenants/${TENANT}`);
    await tenant.update({ closure: { requestId: "dr-x", reason: "TENANT_CLOSURE" } });
    try {
      await expect(requireValidSession("s-live", now)).rejects.toMatchObject({ reason: "TENANT_CLOSED", kind: "failed-precondition" });
      expect(await getVisible("sessions/s-live", now)).toBeNull();
      expect(await readVisible(db().collection("sessions").where("uid", "==", OWNER.uid), now)).toEqual([]);
    } finally {
      await tenant.update({ closure: FieldValue.delete() });
    }
    expect((await getVisible("sessions/s-live", now))?.id).toBe("s-live");
  });

  it("a client cannot read the expired session, and its own query returns only the live one", async () => {
    const client = clientAs(env, OWNER);
    await assertSucceeds(getDoc(doc(client, "sessions/s-live")));
    await assertFails(getDoc(doc(client, "sessions/s-expired")));
    await assertFails(getDoc(doc(client, "sessions/s-soft")));
    // Rules judge a list by its filters: the query must prove ACTIVE and not expired. A small margin keeps
    // the client's clock from falling behind request.time.
    const live = await assertSucceeds(
      getDocs(
        query(
          collection(client, "sessions"),
          where("uid", "==", OWNER.uid),
          where("tenantId", "==", TENANT),
          where("lifecycleState", "==", "ACTIVE"),
          where("expireAt", ">", Timestamp.fromMillis(Date.now() + 60_000)),
        ),
      ),
    );
    expect(live.docs.map((d) => d.id)).toEqual(["s-live"]);
    await assertFails(
      getDocs(query(collection(client, "sessions"), where("uid", "==", OWNER.uid), where("tenantId", "==", TENANT), where("lifecycleState", "==", "ACTIVE"))),
    );
  });
});

describe("children inherit their parent's expiry through the one write path", () => {
  it("a token written under a session carries the session's expireAt", async () => {
    const now = Date.parse("2026-11-20T00:00:00Z");
    const session = await writeGoverned("sessions/s-inherit", { uid: "u-1001" }, TENANT, now);
    expect(session.expireAtMs).toBe(now + 30 * DAY_MS);
    await writeGoverned("sessions/s-inherit/tokens/tk-1", { kind: "refresh" }, TENANT, now + 5 * DAY_MS);
    const [parent, child] = await db().getAll(db().doc("sessions/s-inherit"), db().doc("sessions/s-inherit/tokens/tk-1"));
    expect(child!.get("expireAt")).toEqual(parent!.get("expireAt"));
    expect(child!.get("retentionClass")).toBe("session-child-inherit");
  });
});
