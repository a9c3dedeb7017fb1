import { describe, expect, it } from "vitest";
import { InvalidArgument, MAX_DELAY_MS, SerializationError, UnsupportedBackend, defineTask, scheduleSlotKey } from "@cairnq/protocol";
import { MemoryStore } from "@cairnq/conformance";
import { systemClock } from "@cairnq/runtime";
import { trackTimers, waitFor } from "./support/helpers.js";
import { makeWorker } from "./support/worker.js";
import { CronSeries, IntervalSeries, SCHEDULE_LEAD_MS, scheduleEntry, Scheduler } from "../src/scheduler.js";

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());
const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe("scheduleEntry", () => {
  it("names the schedule after the task unless opts.name is given, and carries the task options", () => {
    const entry = scheduleEntry("report", { everyMs: 60_000 }, { payload: { a: 1 }, queue: "cron", priority: 5, maxAttempts: 1, backfillMs: 10 });
    expect(entry.name).toBe("report");
    expect(entry.task).toEqual({ name: "report", payload: { a: 1 }, queue: "cron", priority: 5, maxAttempts: 1 });
    expect(entry.backfillMs).toBe(10);
    expect(scheduleEntry(defineTask("report"), "0 * * * *", { name: "hourly" }).name).toBe("hourly");
    expect(scheduleEntry("report", "0 * * * *").backfillMs).toBe(0);
  });

  it("takes a TaskDef's queue, maxAttempts and priority as defaults, as submit(def) does; options given win", () => {
    const def = defineTask("report.build", { queue: "reports", maxAttempts: 5, priority: 7 });
    expect(scheduleEntry(def, { everyMs: 200 }).task).toEqual({ name: "report.build", queue: "reports", maxAttempts: 5, priority: 7 });
    expect(scheduleEntry(def, { everyMs: 200 }, { queue: "urgent", priority: 1 }).task).toEqual({ name: "report.build", queue: "urgent", maxAttempts: 5, priority: 1 });
    expect(scheduleEntry(defineTask("plain"), { everyMs: 200 }).task).toEqual({ name: "plain" });
  });

  it.each([
    [["report", "* * * * *", { every: 1 }], "'every' is not an option of worker.schedule"],
    [["report", "* * * *"], "5 fields"],
    [["report", "* * * * * * *"], "got 7"],
    [["report", "61 * * * *"], "is not valid"],
    [["report", "* * * * *", { timezone: "Nowhere/Else" }], "is not valid"],
    [["report", "* * * * *", { timezone: "" }], "IANA"],
    [["report", "0 0 30 2 *"], "never fires"],
    [["report", { everyMs: 0 }], "everyMs must be"],
    [["report", { everyMs: 1.5 }], "everyMs must be"],
    [["report", { everyMs: 100 }, { timezone: "UTC" }], "cron specs only"],
    [["report", { every: 100 }], "'every' is not an option"],
    [["report", {}], "needs everyMs"],
    [["report", 5], "cron string"],
    [["report", "* * * * *", { backfillMs: -1 }], "backfillMs must be"],
    [["report", "* * * * *", { backfillMs: MAX_DELAY_MS + 1 }], "backfillMs must be an integer number of milliseconds from 0 to 3153600000000"],
    [["report", "* * * * *", { backfillMs: 1e15 }], "backfillMs must be"],
    [["report", "* * * * *", { name: "" }], "non-empty"],
    [["", "* * * * *"], "task name"],
    [["report", "* * * * *", { maxAttempts: 0 }], "maxAttempts"],
  ])("rejects %j", (args, message) => {
    const [name, spec, opts] = args as [string, unknown, unknown];
    expect(() => scheduleEntry(name, spec, opts)).toThrow(InvalidArgument);
    expect(() => scheduleEntry(name, spec, opts)).toThrow(message);
  });

  it("refuses a name whose slot keys would be over the key limit (1024 bytes), naming the option; the longest that fits is accepted", () => {
    // cairnq:schedule:<name>:<slot ms>: 16 bytes of prefix, a colon, and up to 16 digits of the latest slot.
    const fits = "n".repeat(1024 - 16 - 1 - 16);
    expect(scheduleEntry("report", { everyMs: 200 }, { name: fits }).name).toBe(fits);
    const long = (): unknown => scheduleEntry("report", { everyMs: 200 }, { name: `${fits}n` });
    expect(long).toThrow(InvalidArgument);
    expect(long).toThrow(/schedule's name option is too long: .* up to 1025 bytes .*at most 991 bytes/);
    let refused: unknown = null;
    try {
      long();
    } catch (err) {
      refused = err;
    }
    expect(refused).toMatchObject({ argument: "name" });
    // A valid task name (at most 1024 bytes) with no name option names the schedule: still too long for its slot keys.
    const task = `report.${"x".repeat(1000)}`;
    expect(() => scheduleEntry(task, { everyMs: 200 })).toThrow(/the task name \(a schedule is named after its task when no name option is given\) is too long/);
    expect(scheduleEntry(task, { everyMs: 200 }, { name: "report" }).task.name).toBe(task);
    expect(scheduleSlotKey(fits, 8_640_000_000_000_000)).toHaveLength(1024);
  });

  it("rejects a payload that cannot be stored, before any slot", () => {
    expect(() => scheduleEntry("report", "* * * * *", { payload: { n: 1n } })).toThrow(SerializationError);
  });
});

describe("slot series", () => {
  it("intervals are multiples of everyMs since the epoch, strictly after the given instant", () => {
    const series = new IntervalSeries(200);
    expect(series.next(1000)).toBe(1200);
    expect(series.next(1001)).toBe(1200);
    expect(series.next(1199)).toBe(1200);
  });

  it("6-field cron has seconds; 5-field starts at second 0", () => {
    expect(iso(new CronSeries("* * * * * *", "UTC").next(Date.parse("2026-01-01T00:00:01.000Z")))).toBe("2026-01-01T00:00:02.000Z");
    expect(iso(new CronSeries("*/5 * * * *", "UTC").next(Date.parse("2026-01-01T00:00:00.000Z")))).toBe("2026-01-01T00:05:00.000Z");
    expect(iso(new CronSeries("0 9 * * *", "Europe/Paris").next(Date.parse("2026-01-01T00:00:00.000Z")))).toBe("2026-01-01T08:00:00.000Z");
  });

  it("DST: a time in the skipped hour fires once at the first instant after the gap; a fixed time in the repeated hour fires once; stepped hours follow real time", () => {
    const ny = "America/New_York";
    // 2026-03-08: 02:00 EST → 03:00 EDT (07:00Z). 02:30 does not exist: it fires at 03:00 EDT.
    const spring = new CronSeries("30 2 * * *", ny);
    expect(iso(spring.next(Date.parse("2026-03-07T08:00:00Z")))).toBe("2026-03-08T07:00:00.000Z");
    expect(iso(spring.next(Date.parse("2026-03-08T07:00:00Z")))).toBe("2026-03-09T06:30:00.000Z");
    // 2026-11-01: 02:00 EDT → 01:00 EST (06:00Z). 01:30 happens twice; a fixed 01:30 fires on the first only.
    const fall = new CronSeries("30 1 * * *", ny);
    expect(iso(fall.next(Date.parse("2026-11-01T04:00:00Z")))).toBe("2026-11-01T05:30:00.000Z");
    expect(iso(fall.next(Date.parse("2026-11-01T05:30:00Z")))).toBe("2026-11-02T06:30:00.000Z");
    const stepped = new CronSeries("*/30 * * * *", ny);
    const slots: (string | null)[] = [];
    for (let at: number | null = Date.parse("2026-11-01T04:45:00Z"), i = 0; i < 5 && at !== null; i++) slots.push(iso((at = stepped.next(at))));
    expect(slots).toEqual(["2026-11-01T05:00:00.000Z", "2026-11-01T05:30:00.000Z", "2026-11-01T06:00:00.000Z", "2026-11-01T06:30:00.000Z", "2026-11-01T07:00:00.000Z"]);
  });
});

describe("Scheduler", () => {
  it("two schedulers on one store submit every slot once, contiguous, up to the lead", async () => {
    const store = new MemoryStore();
    const errors: unknown[] = [];
    const submitted: number[] = [];
    const a = new Scheduler(store, (err) => errors.push(err), (_s, slot) => submitted.push(slot));
    const b = new Scheduler(store, (err) => errors.push(err));
    for (const s of [a, b]) s.add(scheduleEntry("tick", { everyMs: 50 }));
    const startedAt = Date.now();
    a.start();
    await delay(120);
    b.start();
    await delay(200);
    await Promise.all([a.stop(), b.stop()]);
    const stoppedAt = Date.now();
    expect(errors).toEqual([]);
    const rows = await store.list({ name: "tick", limit: 1000 });
    const slots = rows.map((r) => r.run_at_ms).sort((x, y) => x - y);
    expect(new Set(slots).size).toBe(slots.length);
    for (let i = 1; i < slots.length; i++) expect((slots[i] as number) - (slots[i - 1] as number)).toBe(50);
    expect(slots[0]).toBeLessThanOrEqual(Math.ceil(startedAt / 50) * 50);
    expect(slots[slots.length - 1]).toBeGreaterThanOrEqual(Math.floor(stoppedAt / 50) * 50);
    expect(slots[slots.length - 1]).toBeLessThanOrEqual(stoppedAt + SCHEDULE_LEAD_MS);
    for (const slot of slots) expect((await store.getByKey(scheduleSlotKey("tick", slot)))?.run_at_ms).toBe(slot);
    expect(submitted.length).toBeGreaterThan(0);
  });

  it("refuses a store without the schedules capability and a second schedule of one name", () => {
    const plain = new MemoryStore();
    Object.defineProperty(plain, "capabilities", { value: { ...plain.capabilities, schedules: false } });
    expect(() => new Scheduler(plain, () => {}).add(scheduleEntry("tick", { everyMs: 50 }))).toThrow(UnsupportedBackend);
    const scheduler = new Scheduler(new MemoryStore(), () => {});
    scheduler.add(scheduleEntry("tick", { everyMs: 50 }));
    expect(() => scheduler.add(scheduleEntry("tick", "* * * * *"))).toThrow("already has a schedule named 'tick'");
    expect(scheduler.names).toEqual(["tick"]);
  });

  it("reports a failed submission and tries again; an onError that throws does not stop it", async () => {
    const store = new MemoryStore();
    let failures = 2;
    const real = store.submitScheduleSlots.bind(store);
    store.submitScheduleSlots = (input) => (failures-- > 0 ? Promise.reject(new Error("database down")) : real(input));
    const seen: string[] = [];
    const scheduler = new Scheduler(store, (err, schedule) => {
      seen.push(`${schedule}: ${(err as Error).message}`);
      throw new Error("onError itself fails");
    });
    scheduler.add(scheduleEntry("tick", { everyMs: 50 }));
    scheduler.start();
    await waitFor(async () => (await store.list({ name: "tick" })).length > 0, 10_000, "the tick schedule's submit");
    await scheduler.stop();
    expect(seen).toEqual(["tick: database down", "tick: database down"]);
    expect((await store.list({ name: "tick" })).length).toBeGreaterThan(0);
  });

  it("a scheduler started with nothing declared waits without a timer until a schedule is added", async () => {
    const timers = trackTimers();
    try {
      const scheduler = new Scheduler(new MemoryStore(), () => {});
      scheduler.start();
      await new Promise((resolve) => setImmediate(resolve));
      expect(timers.pending()).toBe(0);
      scheduler.add(scheduleEntry("tick", { everyMs: 60_000 }));
      await new Promise((resolve) => setImmediate(resolve));
      expect(timers.pending()).toBeGreaterThan(0);
      await scheduler.stop();
      expect(timers.pending()).toBe(0);
    } finally {
      timers.restore();
    }
  });

  it("a schedule added while running starts at once, also on a scheduler started with nothing declared", async () => {
    const store = new MemoryStore();
    const empty = new Scheduler(store, () => {});
    empty.start();
    await delay(20);
    empty.add(scheduleEntry("first", { everyMs: 50 }));
    await waitFor(async () => (await store.list({ name: "first" })).length > 0, 10_000, "the first schedule's submit");
    await empty.stop();
    expect((await store.list({ name: "first" })).length).toBeGreaterThan(0);

    const scheduler = new Scheduler(store, () => {});
    scheduler.start();
    await scheduler.stop();
    scheduler.add(scheduleEntry("yearly", "0 0 1 1 *"));
    scheduler.start();
    await delay(20);
    scheduler.add(scheduleEntry("tick", { everyMs: 50 }));
    await waitFor(async () => (await store.list({ name: "tick" })).length > 0, 10_000, "the tick schedule's submit");
    await scheduler.stop();
    expect((await store.list({ name: "tick" })).length).toBeGreaterThan(0);
  });
});

describe("worker.schedule(taskDef)", () => {
  it("submits its slots to the TaskDef's queue with its maxAttempts and priority, so a worker on that queue runs them", async () => {
    const store = new MemoryStore();
    const def = defineTask("report.build", { queue: "reports", maxAttempts: 5, priority: 7 });
    const worker = makeWorker(store, { queues: ["reports"] });
    let runs = 0;
    worker.task(def, () => ++runs);
    worker.schedule(def, { everyMs: 50 });
    const running = worker.run();
    await waitFor(() => runs > 0, 10_000, "a run of a report.build slot");
    await worker.stop();
    await running;
    const rows = await store.list({ name: "report.build", limit: 1000 });
    expect(new Set(rows.map((r) => `${r.queue}/${r.max_attempts}/${r.priority}`))).toEqual(new Set(["reports/5/7"]));
  });
});

describe("Scheduler clocks", () => {
  it("a worker joining with its clock ahead of a running peer's (by more than the lead, less than two) leaves no gap and no duplicate", async () => {
    const store = new MemoryStore();
    const errors: unknown[] = [];
    const everyMs = 50;
    // Past one lead ahead, the joiner's "now" is beyond the peer's horizon: only the start tolerance fills the slots between.
    const ahead = Math.floor(SCHEDULE_LEAD_MS * 1.5);
    const peer = new Scheduler(store, (err) => errors.push(err));
    const joiner = new Scheduler(store, (err) => errors.push(err), () => {}, { ...systemClock, now: () => Date.now() + ahead });
    for (const s of [peer, joiner]) s.add(scheduleEntry("tick", { everyMs }));
    peer.start();
    await delay(120);
    joiner.start();
    await delay(200);
    await Promise.all([peer.stop(), joiner.stop()]);
    expect(errors).toEqual([]);
    const slots = (await store.list({ name: "tick", limit: 1000 })).map((r) => r.run_at_ms).sort((x, y) => x - y);
    expect(new Set(slots).size).toBe(slots.length);
    for (let i = 1; i < slots.length; i++) expect((slots[i] as number) - (slots[i - 1] as number)).toBe(everyMs);
  });

  it("a start looks back one lead even without backfillMs, and backfillMs beyond it looks back that far", async () => {
    const now = Date.parse("2026-01-01T00:00:10.000Z");
    for (const [backfillMs, earliest] of [
      [0, now - SCHEDULE_LEAD_MS],
      [5000, now - 5000],
    ] as const) {
      const store = new MemoryStore();
      const scheduler = new Scheduler(store, () => {}, () => {}, { ...systemClock, now: () => now });
      scheduler.add(scheduleEntry("tick", { everyMs: 100 }, { backfillMs }));
      scheduler.start();
      await waitFor(async () => (await store.list({ name: "tick", limit: 1000 })).length > 0, 10_000, "the tick schedule's submit");
      await scheduler.stop();
      const slots = (await store.list({ name: "tick", limit: 1000 })).map((r) => r.run_at_ms).sort((x, y) => x - y);
      expect(slots[0]).toBe(earliest);
      expect(slots[slots.length - 1]).toBe(now + SCHEDULE_LEAD_MS);
    }
  });

  it("a backfill reaching back before 1970 (up to MAX_DELAY_MS) submits every slot since the epoch, without an error", async () => {
    const now = Date.parse("2026-01-01T00:00:00.000Z");
    const store = new MemoryStore();
    const errors: unknown[] = [];
    const scheduler = new Scheduler(store, (err) => errors.push(err), () => {}, { ...systemClock, now: () => now });
    scheduler.add(scheduleEntry("yearly", "0 0 1 1 *", { backfillMs: MAX_DELAY_MS }));
    // Weekly from the epoch (a Thursday) to 2026-01-01 (also a Thursday): 2,923 slots, several batches of 500.
    const WEEK_MS = 7 * 86_400_000;
    const weeks = now / WEEK_MS + 1;
    scheduler.add(scheduleEntry("weekly", { everyMs: WEEK_MS }, { backfillMs: MAX_DELAY_MS }));
    scheduler.start();
    await waitFor(async () => (await store.list({ name: "weekly", limit: 5_000 })).length === weeks || errors.length > 0, 10_000, "the weekly schedule's submits");
    await waitFor(async () => (await store.list({ name: "yearly", limit: 100 })).length === 57 || errors.length > 0, 10_000, "the yearly schedule's submit");
    await scheduler.stop();
    expect(errors).toEqual([]);
    const yearly = (await store.list({ name: "yearly", limit: 100 })).map((r) => r.run_at_ms).sort((x, y) => x - y);
    expect(yearly).toHaveLength(57);
    expect([yearly[0], yearly[56]]).toEqual([0, now]);
    const weekly = (await store.list({ name: "weekly", limit: 5_000 })).map((r) => r.run_at_ms).sort((x, y) => x - y);
    expect(weekly).toHaveLength(weeks);
    expect([weekly[0], weekly[weekly.length - 1]]).toEqual([0, now]);
  });
});
