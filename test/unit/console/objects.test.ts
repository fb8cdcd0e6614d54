import { describe, expect, it } from "vitest";
import { collectionOf, objectOutcomes } from "../../../console/src/format";

describe("the console's Cloud Storage objects", () => {
  it("groups a plan's objects by bucket, documents by collection", () => {
    expect(collectionOf("gs://demo.appspot.com/tenants/t-acme/users/u-1/a.jpg")).toBe("objects in demo.appspot.com");
    expect(collectionOf("tenants/t-acme/users/u-1")).toBe("users");
  });

  it("shows what an object batch's entry says about the objects it lists: the generation and the outcome", () => {
    const detail = { objects: "gs://b/u/1/a.jpg#17 deleted\ngs://b/u/1/b.jpg#18 held h-1\ngs://b/u/2/c.jpg#9 changed to #10" };
    expect(objectOutcomes({ action: "PURGE_OBJECTS", paths: ["gs://b/u/1/b.jpg"], detail })).toEqual(["gs://b/u/1/b.jpg#18 held h-1"]);
    expect(objectOutcomes({ action: "PURGE_OBJECTS", paths: ["gs://b/u/1/a.jpg", "gs://b/u/2/c.jpg"], detail })).toEqual(["gs://b/u/1/a.jpg#17 deleted", "gs://b/u/2/c.jpg#9 changed to #10"]);
    expect(objectOutcomes({ action: "PURGE_BATCH", paths: ["gs://b/u/1/a.jpg"], detail })).toEqual([]);
  });
});
