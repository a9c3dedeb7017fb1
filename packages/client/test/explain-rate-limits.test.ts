/**
 * `explain` of a due task held back by a full rate window — its group's
 * `groupRateLimit` or its name's `rateLimit` — as the store recorded it: the
 * claims in the window, the limit the last claim enforced, and when the
 * window has room again. First as a pure function of the evidence, then on a
 * SQLite file whose claims recorded the windows.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { RateWindow, Task, TaskGroupInfo } from "@cairnq/protocol";
import { newWorkerId } from "@cairnq/protocol/adapter";
import { SQLiteStore } from "@cairnq/store-sqlite";
import { TASK_ROW_NOW, taskRow } from "@cairnq/test-support/task-rows";
import { afterEach, describe, expect, it } from "vitest";
import { explainTask } from "../src/explain.js";
import { CairnQ } from "../src/index.js";

const NOW = TASK_ROW_NOW;
const DUE = "Queued in queue 'mail' and due since 2026-12-01T09:59:55.000Z (5 s ago), ";

function row(fields: Partial<Task> = {}): Task {
  return taskRow({ name: "send", ...fields });
}

const busy = { runningOnQueue: 1, runningWithName: 0, lastFinishedAtMs: NOW - 1000, queuedOnQueue: 4 };

/** A window the store read at `readAtMs` (its clock, `NOW` unless said), having room again `roomInMs` after that. */
function window(max: number, perMs: number, claims: number, roomInMs: number | null, readAtMs = NOW): RateWindow {
  return { limit: { max, perMs }, claims, roomAtMs: roomInMs === null ? null : readAtMs + roomInMs, readAtMs };
}

function group(fields: Partial<TaskGroupInfo> = {}): TaskGroupInfo {
  return { group: "acme", running: 0, queued: 3, groupConcurrency: null, ...fields };
}

describe("explainTask with rate windows", () => {
  it("a full groupRateLimit window: group-limit, with its claims, limit and when it has room again", () => {
    const verdict = explainTask(row(), { nowMs: NOW, activity: busy, group: group(), rateWindows: { name: null, group: window(10, 1000, 10, 420) } });
    expect(verdict.state).toBe("group-limit");
    expect(verdict.summary).toBe(
      `${DUE}waiting on its group's limit: group acme: 10 of 10 claims in the current 1 s window (groupRateLimit of 'send'), 3 queued; ` +
        "the window has room again in 420 ms (at 2026-12-01T10:00:00.420Z). Its group's next task (by priority, then the oldest) is claimed then; other groups keep running meanwhile.",
    );
  });

  it("a full rateLimit window of its name: rate-limit, with its claims, limit and when it has room again", () => {
    const verdict = explainTask(row({ attempt: 1, error: { message: "503" } }), { nowMs: NOW, activity: busy, rateWindows: { name: window(2, 60_000, 2, 41_500), group: null } });
    expect(verdict.state).toBe("rate-limit");
    expect(verdict.summary).toBe(
      "Queued after attempt 1 of 3 in queue 'mail' and due since 2026-12-01T09:59:55.000Z (5 s ago), waiting on its name's rate limit: " +
        "'send': 2 of 2 claims in the current 1 min window (rateLimit of 'send'); the window has room again in 41.5 s (at 2026-12-01T10:00:41.500Z). " +
        "A claim of 'send' then takes the next of its tasks (by priority, then due time); other names keep running meanwhile. The last error was \"503\".",
    );
  });

  it("the window's length as configured, and room again never early: 1.5 s, not 1 s; 2.7 s for 2 670 ms, not 2 s", () => {
    const odd = (perMs: number, roomInMs: number) =>
      explainTask(row(), { nowMs: NOW, activity: busy, rateWindows: { name: window(1, perMs, 1, roomInMs), group: null } }).summary;
    expect(odd(1500, 1200)).toContain("'send': 1 of 1 claims in the current 1.5 s window (rateLimit of 'send'); the window has room again in 1.2 s (at 2026-12-01T10:00:01.200Z)");
    expect(odd(2500, 2_670)).toContain("in the current 2.5 s window (rateLimit of 'send'); the window has room again in 2.7 s (at 2026-12-01T10:00:02.670Z)");
    expect(odd(59_999, 59_950)).toContain("in the current 59.999 s window (rateLimit of 'send'); the window has room again in 1 min (at 2026-12-01T10:00:59.950Z)");
    expect(odd(90_500, 61_001)).toContain("in the current 1 min 30.5 s window (rateLimit of 'send'); the window has room again in 1 min 2 s (at ");
  });

  it("atMs of group-limit and rate-limit is when the task became due (run_at_ms), as for waiting; when the window has room is in the summary", () => {
    const due = row();
    const byGroup = explainTask(due, { nowMs: NOW, activity: busy, group: group(), rateWindows: { name: null, group: window(10, 1000, 10, 420) } });
    const byName = explainTask(due, { nowMs: NOW, activity: busy, rateWindows: { name: window(2, 60_000, 2, 41_500), group: null } });
    expect([byGroup.state, byGroup.atMs]).toEqual(["group-limit", due.run_at_ms]);
    expect([byName.state, byName.atMs]).toEqual(["rate-limit", due.run_at_ms]);
    expect(explainTask(due, { nowMs: NOW, activity: busy }).atMs).toBe(due.run_at_ms);
  });

  it("both full: the window that has room last, since a claim needs room in both; groupConcurrency first", () => {
    const groupWindow = window(10, 1000, 10, 420);
    expect(explainTask(row(), { nowMs: NOW, group: group(), rateWindows: { name: window(2, 60_000, 2, 41_500), group: groupWindow } }).state).toBe("rate-limit");
    expect(explainTask(row(), { nowMs: NOW, group: group(), rateWindows: { name: window(2, 300, 2, 100), group: groupWindow } }).state).toBe("group-limit");
    const atConcurrency = explainTask(row(), { nowMs: NOW, group: group({ running: 2, groupConcurrency: 2 }), rateWindows: { name: window(2, 300, 2, 100), group: groupWindow } });
    expect(atConcurrency.summary).toContain("group acme: 2 of 2 running (groupConcurrency of 'send')");
  });

  it("a window with room holds nothing: waiting as before; a group window without the task's group is not named", () => {
    const room = window(2, 1000, 1, null);
    expect(explainTask(row(), { nowMs: NOW, activity: busy, group: group(), rateWindows: { name: room, group: room } }).state).toBe("waiting");
    expect(explainTask(row(), { nowMs: NOW, activity: busy, rateWindows: { name: room, group: window(2, 1000, 2, 300) } }).state).toBe("waiting");
  });

  it("one clock: full and its room again are the store's read, whatever the caller's nowMs says", () => {
    // The store read the window 10 min before the caller's clock, 300 ms before it has room: still full, room in 300 ms.
    const stale = window(2, 1000, 2, 300, NOW - 600_000);
    const verdict = explainTask(row(), { nowMs: NOW, activity: busy, rateWindows: { name: stale, group: null } });
    expect(verdict.state).toBe("rate-limit");
    expect(verdict.summary).toContain("the window has room again in 300 ms (at 2026-12-01T09:50:00.300Z)");
    // And a caller's clock behind the store's does not stretch it.
    const ahead = window(2, 1000, 2, 250, NOW + 3_600_000);
    expect(explainTask(row(), { nowMs: NOW, activity: busy, group: group(), rateWindows: { name: null, group: ahead } }).summary).toContain("the window has room again in 250 ms");
  });
});

describe("cairnq.explain of a full rate window on SQLite", () => {
  let dir: string | undefined;
  let cairnq: CairnQ | undefined;
  let store: SQLiteStore;

  afterEach(async () => {
    await cairnq?.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    cairnq = undefined;
    dir = undefined;
  });

  /** The store's clock (the database's, for this store), set by each case; the caller's nowMs stays apart from it. */
  let storeNow = NOW;

  function open(): CairnQ {
    dir = mkdtempSync(join(tmpdir(), "cairnq-explain-rate-"));
    storeNow = NOW;
    store = new SQLiteStore(join(dir, "cairnq.db"), { clock: () => storeNow });
    return (cairnq = new CairnQ(store));
  }

  it("(a) group acme's groupRateLimit window is full: group-limit, 2 of 2 claims in the current 1 min window, and when it has room again", async () => {
    const client = open();
    for (let i = 0; i < 3; i++) await client.submit("send", { i }, { group: "acme" });
    const flowControl = { send: { groupRateLimit: { max: 2, perMs: 60_000 } } };
    const workerId = newWorkerId();
    const claimed = await client.store.claim({ queues: ["default"], workerId, names: ["send"], limit: 5, flowControl });
    expect(claimed).toHaveLength(2);
    // Settling gives no rate back: the window stays full.
    for (const task of claimed) await client.store.complete({ taskId: task.id, workerId, result: null });
    const waiting = (await client.list({ name: "send", status: "queued" }))[0] as Task;
    const roomAtMs = (await store.rateWindows("send", "acme")).group?.roomAtMs as number;
    expect(roomAtMs).toBe(NOW + 60_000);
    storeNow = roomAtMs - 420;
    // The caller's clock is an hour off the store's: the store's read says how long.
    const why = await client.explain(waiting.id, { nowMs: roomAtMs + 3_600_000 });
    expect(why?.state).toBe("group-limit");
    expect(why?.summary).toContain(
      `waiting on its group's limit: group acme: 2 of 2 claims in the current 1 min window (groupRateLimit of 'send'), 1 queued; ` +
        `the window has room again in 420 ms (at ${new Date(roomAtMs).toISOString()}).`,
    );
    storeNow = roomAtMs;
    // The store has room at its clock; a caller whose clock is behind it (before roomAtMs) hears so too.
    expect((await client.explain(waiting.id, { nowMs: NOW + 1000 }))?.state).toBe("waiting");
  });

  it("(b) the rateLimit window of 'rl' is full: rate-limit, 1 of 1 claims in the current 1 h window, and when it has room again", async () => {
    const client = open();
    const first = await client.submit("rl", {}, { queue: "q" });
    const second = await client.submit("rl", {}, { queue: "q" });
    const workerId = newWorkerId();
    const claim = () => client.store.claim({ queues: ["q"], workerId, leaseMs: 60_000, names: ["rl"], limit: 10, flowControl: { rl: { rateLimit: { max: 1, perMs: 3_600_000 } } } });
    const [taken] = await claim();
    expect(taken?.id).toBe(first.id);
    await client.store.complete({ taskId: first.id, workerId, result: null });
    expect(await claim()).toEqual([]);
    const roomAtMs = (await store.rateWindows("rl", null)).name?.roomAtMs as number;
    expect(roomAtMs).toBe(NOW + 3_600_000);
    storeNow = roomAtMs - 61_000;
    const why = await client.explain(second.id, { nowMs: NOW });
    expect(why?.state).toBe("rate-limit");
    expect(why?.summary).toContain(
      `waiting on its name's rate limit: 'rl': 1 of 1 claims in the current 1 h window (rateLimit of 'rl'); the window has room again in 1 min 1 s (at ${new Date(roomAtMs).toISOString()}).`,
    );
  });
});
