import { describe, expect, it } from "vitest";
import { buildInsert } from "../src/decide.js";
import { InvalidArgument } from "../src/errors.js";
import { normalizeScheduleSlots, requireScheduleName, SCHEDULED_SUBMIT, scheduleLockKey, scheduleSlotKey, slotsToSubmit } from "../src/schedule.js";
import { SUBMIT } from "../src/rules.js";

describe("schedule slots", () => {
  it("keys a slot as cairnq:schedule:<schedule name>:<slot ms>", () => {
    expect(scheduleSlotKey("nightly", 1_700_000_000_000)).toBe("cairnq:schedule:nightly:1700000000000");
    expect(scheduleLockKey("nightly")).toBe("cairnq:schedule:nightly");
  });

  it("refuses a schedule name whose longest slot key is over the key limit or holds a character no backend stores", () => {
    // cairnq:schedule: (16) + name + ':' + 16 digits of the latest Date: 991 bytes of name fit in 1024.
    expect(() => requireScheduleName("n".repeat(991), "the name")).not.toThrow();
    expect(() => requireScheduleName("n".repeat(992), "the name")).toThrow(
      /^the name is too long: its slot keys \(cairnq:schedule:<name>:<slot ms>\) would be up to 1025 bytes .* at most 991 bytes$/,
    );
    // Bytes, not characters: 331 three-byte characters are 993 bytes.
    expect(() => requireScheduleName("€".repeat(331), "the name")).toThrow(/up to 1026 bytes/);
    expect(() => requireScheduleName("a\u0000b", "the name")).toThrow(InvalidArgument);
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
