import { EventEmitter } from "node:events";
import fs from "node:fs";
import type { Task } from "@cairnq/protocol";
import { describe, expect, it } from "vitest";
import type { SQLiteDialect } from "../src/index.js";
import type { SQLiteWakeupsOptions, WakeupSource } from "../src/sqlite-wakeups.js";
import { SQLiteWakeups } from "../src/sqlite-wakeups.js";
import { LONG_MS, openStore, pause, tempFile, timed, wakeupsOf } from "./helpers.js";

/** How many of each kind of handle hold the process open (`FSEventWrap`, `Timeout`, `Immediate`, …). */
function resourceCounts(): Map<string, number> {
  const counts = new Map<string, number>();
  for (const resource of process.getActiveResourcesInfo()) counts.set(resource, (counts.get(resource) ?? 0) + 1);
  return counts;
}

describe("SQLiteWakeups on a database file", () => {
  it("claimWake resolves early on a submit from a second store instance, and only for its queues", async () => {
    const file = tempFile();
    const waiting = openStore(file);
    const other = openStore(file);
    await waiting.connect();
    const wait = timed(() => waiting.claimWake(["jobs"], LONG_MS));
    await other.submit({ name: "job", queue: "elsewhere" });
    await pause(50);
    expect(wait.settled()).toBe(false);
    await other.submit({ name: "job", queue: "jobs" });
    expect(await wait.done).toBeLessThan(LONG_MS / 2);
  });

  it("taskDoneWake resolves early when the task completes, and not for another task, with the terminal row it read", async () => {
    const file = tempFile();
    const waiting = openStore(file);
    const worker = openStore(file);
    const awaited = await waiting.submit({ name: "job", priority: 1 });
    const other = await waiting.submit({ name: "job" });
    const woke = waiting.taskDoneWake(awaited.id, LONG_MS);
    const wait = timed(() => woke);
    const [first, second] = await worker.claim({ queues: ["default"], workerId: "w1", leaseMs: 30_000, limit: 2 });
    expect([first?.id, second?.id]).toEqual([awaited.id, other.id]);
    await worker.complete({ taskId: other.id, workerId: "w1", result: null });
    await pause(50);
    expect(wait.settled()).toBe(false);
    await worker.fail({ taskId: awaited.id, workerId: "w1", error: { type: "E", code: "e", message: "no" }, retryable: false });
    expect(await wait.done).toBeLessThan(LONG_MS / 2);
    const row = await woke;
    expect(row).toEqual(await waiting.get(awaited.id));
    expect(row).toMatchObject({ status: "failed", error: { code: "e" } });
  });

  it("a commit between a probe and the next claimWake is not lost (buffered for the next claim waiter)", async () => {
    const file = tempFile();
    const waiting = openStore(file);
    const other = openStore(file);
    await waiting.connect();
    // Start the watch, then let it run with no claim waiter while a submit lands.
    await waiting.claimWake(["jobs"], 1);
    await waiting.taskDoneWake("task_none", 1);
    const watching = timed(() => waiting.taskDoneWake("task_none", 300));
    await other.submit({ name: "job", queue: "jobs" });
    await watching.done;
    expect(await timed(() => waiting.claimWake(["jobs"], LONG_MS)).done).toBeLessThan(LONG_MS / 2);
    // Told once: the next wait sleeps again.
    expect(await timed(() => waiting.claimWake(["jobs"], 100)).done).toBeGreaterThanOrEqual(90);
  });

  it("taskDoneWake that starts the watch returns at once for a task that finished before it", async () => {
    const file = tempFile();
    const waiting = openStore(file);
    const worker = openStore(file);
    const task = await waiting.submit({ name: "job" });
    await worker.claim({ queues: ["default"], workerId: "w1", leaseMs: 30_000, limit: 1 });
    await worker.complete({ taskId: task.id, workerId: "w1", result: null });
    expect(wakeupsOf(waiting).mode).toBe("off");
    const woke = waiting.taskDoneWake(task.id, LONG_MS);
    expect(await timed(() => woke).done).toBeLessThan(LONG_MS / 2);
    expect(await woke).toEqual(await waiting.get(task.id));
  });

  it("taskDoneWake reads at once after commits no done waiter saw, and waits for a task not yet terminal", async () => {
    const file = tempFile();
    const waiting = openStore(file);
    const worker = openStore(file);
    const task = await waiting.submit({ name: "job" });
    const other = await waiting.submit({ name: "job" });
    // Start the watch and let it see the claims and the completion with no done waiter listening.
    await waiting.taskDoneWake("task_none", 1);
    await worker.claim({ queues: ["default"], workerId: "w1", leaseMs: 30_000, limit: 2 });
    await worker.complete({ taskId: task.id, workerId: "w1", result: null });
    await pause(20);
    expect(await timed(() => waiting.taskDoneWake(task.id, LONG_MS)).done).toBeLessThan(LONG_MS / 2);
    const pending = timed(() => waiting.taskDoneWake(other.id, LONG_MS));
    await pause(50);
    expect(pending.settled()).toBe(false);
    await worker.complete({ taskId: other.id, workerId: "w1", result: null });
    expect(await pending.done).toBeLessThan(LONG_MS / 2);
  });

  it("timeouts bound every wait while nothing commits", async () => {
    const store = openStore();
    const task = await store.submit({ name: "job" });
    const claim = await timed(() => store.claimWake(["nothing-here"], 80)).done;
    const done = await timed(() => store.taskDoneWake(task.id, 80)).done;
    expect(wakeupsOf(store).mode).toBe("watch");
    for (const elapsed of [claim, done]) {
      expect(elapsed).toBeGreaterThanOrEqual(70);
      expect(elapsed).toBeLessThan(LONG_MS / 2);
    }
    // Zero and negative timeouts resolve at once.
    await store.claimWake(["default"], 0);
    await store.taskDoneWake(task.id, -5);
  });

  it("an aborted signal resolves at once, and an abort during the wait resolves it", async () => {
    const store = openStore();
    const task = await store.submit({ name: "job", queue: "elsewhere" });
    const aborted = AbortSignal.abort();
    expect(await timed(() => store.claimWake(["default"], LONG_MS, aborted)).done).toBeLessThan(1000);
    expect(await timed(() => store.taskDoneWake(task.id, LONG_MS, aborted)).done).toBeLessThan(1000);
    const controller = new AbortController();
    const waits = [timed(() => store.claimWake(["default"], LONG_MS, controller.signal)), timed(() => store.taskDoneWake(task.id, LONG_MS, controller.signal))];
    await pause(20);
    expect(waits.some((w) => w.settled())).toBe(false);
    controller.abort();
    for (const wait of waits) expect(await wait.done).toBeLessThan(LONG_MS / 2);
  });

  it("close() stops the watch, releases waiters, and leaves no handle behind; later waits are plain sleeps", async () => {
    const before = resourceCounts();
    const store = openStore();
    const task = await store.submit({ name: "job", queue: "elsewhere" });
    const waits = [timed(() => store.claimWake(["default"], LONG_MS)), timed(() => store.taskDoneWake(task.id, LONG_MS))];
    const wakeups = wakeupsOf(store);
    expect(wakeups.mode).toBe("watch");
    await store.close();
    expect(wakeups.mode).toBe("off");
    for (const wait of waits) expect(await wait.done).toBeLessThan(LONG_MS / 2);
    expect(await timed(() => store.claimWake(["default"], 30)).done).toBeGreaterThanOrEqual(25);
    expect(wakeups.mode).toBe("off");
    await pause(5);
    // Timers of the runner or of earlier tests may end meanwhile, so "nothing added" rather than "equal".
    const after = resourceCounts();
    for (const [resource, count] of after) expect({ resource, count }).toEqual({ resource, count: Math.min(count, before.get(resource) ?? 0) });
  });

  it("stops watching once nobody has waited for idleStopMs, and on close(): the real watchers are closed", async () => {
    const store = openStore();
    await store.connect();
    const watchers: { closed: boolean }[] = [];
    const wakeups = new SQLiteWakeups((store.dialect as SQLiteDialect).connection, {
      idleStopMs: 30,
      watch: (directory, listener) => {
        const watcher = fs.watch(directory, { persistent: false }, listener);
        const entry = { closed: false };
        watcher.once("close", () => (entry.closed = true));
        watchers.push(entry);
        return watcher;
      },
    });
    await wakeups.claimWake(["default"], 10);
    expect(wakeups.mode).toBe("watch");
    await pause(100);
    expect(wakeups.mode).toBe("off");
    expect(watchers).toEqual([{ closed: true }]);
    await wakeups.claimWake(["default"], 10);
    expect(wakeups.mode).toBe("watch");
    wakeups.close();
    expect(wakeups.mode).toBe("off");
    await pause(5);
    expect(watchers).toEqual([{ closed: true }, { closed: true }]);
  });

  it("a claimWake that restarts a stopped watch sees a task queued while nothing watched", async () => {
    const file = tempFile();
    const store = openStore(file);
    const other = openStore(file);
    await store.connect();
    const wakeups = new SQLiteWakeups((store.dialect as SQLiteDialect).connection, { idleStopMs: 30 });
    await wakeups.claimWake(["jobs"], 10);
    await pause(100);
    expect(wakeups.mode).toBe("off");
    await other.submit({ name: "job", queue: "jobs" });
    // A worker whose claim's reprobe found nothing waits here (claimWakeOnQueued): the submit must end the wait.
    expect(await timed(() => wakeups.claimWake(["jobs"], LONG_MS)).done).toBeLessThan(LONG_MS / 2);
    wakeups.close();
  });

  it("declares claimWakeOnQueued and taskDoneWakeReads while its waits can end on commits: a database file, not closed", async () => {
    const store = openStore();
    await store.connect();
    expect(store.capabilities).toMatchObject({ claimWakeOnQueued: true, taskDoneWakeReads: true });
    await store.close();
    expect(store.capabilities).toMatchObject({ claimWakeOnQueued: false, taskDoneWakeReads: false });
    const memory = openStore(":memory:");
    await memory.connect();
    expect(memory.capabilities).toMatchObject({ claimWakeOnQueued: false, taskDoneWakeReads: false });
  });

  it("an idle claim loop does not spin: probes come from its timeouts, not from its own reads", async () => {
    const store = openStore();
    await store.submit({ name: "job", queue: "elsewhere" });
    let probes = 0;
    const until = performance.now() + 500;
    while (performance.now() < until) {
      probes++;
      const rows = await store.claim({ queues: ["default"], workerId: "idle", leaseMs: 30_000 });
      expect(rows).toEqual([]);
      await store.claimWake(["default"], 100);
    }
    // 500 ms / 100 ms, plus the first probe and one buffered re-check.
    expect(probes).toBeLessThanOrEqual(8);
  });
});

describe("SQLiteWakeups falls back to plain sleeps", () => {
  it("on an in-memory database", async () => {
    const store = openStore(":memory:");
    const task = await store.submit({ name: "job" });
    const elapsed = await timed(() => store.claimWake(["default"], 50)).done;
    expect(elapsed).toBeGreaterThanOrEqual(45);
    expect(await timed(() => store.taskDoneWake(task.id, 30)).done).toBeGreaterThanOrEqual(25);
    expect(wakeupsOf(store).mode).toBe("off");
  });

  it("before the store is open, then watches from the next wait", async () => {
    const store = openStore();
    expect(await timed(() => store.claimWake(["default"], 30)).done).toBeGreaterThanOrEqual(25);
    expect(wakeupsOf(store).mode).toBe("off");
    await store.connect();
    await store.claimWake(["default"], 5);
    expect(wakeupsOf(store).mode).toBe("watch");
  });

  it("when watching throws (no inotify watches left), without an error reaching the caller, and retries later", async () => {
    const store = openStore();
    await store.connect();
    let calls = 0;
    const wakeups = new SQLiteWakeups((store.dialect as SQLiteDialect).connection, {
      // Well above the two short waits below, so a loaded machine cannot reach the retry early.
      retryWatchMs: 400,
      watch: () => {
        calls++;
        throw Object.assign(new Error("ENOSPC: System limit for number of file watchers reached"), { code: "ENOSPC" });
      },
    });
    expect(await timed(() => wakeups.claimWake(["default"], 30)).done).toBeGreaterThanOrEqual(25);
    await wakeups.taskDoneWake("task_x", 5);
    expect(calls).toBe(1);
    expect(wakeups.mode).toBe("off");
    // Its waits are plain sleeps until the retry: a worker must not count on them to end on commits.
    expect(wakeups.watchable).toBe(false);
    await pause(420);
    await wakeups.claimWake(["default"], 5);
    expect(calls).toBe(2);
    wakeups.close();
  });

  it("when the watch reports an error: waiters are released and waits sleep until the retry", async () => {
    const { wakeups, watcher } = fakeWakeups({ retryWatchMs: 10_000 });
    const wait = timed(() => wakeups.claimWake(["default"], LONG_MS));
    watcher().emit("error", new Error("EACCES"));
    expect(await wait.done).toBeLessThan(LONG_MS / 2);
    expect(wakeups.mode).toBe("off");
    expect(await timed(() => wakeups.claimWake(["default"], 30)).done).toBeGreaterThanOrEqual(25);
    wakeups.close();
  });
});

// ---------------------------------------------------------------------------
// The check logic, on a scripted source: events are emitted by hand and the
// "database" is a data version and two predicates.

/** The row a fake source reads for a settled task. */
function terminalRow(id: string): Task {
  return {
    id,
    name: "job",
    queue: "default",
    status: "succeeded",
    payload: null,
    result: null,
    error: null,
    metadata: {},
    progress: 1,
    message: null,
    attempt: 1,
    max_attempts: 3,
    priority: 0,
    worker_id: "w1",
    lease_until_ms: null,
    run_at_ms: 1,
    cancel_requested_at_ms: null,
    parent_id: null,
    root_id: id,
    correlation_id: null,
    created_at_ms: 1,
    updated_at_ms: 2,
    completed_at_ms: 2,
  };
}

interface FakeWatcher extends EventEmitter {
  closed: boolean;
  listener: (event: string, filename: string | null) => void;
}

function fakeWakeups(options: SQLiteWakeupsOptions = {}, wakeFile: string | null = null) {
  const db = { version: 1, queued: false, settled: new Set<string>(), reads: 0, writes: 0 };
  const source: WakeupSource = {
    databaseFile: () => "/data/cairnq.db",
    ...(wakeFile === null ? {} : { wakeFile: () => wakeFile }),
    dataVersion: () => {
      db.reads++;
      return db.version;
    },
    queuedIn: () => db.queued,
    terminalRows: (ids) => ids.filter((id) => db.settled.has(id)).map(terminalRow),
    writes: () => db.writes,
  };
  const watchers: FakeWatcher[] = [];
  const wakeups = new SQLiteWakeups(source, {
    ...options,
    watch: (watched, listener) => {
      expect(watched).toBe(wakeFile !== null && options.wakeThroughDirectory !== true ? wakeFile : "/data");
      const watcher = Object.assign(new EventEmitter(), {
        closed: false,
        listener,
        close: () => {
          watcher.closed = true;
        },
        unref: () => watcher,
        ref: () => watcher,
      });
      watchers.push(watcher);
      return watcher;
    },
  });
  const watcher = (): FakeWatcher => {
    const last = watchers.at(-1);
    if (last === undefined) throw new Error("not watching");
    return last;
  };
  /** Another process commits: the data version moves and the WAL file changes. */
  const commit = (): void => {
    db.version++;
    watcher().listener("change", "cairnq.db-wal");
  };
  return { db, source, wakeups, watcher, watchers, commit };
}

describe("SQLiteWakeups checks", () => {
  it("an event wakes nobody until the commit is visible; the follow-up checks catch it when it is", async () => {
    const { db, wakeups, watcher } = fakeWakeups();
    // Queued only once the wait began: a fresh watch looks at what is queued when it starts.
    const wait = timed(() => wakeups.claimWake(["default"], LONG_MS));
    db.queued = true;
    watcher().listener("change", "cairnq.db-wal");
    await pause(3);
    expect(wait.settled()).toBe(false);
    db.version++;
    expect(await wait.done).toBeLessThan(LONG_MS / 2);
    wakeups.close();
  });

  it("ignores other files in the directory, and checks on a nameless event", async () => {
    const { db, wakeups, watcher } = fakeWakeups();
    // Queued only once the wait began: a fresh watch looks at what is queued when it starts.
    const wait = timed(() => wakeups.claimWake(["default"], LONG_MS));
    db.queued = true;
    db.version++;
    watcher().listener("change", "notes.txt");
    watcher().listener("change", "cairnq.db-shm");
    await pause(30);
    expect(wait.settled()).toBe(false);
    watcher().listener("rename", null);
    expect(await wait.done).toBeLessThan(LONG_MS / 2);
    wakeups.close();
  });

  it("a commit wakes claim waiters only when a task is queued on their queues", async () => {
    const { db, wakeups, watcher } = fakeWakeups();
    const wait = timed(() => wakeups.claimWake(["default"], LONG_MS));
    db.version++;
    watcher().listener("change", "cairnq.db-wal");
    await pause(30);
    expect(wait.settled()).toBe(false);
    db.queued = true;
    db.version++;
    watcher().listener("change", "cairnq.db-wal");
    expect(await wait.done).toBeLessThan(LONG_MS / 2);
    wakeups.close();
  });

  it("a commit wakes the task-done waiters of settled tasks only, handing the first waiter of each its row", async () => {
    const { db, wakeups, watcher } = fakeWakeups();
    const a = timed(() => wakeups.taskDoneWake("task_a", LONG_MS));
    const b = wakeups.taskDoneWake("task_b", LONG_MS);
    const again = wakeups.taskDoneWake("task_b", LONG_MS);
    db.settled.add("task_b");
    db.version++;
    watcher().listener("change", "cairnq.db-wal");
    expect(await timed(() => b).done).toBeLessThan(LONG_MS / 2);
    expect(await b).toEqual(terminalRow("task_b"));
    // One row per caller (it may change the object): a second wait on the task re-reads.
    expect(await again).toBeUndefined();
    await pause(30);
    expect(a.settled()).toBe(false);
    wakeups.close();
    await a.done;
  });

  it("a failing filter read wakes everyone (they re-read) and never rejects", async () => {
    const { db, source, wakeups, watcher } = fakeWakeups();
    const wait = timed(() => wakeups.claimWake(["default"], LONG_MS));
    const woke = wakeups.taskDoneWake("task_a", LONG_MS);
    const done = timed(() => woke);
    const busy = (): never => {
      throw new Error("SQLITE_BUSY");
    };
    source.queuedIn = busy;
    source.terminalRows = busy;
    db.version++;
    watcher().listener("change", "cairnq.db-wal");
    expect(await wait.done).toBeLessThan(LONG_MS / 2);
    expect(await done.done).toBeLessThan(LONG_MS / 2);
    // Nothing was read: no row, so the caller reads it.
    expect(await woke).toBeUndefined();
    wakeups.close();
  });

  it("no events, no checks: an idle waiter costs nothing", async () => {
    const { db, wakeups } = fakeWakeups();
    await wakeups.claimWake(["default"], 1);
    const readsAfterStart = db.reads;
    await wakeups.claimWake(["default"], 100);
    await wakeups.taskDoneWake("task_a", 100);
    expect(db.reads - readsAfterStart).toBe(0);
    wakeups.close();
  });

  it("holds back a claim wake after one that found nothing to do, never after one that led to a write", async () => {
    const { db, wakeups, commit } = fakeWakeups({ minWakeGapMs: LONG_MS });
    const first = timed(() => wakeups.claimWake(["default"], LONG_MS));
    db.queued = true;
    commit();
    expect(await first.done).toBeLessThan(LONG_MS / 2);
    // The woken worker claimed (its writer ran statements): the next commit wakes it at once.
    db.writes += 3;
    const second = timed(() => wakeups.claimWake(["default"], LONG_MS));
    commit();
    expect(await second.done).toBeLessThan(LONG_MS / 2);
    // This time it found nothing (no write): the next commit waits out the gap.
    const third = timed(() => wakeups.claimWake(["default"], LONG_MS));
    commit();
    await pause(50);
    expect(third.settled()).toBe(false);
    wakeups.close();
    await third.done;
  });

  it("a held-back claim wake is delivered when the gap ends, not left to the waiter's timeout", async () => {
    const gapMs = 1000;
    const { db, wakeups, commit } = fakeWakeups({ minWakeGapMs: gapMs });
    const first = timed(() => wakeups.claimWake(["default"], LONG_MS));
    db.queued = true;
    commit();
    expect(await first.done).toBeLessThan(LONG_MS / 2);
    // The woken worker found nothing (no write): this commit is held back for the rest of the gap ...
    const held = timed(() => wakeups.claimWake(["default"], LONG_MS));
    commit();
    await pause(50);
    expect(held.settled()).toBe(false);
    // ... and the check at the gap's end wakes the waiter, with no further event (no lost wake-up).
    expect(await held.done).toBeLessThan(LONG_MS / 2);
    wakeups.close();
  });

  it("task-done wakes never hold back the next one", async () => {
    const { db, wakeups, watcher } = fakeWakeups({ minWakeGapMs: LONG_MS });
    for (const id of ["task_a", "task_b", "task_c"]) {
      const wait = timed(() => wakeups.taskDoneWake(id, LONG_MS));
      db.settled.add(id);
      db.version++;
      watcher().listener("change", "cairnq.db-wal");
      expect(await wait.done).toBeLessThan(LONG_MS / 2);
    }
    wakeups.close();
  });

  it("keeps watching through dense events while a task-done waiter waits, and a task-done wait ends polling", async () => {
    const { db, wakeups, watcher, watchers } = fakeWakeups();
    const done = timed(() => wakeups.taskDoneWake("task_a", LONG_MS));
    for (let i = 0; i < 150; i++) watcher().listener("change", "cairnq.db-wal");
    expect(wakeups.mode).toBe("watch");
    db.settled.add("task_a");
    db.version++;
    watcher().listener("change", "cairnq.db-wal");
    expect(await done.done).toBeLessThan(LONG_MS / 2);
    // A window without task-done waiters: dense events switch to polling again ...
    const claim = timed(() => wakeups.claimWake(["default"], LONG_MS));
    await pause(60);
    for (let i = 0; i < 150; i++) watcher().listener("change", "cairnq.db-wal");
    expect(wakeups.mode).toBe("poll");
    // ... until a task-done wait begins.
    const next = timed(() => wakeups.taskDoneWake("task_b", LONG_MS));
    expect(wakeups.mode).toBe("watch");
    expect(watchers.at(-1)?.closed).toBe(false);
    db.settled.add("task_b");
    db.version++;
    watcher().listener("change", "cairnq.db-wal");
    expect(await next.done).toBeLessThan(LONG_MS / 2);
    wakeups.close();
    await claim.done;
  });

  it("keeps watching through dense events while a worker claims between its waits, and polls once it only waits", async () => {
    const { db, wakeups, watcher } = fakeWakeups();
    db.queued = true;
    const first = timed(() => wakeups.claimWake(["default"], LONG_MS));
    db.version++;
    watcher().listener("change", "cairnq.db-wal");
    expect(await first.done).toBeLessThan(LONG_MS / 2);
    // Woken, it claimed and settled (its writer ran statements), then waits again: a worker taking tasks one by one.
    db.writes += 3;
    const second = timed(() => wakeups.claimWake(["default"], LONG_MS));
    db.queued = false;
    for (let i = 0; i < 150; i++) watcher().listener("change", "cairnq.db-wal");
    expect(wakeups.mode).toBe("watch");
    db.queued = true;
    db.version++;
    watcher().listener("change", "cairnq.db-wal");
    expect(await second.done).toBeLessThan(LONG_MS / 2);
    // Waits with nothing written in between (woken for nothing, or timed out): dense events switch to polling.
    const third = timed(() => wakeups.claimWake(["other"], LONG_MS));
    await pause(60);
    for (let i = 0; i < 150; i++) watcher().listener("change", "cairnq.db-wal");
    expect(wakeups.mode).toBe("poll");
    wakeups.close();
    await third.done;
  });

  it("switches to polling while events are dense, and back to watching when commits are rare", async () => {
    const { db, wakeups, watcher, watchers } = fakeWakeups();
    const wait = timed(() => wakeups.claimWake(["default"], LONG_MS));
    for (let i = 0; i < 150; i++) watcher().listener("change", "cairnq.db-wal");
    expect(wakeups.mode).toBe("poll");
    expect(watchers[0]?.closed).toBe(true);
    // Polling still wakes on a relevant commit.
    db.queued = true;
    db.version++;
    expect(await wait.done).toBeLessThan(LONG_MS / 2);
    const next = timed(() => wakeups.claimWake(["other"], LONG_MS));
    db.queued = false;
    await pause(150);
    expect(wakeups.mode).toBe("watch");
    expect(watchers).toHaveLength(2);
    expect(next.settled()).toBe(false);
    wakeups.close();
    await next.done;
  });
});

describe("SQLiteWakeups checks on a wake file", () => {
  /** Another CairnQ process commits, then signals: the data version moves, then the wake file changes. */
  const signalled = (wakeFile = "/data/cairnq.db-wake", options: SQLiteWakeupsOptions = { backstopMs: 0 }) => {
    const fake = fakeWakeups(options, wakeFile);
    const signal = (): void => {
      fake.db.version++;
      fake.watcher().listener("change", "cairnq.db-wake");
    };
    return { ...fake, signal };
  };

  it("watches the wake file, not the directory, and wakes on its signal with one check and no follow-ups", async () => {
    const { db, wakeups, watcher, signal } = signalled();
    const wait = timed(() => wakeups.claimWake(["default"], LONG_MS));
    db.queued = true;
    const readsBefore = db.reads;
    signal();
    expect(await wait.done).toBeLessThan(LONG_MS / 2);
    // The follow-up checks of the directory mode (1, 4, 16 ms after an event; 2 ms after a commit) are not run.
    await pause(40);
    expect(db.reads - readsBefore).toBe(1);
    // WAL writes are not watched (the kernel would not report them to this watch; the name filter agrees).
    const quiet = timed(() => wakeups.claimWake(["default"], 60));
    db.version++;
    watcher().listener("change", "cairnq.db-wal");
    expect(await quiet.done).toBeGreaterThanOrEqual(50);
    wakeups.close();
  });

  it("through the directory (Bun's): wakes on the wake file's signal with one check, and ignores the WAL's events", async () => {
    const { db, wakeups, watcher, signal } = signalled(undefined, { backstopMs: 0, wakeThroughDirectory: true });
    const wait = timed(() => wakeups.claimWake(["default"], LONG_MS));
    db.queued = true;
    const readsBefore = db.reads;
    signal();
    expect(await wait.done).toBeLessThan(LONG_MS / 2);
    // No follow-up checks after the signal, as when the wake file is watched on its own.
    await pause(40);
    expect(db.reads - readsBefore).toBe(1);
    // The directory reports the WAL's writes (a commit's frames, before it is visible): no check, no wake.
    const quiet = timed(() => wakeups.claimWake(["default"], 60));
    db.version++;
    watcher().listener("change", "cairnq.db-wal");
    watcher().listener("change", "cairnq.db");
    expect(await quiet.done).toBeGreaterThanOrEqual(50);
    expect(db.reads - readsBefore).toBe(1);
    wakeups.close();
  });

  it("a backstop check finds the commit of a writer that does not signal", async () => {
    const { db, wakeups } = signalled(undefined, { backstopMs: 20 });
    await wakeups.claimWake(["default"], 1);
    const wait = timed(() => wakeups.claimWake(["default"], LONG_MS));
    db.queued = true;
    db.version++;
    expect(await wait.done).toBeLessThan(LONG_MS / 2);
    wakeups.close();
  });

  it("without the backstop a waiter on a wake file is woken by signals only (backstopMs 0)", async () => {
    const { db, wakeups } = signalled();
    await wakeups.claimWake(["default"], 1);
    const readsBefore = db.reads;
    db.queued = true;
    db.version++;
    expect(await timed(() => wakeups.claimWake(["default"], 60)).done).toBeGreaterThanOrEqual(50);
    expect(db.reads - readsBefore).toBe(0);
    wakeups.close();
  });
});
