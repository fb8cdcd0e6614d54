import { describe, expect, it } from "vitest";
import { ExplainDeletionInput } from "../../../functions/src/contract/evidence";
import { inputs } from "../../../functions/src/contract/inputs";

describe("the path explainDeletion takes", () => {
  it("a document path, or a Cloud Storage object as evidence names it", () => {
    for (const ok of ["tenants/t-acme/orders/o-1", "gs://demo-p.appspot.com/users/u-1/avatar.jpg", "gs://b-1/a name with spaces#and hash.jpg"]) {
      expect(inputs.evidencePath.safeParse(ok).success, ok).toBe(true);
      expect(ExplainDeletionInput.safeParse({ path: ok }).success, ok).toBe(true);
    }
  });

  it("refuses a collection path, an object without a name or a bucket, and control characters", () => {
    for (const bad of ["tenants/t-acme/orders", "gs://b-1/", "gs:///name", "gs://B/upper-bucket", "gs://b-1/line\nbreak", "gs://b-1/nul\u0000"]) {
      expect(inputs.evidencePath.safeParse(bad).success, JSON.stringify(bad)).toBe(false);
    }
  });
});
