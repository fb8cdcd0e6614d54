import { describe, expect, it } from "vitest";
import { erasureCompleteText, goneByText } from "../../../console/src/format";
import { GONE_BY_UNKNOWN } from "../../../functions/src/kernel/request-states";

describe("the console's 'fully gone by'", () => {
  it("shows the date in UTC, and whether ERASURE_COMPLETE is recorded", () => {
    expect(goneByText({ fullyGoneBy: "2027-01-05T02:00:00.000Z", fullyGoneByUnknown: null })).toBe("2027-01-05 02:00 UTC");
    expect(erasureCompleteText({ fullyGoneBy: "2027-01-05T02:00:00.000Z", erasureCompleteAt: null })).toBe("not yet: recorded once the date has passed");
    expect(erasureCompleteText({ fullyGoneBy: "2027-01-05T02:00:00.000Z", erasureCompleteAt: "2027-01-06T02:00:00.000Z" })).toBe("recorded 2027-01-06 02:00 UTC");
    expect(erasureCompleteText({ fullyGoneBy: null, erasureCompleteAt: null })).toBe("not yet");
  });

  it("says why there is no date, in words, for every reason the contract names", () => {
    const said = GONE_BY_UNKNOWN.map((u) => goneByText({ fullyGoneBy: null, fullyGoneByUnknown: u }));
    expect(new Set(said).size).toBe(GONE_BY_UNKNOWN.length);
    expect(goneByText({ fullyGoneBy: null, fullyGoneByUnknown: "RETAINED_UNDER_HOLD" })).toBe("no date: some data is still kept under a retention hold");
    expect(goneByText({ fullyGoneBy: null, fullyGoneByUnknown: null })).toBe("not recorded: purged before the service recorded this date");
  });
});
