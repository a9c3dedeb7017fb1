import { describe, expect, it } from "vitest";
import { buildInsert } from "../src/decide.js";
import { InvalidArgument } from "../src/errors.js";
import { normalizeScheduleSlots, SCHEDULED_SUBMIT, scheduleLockKey, scheduleSlotKey, slotsToSubmit } from "../src/schedule.js";
import { SUBMIT } from "../src/rules.js";

describe("schedule slots", () => {
  it("keys a slot as cairnq:schedule:<schedule name>:<slot ms>", () => {
    expect(scheduleSlotKey("nightly", 1_700_000_000_000)).toBe("cairnq:schedule:nightly:1700000000000");
    expect(scheduleLockKey("nightly")).toBe("cairnq:schedule:nightly");
  });

  it("submits only the slots after the last one, ascending, once each", () => {
    expect(slotsToSubmit([30, 10, 20, 20], null)).toEqual([10, 20, 30]);
    expect(slotsToSubmit([30, 10, 20], 20)).toEqual([30]);
    expect(slotsToSubmit([10], 10)).toEqual([]);
  });

  it("inserts like SUBMIT, with run_at_ms = the slot", () => {
    const params = { taskId: "task_x", name: "n", queue: "default", payload: {}, metadata: {}, maxAttempts: 3, priority: 0, runAtDelayMs: 99, parentId: null, rootId: null, correlationId: null, runAtMs: 12345 };
    const row = buildInsert(SCHEDULED_SUBMIT, params, 777);
    expect(row.run_at_ms).toBe(12345);
    expect(row.created_at_ms).toBe(777);
    expect({ ...row, run_at_ms: 0 }).toEqual({ ...buildInsert(SUBMIT, params, 777), run_at_ms: 0 });
  });

  it("validates a batch", () => {
    expect(normalizeScheduleSlots({ schedule: "s", slotsMs: [2, 1, 2], task: { name: "n" } }).slotsMs).toEqual([1, 2]);
    const bad: unknown[] = [
      null,
      { schedule: "", slotsMs: [], task: { name: "n" } },
      { schedule: "s", slotsMs: "1", task: { name: "n" } },
      { schedule: "s", slotsMs: [1.5], task: { name: "n" } },
      { schedule: "s", slotsMs: [-1], task: { name: "n" } },
      { schedule: "s", slotsMs: ["1"], task: { name: "n" } },
      { schedule: "s", slotsMs: [1], task: null },
    ];
    for (const input of bad) expect(() => normalizeScheduleSlots(input as never)).toThrow(InvalidArgument);
  });
});
