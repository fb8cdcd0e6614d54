/** The hold form's path check and its release-after time, in words, before anything is sent. */
import { describe, expect, it } from "vitest";
import { localEcho, parseUtc, pathCheck as checkWith } from "../../../console/src/hold-form";
import { appWords } from "../../../console/src/app-words";
import { socialPolicy } from "../../../examples/social/registry";
import { policy } from "../../../functions/src/platform/registry";

const pathCheck = (path: string) => checkWith(policy(), path);

describe("the hold form", () => {
  it("explains what is wrong with a path in words, with the server's code where it foresees a refusal", () => {
    expect(pathCheck("tenants/t-acme/orders")).toEqual({ ok: false, code: null, text: "“orders” is a collection, not a document: add the document's id after it (tenants/t-acme/orders/…)." });
    expect(pathCheck("tenants//orders/o-1").text).toMatch(/^The path has an empty part/);
    expect(pathCheck("tenants/t-acme/pets/p-1")).toEqual({ ok: false, code: "NOT_GOVERNED_PATH", text: "No retention policy covers “pets”, so there is nothing a hold could protect here." });
    expect(pathCheck("sessions/s-1001")).toMatchObject({ ok: false, code: "HOLD_NOT_ALLOWED_FOR_CLASS" });
    expect(pathCheck("tenants/t-acme/orders/o-1002")).toEqual({ ok: true, code: null, text: "A document of class finance-7y: it may be held." });
    expect(pathCheck("tenants/t-acme")).toMatchObject({ ok: true, text: "A tenant: the hold covers it and everything under it." });
    // An object is held through its document: the form says which to enter.
    const object = pathCheck("gs://demo.appspot.com/tenants/t-acme/users/u-1001/a.jpg");
    expect(object.ok).toBe(false);
    expect(object.text).toMatch(/held through the document it is held with/);
  });

  it("under another app's registry, checks its paths and calls a subtree root by what it is", () => {
    const social = socialPolicy();
    expect(checkWith(social, "chats/ch-trio")).toEqual({ ok: true, code: null, text: "A subtree root: the hold covers it and everything under it." });
    expect(checkWith(social, "posts/p-ana-1")).toEqual({ ok: true, code: null, text: "A document of class user-delete: it may be held." });
    expect(checkWith(social, "tenants/t-acme")).toMatchObject({ ok: false, code: "NOT_GOVERNED_PATH" });
  });

  it("speaks the registry's words: the scope's name, or none; its own paths as examples, never another app's", () => {
    const atlasmart = appWords(policy());
    expect(atlasmart).toMatchObject({ scope: "tenant", holdPathLabel: "Document or tenant path", requestsWhose: "one person's data (or a whole tenant's)" });
    expect(atlasmart.holdPathHint).toContain("or a tenant: tenants/{tenantId}, which holds everything under it");
    expect(atlasmart.documentExample).toMatch(/^tenants\/\{tenantId\}\//);
    const social = appWords(socialPolicy());
    expect(social).toMatchObject({ scope: null, holdPathLabel: "Document path", requestsWhose: "one person's data", holdLegend: "A hold keeps a document (or everything under chats/{chatId})" });
    expect(social.holdPathHint).toContain("or chats/{chatId}, which holds everything under it");
    expect(social.documentExample).toMatch(/^(chats|posts|users)\/\{\w+\}\/\w+\/\{\w+\}$/);
    for (const words of [social]) expect(JSON.stringify(words)).not.toMatch(/tenant|t-acme|orders/);
  });

  it("reads release-after as UTC, in one written form", () => {
    expect(parseUtc("2027-03-31 17:00")).toBe(Date.parse("2027-03-31T17:00:00Z"));
    expect(parseUtc("2027-03-31T17:00")).toBe(Date.parse("2027-03-31T17:00:00Z"));
    expect(parseUtc("03/31/2027")).toBeNull();
    expect(parseUtc("2027-02-31 17:00")).toBeNull();
  });

  it("echoes a release-after time in UTC and in the officer's own zone", () => {
    expect(localEcho(Date.parse("2027-03-31T17:00:00Z"))).toMatch(/^2027-03-31 17:00 UTC, which is .*2027.* where you are\.$/);
  });
});
