/**
 * MySQLWakeups on fake timers: when waits end, how many checks a wait costs
 * (the idle cost the store's docs state), what subscribers hear, and that a
 * failing check wakes nobody.
 */
import type { StoreSignal, Task } from "@cairnq/protocol";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { WakeupChecks } from "../src/mysql-wakeups.js";
import { MySQLWakeups } from "../src/mysql-wakeups.js";

/** Checks answering from mutable state, counting reads. */
function fakeChecks() {
  const state = { claimable: false, settled: new Set<string>(), fail: false, claimReads: 0, settledReads: 0, settledIds: [] as string[][] };
  const checks: WakeupChecks = {
    claimable: () => {
      state.claimReads += 1;
      return state.fail ? Promise.reject(new Error("connection lost")) : Promise.resolve(state.claimable);
    },
    settled: (ids) => {
      state.settledReads += 1;
      state.settledIds.push([...ids]);
      return state.fail ? Promise.reject(new Error("connection lost")) : Promise.resolve(ids.filter((id) => state.settled.has(id)).map(terminalRow));
    },
  };
  return { state, checks };
}

/** A terminal row as the store's check would read it (the fields the wake-ups look at). */
function terminalRow(id: string): Task {
  return { id, status: "succeeded" } as Task;
}

/** Resolves to how many ms (fake) `promise` took, advancing timers 1 ms at a time up to `limitMs`. */
async function elapsed(promise: Promise<unknown>, limitMs: number): Promise<number> {
  let done = false;
  void promise.then(() => (done = true));
  const start = Date.now();
  await vi.advanceTimersByTimeAsync(0);
  while (!done && Date.now() - start <= limitMs) await vi.advanceTimersByTimeAsync(1);
  expect(done).toBe(true);
  return Date.now() - start;
}

describe("MySQLWakeups", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("ends a done wait within a millisecond or two of the task ending early in the wait, and at the timeout otherwise", async () => {
    const { state, checks } = fakeChecks();
    const wakeups = new MySQLWakeups(checks, { now: () => Date.now() });
    const waiting = wakeups.taskDoneWake("task_a", 500);
    setTimeout(() => state.settled.add("task_a"), 3);
    expect(await elapsed(waiting, 600)).toBeLessThanOrEqual(5);

    const never = wakeups.taskDoneWake("task_b", 500);
    expect(await elapsed(never, 600)).toBe(500);
    wakeups.close();
  });

  it("a done wait that found its task resolves with the row the check read; a second waiter on it, a timeout, get none", async () => {
    const { state, checks } = fakeChecks();
    const wakeups = new MySQLWakeups(checks, { now: () => Date.now() });
    const first = wakeups.taskDoneWake("task_a", 500);
    const second = wakeups.taskDoneWake("task_a", 500);
    setTimeout(() => state.settled.add("task_a"), 3);
    await elapsed(Promise.all([first, second]), 20);
    expect(await first).toEqual({ id: "task_a", status: "succeeded" });
    expect(await second).toBeUndefined();
    const never = wakeups.taskDoneWake("task_b", 50);
    await elapsed(never, 100);
    expect(await never).toBeUndefined();
    // A new wait on the found task checks again (one read), and resolves with that read's row.
    const reads = state.settledReads;
    const again = wakeups.taskDoneWake("task_a", 500);
    await elapsed(again, 20);
    expect(await again).toEqual({ id: "task_a", status: "succeeded" });
    expect(state.settledReads).toBe(reads + 1);
    wakeups.close();
  });

  it("checks a wait at intervals growing with its age: a 10 s wait costs a few dozen reads, not thousands", async () => {
    const { state, checks } = fakeChecks();
    const wakeups = new MySQLWakeups(checks, { now: () => Date.now() });
    await elapsed(wakeups.claimWake(["default"], 10_000), 10_100);
    // 1 ms steps until the age is 4 ms, then ×1.25: 4 + ln(10000 / 4) / ln(1.25) ≈ 39.
    expect(state.claimReads).toBeGreaterThan(20);
    expect(state.claimReads).toBeLessThanOrEqual(40);
    wakeups.close();
  });

  it("continues the stretch across consecutive waits (an idle worker's 500 ms waits): past a few seconds no checks are left inside a wait", async () => {
    const { state, checks } = fakeChecks();
    const wakeups = new MySQLWakeups(checks, { now: () => Date.now() });
    for (let i = 0; i < 20; i++) await elapsed(wakeups.claimWake(["default"], 500), 600);
    const afterTen = state.claimReads;
    expect(afterTen).toBeLessThanOrEqual(40);
    for (let i = 0; i < 20; i++) await elapsed(wakeups.claimWake(["default"], 500), 600);
    // 10 more seconds of waits: the interval (a quarter of the stretch) outgrew the 500 ms waits.
    expect(state.claimReads - afterTen).toBeLessThanOrEqual(5);
    wakeups.close();
  });

  it("a claim that took a task after a wake ends the stretch: the next wait checks after 1 ms again", async () => {
    const { state, checks } = fakeChecks();
    const wakeups = new MySQLWakeups(checks, { now: () => Date.now() });
    await elapsed(wakeups.claimWake(["default"], 5_000), 5_100);
    state.claimable = true;
    expect(await elapsed(wakeups.claimWake(["default"], 5_000), 5_100)).toBeGreaterThan(100);
    wakeups.claimed(["default"], true);
    expect(await elapsed(wakeups.claimWake(["default"], 5_000), 5_100)).toBeLessThanOrEqual(2);
    wakeups.close();
  });

  it("work the probe finds but no claim here takes (another worker's names) does not reset the stretch: the wake-ups back off", async () => {
    const { state, checks } = fakeChecks();
    state.claimable = true;
    const wakeups = new MySQLWakeups(checks, { now: () => Date.now() });
    // A worker woken, claiming nothing, waiting again at once: for 5 s of fake time.
    const start = Date.now();
    let wakes = 0;
    while (Date.now() - start < 5_000) {
      await elapsed(wakeups.claimWake(["default"], 500), 600);
      wakeups.claimed(["default"], false);
      wakes += 1;
    }
    // With the stretch reset on every wake it would be ~5,000 (one per millisecond).
    expect(wakes).toBeLessThanOrEqual(60);
    expect(state.claimReads).toBeLessThanOrEqual(60);
    wakeups.close();
  });

  it("tells subscribers what a check found: done for the task, queued for each queue of the wait", async () => {
    const { state, checks } = fakeChecks();
    const wakeups = new MySQLWakeups(checks, { now: () => Date.now() });
    const heard: StoreSignal[] = [];
    const doneOnly: StoreSignal[] = [];
    const stop = wakeups.subscribe((s) => heard.push(s));
    wakeups.subscribe((s) => doneOnly.push(s), ["done"]);
    state.claimable = true;
    state.settled.add("task_a");
    await elapsed(Promise.all([wakeups.claimWake(["a", "b"], 100), wakeups.taskDoneWake("task_a", 100)]).then(() => {}), 10);
    expect(heard).toEqual(expect.arrayContaining([{ reason: "queued", queue: "a" }, { reason: "queued", queue: "b" }, { reason: "done", taskId: "task_a" }]));
    expect(doneOnly).toEqual([{ reason: "done", taskId: "task_a" }]);
    stop();
    await elapsed(wakeups.taskDoneWake("task_a", 100), 10);
    expect(heard).toHaveLength(3);
    wakeups.close();
  });

  it("reads every task wait due at once in one statement, and each claim wait's queues once for all its waiters", async () => {
    const { state, checks } = fakeChecks();
    const wakeups = new MySQLWakeups(checks, { now: () => Date.now() });
    const waits = [wakeups.taskDoneWake("t1", 20), wakeups.taskDoneWake("t2", 20), wakeups.claimWake(["q"], 20), wakeups.claimWake(["q"], 20)];
    await vi.advanceTimersByTimeAsync(1);
    expect(state.settledReads).toBe(1);
    expect(state.settledIds[0]?.sort()).toEqual(["t1", "t2"]);
    expect(state.claimReads).toBe(1);
    await elapsed(Promise.all(waits).then(() => {}), 30);
    wakeups.close();
  });

  it("a failing check wakes nobody: the wait ends at its timeout", async () => {
    const { state, checks } = fakeChecks();
    state.fail = true;
    state.settled.add("task_a");
    const wakeups = new MySQLWakeups(checks, { now: () => Date.now() });
    expect(await elapsed(wakeups.taskDoneWake("task_a", 200), 300)).toBe(200);
    expect(state.settledReads).toBeGreaterThan(1);
    wakeups.close();
  });

  it("close() wakes every waiter and later waits are plain sleeps without checks", async () => {
    const { state, checks } = fakeChecks();
    const wakeups = new MySQLWakeups(checks, { now: () => Date.now() });
    const waiting = wakeups.claimWake(["default"], 10_000);
    wakeups.close();
    expect(await elapsed(waiting, 1)).toBe(0);
    const reads = state.claimReads;
    expect(await elapsed(wakeups.taskDoneWake("task_a", 50), 100)).toBe(50);
    expect(state.claimReads + state.settledReads).toBe(reads);
    const aborted = new AbortController();
    aborted.abort();
    expect(await elapsed(wakeups.claimWake(["default"], 50, aborted.signal), 1)).toBe(0);
  });
});
