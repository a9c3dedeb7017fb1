import { describe, expect, it } from "vitest";
import { pageGroups } from "../src/group-draw.js";

describe("pageGroups (group-draw.ts)", () => {
  it("reads a list page (one row per group, its tasks as a JSON list in any order, its claims in the rate window) best first: priority, then the older id", () => {
    const rows = [
      { group_key: "a", served_seq: 3, touched: 1, rate_n: 2, ids: JSON.stringify([[0, "task_0B"], [5, "task_0C"], [0, "task_0A"], [5, "task_09"]]) },
      { group_key: "b", served_seq: 4, touched: 0, rate_n: 0, ids: "[]" },
    ];
    expect(pageGroups(rows)).toEqual([
      { group: "a", seq: 3, touched: 1, inWindow: 2, taskIds: ["task_09", "task_0C", "task_0A", "task_0B"] },
      { group: "b", seq: 4, touched: 0, inWindow: 0, taskIds: [] },
    ]);
  });

  it("reads a join page (one row per task in the walk's order, a group without due work once with a null id; a count as Postgres's bigint text) in that order", () => {
    const rows = [
      { group_key: "a", served_seq: 0, touched: 2, rate_n: "1", id: "task_02" },
      { group_key: "a", served_seq: 0, touched: 2, rate_n: "1", id: "task_01" },
      { group_key: "b", served_seq: 1, touched: 0, rate_n: "0", id: null },
    ];
    expect(pageGroups(rows)).toEqual([
      { group: "a", seq: 0, touched: 2, inWindow: 1, taskIds: ["task_02", "task_01"] },
      { group: "b", seq: 1, touched: 0, inWindow: 0, taskIds: [] },
    ]);
  });
});
