import { describe, expect, it } from "vitest";
import { InvalidArgument } from "../src/errors.js";
import { TASK_ID_PATTERN, isTaskId, newTaskId, newWorkerId, taskIdTime } from "../src/ids.js";

const TIME_MAX = 2 ** 48 - 1;
const ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

describe("newTaskId", () => {
  it("is task_ + a 26-character ULID matching the protocol pattern", () => {
    const id = newTaskId();
    expect(id).toHaveLength(31);
    expect(id).toMatch(TASK_ID_PATTERN);
    expect(isTaskId(id)).toBe(true);
  });

  it("encodes the given millisecond in Crockford base 32, most significant first", () => {
    // The ULID specification's own example time.
    expect(newTaskId(1_469_918_176_385).slice(5, 15)).toBe("01ARYZ6S41");
    expect(newTaskId(0).slice(5, 15)).toBe("0000000000");
    expect(newTaskId(TIME_MAX).slice(5, 15)).toBe("7ZZZZZZZZZ");
    for (const ms of [0, 1, 31, 32, 1_700_000_000_000, TIME_MAX]) {
      const id = newTaskId(ms);
      expect(id).toMatch(TASK_ID_PATTERN);
      expect(taskIdTime(id)).toBe(ms);
    }
  });

  it("defaults to the current time", () => {
    const before = Date.now();
    const ms = taskIdTime(newTaskId());
    expect(ms).toBeGreaterThanOrEqual(before);
    expect(ms).toBeLessThanOrEqual(Date.now());
  });

  it("sorts by millisecond", () => {
    const times = Array.from({ length: 200 }, (_, i) => 1_700_000_000_000 + i * 7);
    const ids = [...times].reverse().flatMap((ms) => [newTaskId(ms), newTaskId(ms)]);
    const sorted = [...ids].sort();
    expect(sorted.map(taskIdTime)).toEqual(times.flatMap((ms) => [ms, ms]));
    // Adjacent milliseconds: every id of the earlier one sorts first.
    const early = Array.from({ length: 50 }, () => newTaskId(1_000));
    const late = Array.from({ length: 50 }, () => newTaskId(1_001));
    expect(early.every((a) => late.every((b) => a < b))).toBe(true);
  });

  it("draws fresh randomness per id instead of incrementing (not monotonic)", () => {
    const ids = Array.from({ length: 1000 }, () => newTaskId(1_700_000_000_000));
    expect(new Set(ids).size).toBe(ids.length);
    // A monotonic generator would emit them already sorted.
    expect([...ids].sort()).not.toEqual(ids);
    // Every base-32 digit shows up in the random part, including the top ones.
    const digits = new Set(ids.flatMap((id) => [...id.slice(15)]));
    expect([...digits].sort().join("")).toBe(ALPHABET);
  });

  it("rejects times a ULID cannot hold", () => {
    for (const bad of [-1, 1.5, Number.NaN, TIME_MAX + 1, Number.POSITIVE_INFINITY]) {
      let caught: unknown;
      try {
        newTaskId(bad);
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(InvalidArgument);
      expect((caught as InvalidArgument).argument).toBe("nowMs");
      expect((caught as Error).message).toContain(String(bad));
    }
  });
});

describe("newWorkerId", () => {
  it("is worker_ + a ULID of the current time, unique per call", () => {
    const before = Date.now();
    const id = newWorkerId();
    expect(id).toMatch(/^worker_[0-7][0-9A-HJKMNP-TV-Z]{25}$/);
    expect(isTaskId(id)).toBe(false);
    expect(taskIdTime(`task_${id.slice(7)}`)).toBeGreaterThanOrEqual(before);
    expect(newWorkerId()).not.toBe(id);
  });
});

describe("isTaskId", () => {
  it("accepts only the protocol pattern", () => {
    expect(isTaskId("task_01ARYZ6S41TSV4RRFFQ69G5FAV")).toBe(true);
    for (const bad of [
      "task_01arYZ6S41TSV4RRFFQ69G5FAV", // lowercase
      "task_81ARYZ6S41TSV4RRFFQ69G5FAV", // beyond 48-bit time
      "task_01ARYZ6S41TSV4RRFFQ69G5FAI", // I is not Crockford
      "task_01ARYZ6S41TSV4RRFFQ69G5FAU", // nor U
      "task_01ARYZ6S41TSV4RRFFQ69G5FA", // too short
      "task_01ARYZ6S41TSV4RRFFQ69G5FAVV", // too long
      "01ARYZ6S41TSV4RRFFQ69G5FAV",
      "",
      null,
      42,
    ]) {
      expect(isTaskId(bad)).toBe(false);
    }
  });
});

describe("taskIdTime", () => {
  it("rejects anything that is not a task id", () => {
    expect(() => taskIdTime("task_nope")).toThrow(InvalidArgument);
    expect(() => taskIdTime("task_nope")).toThrow('"task_nope" is not a task id');
    expect(() => taskIdTime(7 as unknown as string)).toThrow("7 is not a task id");
    expect(() => taskIdTime({} as unknown as string)).toThrow("an object is not a task id");
    expect(() => taskIdTime([] as unknown as string)).toThrow("an array is not a task id");
    expect(() => taskIdTime(null as unknown as string)).toThrow("null is not a task id");
  });
});
