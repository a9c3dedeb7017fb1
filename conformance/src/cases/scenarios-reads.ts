/**
 * Protocol v1 §14: the numbered conformance scenarios 30–35, the reads and
 * purges, and 36–38 as far as a store is concerned (36: the statuses a task
 * passes through; the schema CHECK itself is the SQL stores' own test; 37:
 * ids; 38: the JSON boundary). 1–29 are in scenarios.ts.
 */
import type { Task } from "@cairnq/protocol";
import { SerializationError, STATUSES } from "@cairnq/protocol";
import { TASK_ID_PATTERN } from "@cairnq/protocol/adapter";
import type { ConformanceCase } from "../case.js";
import { ids, sortedIds } from "../case.js";
import { CLOCK_SLACK_MS } from "../invariants.js";
import { runToFailure, runToSuccess } from "./scenario-runs.js";

export const scenarioReadCases: readonly ConformanceCase[] = [
  {
    id: "s30-list-filters",
    title: "list by name, by queue and by correlation_id each returns only the matches",
    spec: "§14.30, §5.4",
    async run(t) {
      const a = await t.submit("alpha", { queue: "q1", correlationId: "c1" });
      const b = await t.submit("beta", { queue: "q2", correlationId: "c2" });
      const c = await t.submit("alpha", { queue: "q2" });
      t.expect(sortedIds(await t.store.list({ name: "alpha" }))).toEqual(sortedIds([a, c]));
      t.expect(sortedIds(await t.store.list({ queue: "q2" }))).toEqual(sortedIds([b, c]));
      t.expect(ids(await t.store.list({ correlationId: "c1" }))).toEqual([a.id]);
      t.expect(ids(await t.store.list({ correlationId: "c2" }))).toEqual([b.id]);
      t.expect(await t.store.list({ name: "gamma" })).toEqual([]);
    },
  },
  {
    id: "s31-purge-by-status-and-name",
    title: "two succeeded alpha, one failed beta: purge(status failed) → 1; purge(name alpha) → 2",
    spec: "§14.31, §5.9",
    async run(t) {
      const a1 = await t.submit("alpha");
      await runToSuccess(t, a1);
      const a2 = await t.submit("alpha");
      await runToSuccess(t, a2);
      const b = await t.submit("beta");
      await runToFailure(t, b);
      await t.sleep(20);
      t.expect(await t.store.purge({ status: "failed" })).toEqual([b.id]);
      t.expect(sortedIds(await t.store.purge({ name: "alpha" }))).toEqual(sortedIds([a1, a2]));
      t.expect(await t.all()).toEqual([]);
    },
  },
  {
    id: "s32-purge-cutoff-and-key",
    title: "purge removes the old succeeded task and its key, keeps a queued one; a 1-hour cutoff then removes nothing",
    spec: "§14.32, §5.9, §3.2",
    async run(t) {
      const done = await t.submit("job", { key: "k" });
      await runToSuccess(t, done);
      const waiting = await t.submit("job", { key: "live" });
      await t.sleep(50);
      t.expect(await t.store.purge({ olderThanMs: 0 })).toEqual([done.id]);
      t.expect(await t.store.getByKey("k")).toBeNull();
      t.expect(await t.store.getStatusByKey("k")).toBeNull();
      t.fields(await t.store.getByKey("live"), { id: waiting.id, status: "queued" });
      const recent = await t.submit("fresh");
      await runToSuccess(t, recent);
      await t.sleep(20);
      t.expect(await t.store.purge({ olderThanMs: 3_600_000 })).toEqual([]);
      t.expect(sortedIds(await t.all())).toEqual(sortedIds([waiting, recent]));
    },
  },
  {
    id: "s33-purge-by-queue",
    title: "purge(queue rpc) removes only rpc; purge(queue jobs, status failed) only that; an unknown queue → nothing",
    spec: "§14.33, §5.9",
    async run(t) {
      const rpc = await t.submit("call", { queue: "rpc" });
      await runToSuccess(t, rpc);
      const jobOk = await t.submit("work", { queue: "jobs" });
      await runToSuccess(t, jobOk);
      const jobFailed = await t.submit("work", { queue: "jobs" });
      await runToFailure(t, jobFailed);
      await t.sleep(20);
      t.expect(await t.store.purge({ queue: "rpc" })).toEqual([rpc.id]);
      t.expect(await t.store.purge({ queue: "jobs", status: "failed" })).toEqual([jobFailed.id]);
      t.expect(await t.store.purge({ queue: "nope" })).toEqual([]);
      t.expect(ids(await t.all())).toEqual([jobOk.id]);
    },
  },
  {
    id: "s34-queue-depth",
    title: "queueDepth: empty → 3/3; drops per submit; 0 when full or over; queues independent; delayed tasks count; claims free headroom only below the limit",
    spec: "§14.34, §5.6",
    async run(t) {
      const depth = (queue: string) => t.store.queueDepth(queue, 3);
      t.expect(await depth("q")).toBe(3);
      const seen: number[] = [];
      for (let i = 0; i < 4; i++) {
        await t.submit("job", { queue: "q" });
        seen.push(await depth("q"));
      }
      t.expect(seen).toEqual([2, 1, 0, 0]);
      t.expect(await depth("other")).toBe(3);
      await t.submit("later", { queue: "delayed", runAtDelayMs: 60_000 });
      t.expect(await depth("delayed")).toBe(2);
      await t.claimOne(t.w1, { queues: ["q"] });
      t.expect(await depth("q")).toBe(0);
      await t.claimOne(t.w1, { queues: ["q"] });
      t.expect(await depth("q")).toBe(1);
      t.expect(await t.store.queueDepth("q", 0)).toBe(0);
    },
  },
  {
    id: "s35-stats-zero-filled",
    title: "stats are zero-filled per queue; an absent queue is absent; a filter returns only that queue; an unknown queue → all zeros",
    spec: "§14.35, §5.5",
    async run(t) {
      const zero = { queued: 0, running: 0, succeeded: 0, failed: 0, canceled: 0 };
      await t.submit("job", { queue: "q1" });
      await t.submit("job", { queue: "q1" });
      await t.claimOne(t.w1, { queues: ["q1"] });
      await t.submit("job", { queue: "q2" });
      t.expect(await t.store.stats()).toEqual({ q1: { ...zero, queued: 1, running: 1 }, q2: { ...zero, queued: 1 } });
      t.expect(await t.store.stats("q1")).toEqual({ q1: { ...zero, queued: 1, running: 1 } });
      t.expect(await t.store.stats("nope")).toEqual({ nope: zero });
    },
  },
  {
    id: "s36-statuses-within-status-list",
    title: "the statuses tasks pass through are exactly the five of STATUSES (§4's list, which the schema CHECK mirrors)",
    spec: "§14.36, §4",
    async run(t) {
      t.expect([...STATUSES]).toEqual(["queued", "running", "succeeded", "failed", "canceled"]);
      const ok = await t.submit("ok");
      await runToSuccess(t, ok);
      const bad = await t.submit("bad");
      await runToFailure(t, bad);
      const gone = await t.submit("gone");
      await t.store.cancel(gone.id);
      const live = await t.submitAndClaim(t.w1, "live");
      await t.store.retry(bad.id);
      t.fields(live, { status: "running" });
      for (const row of await t.all()) t.expect(STATUSES).toContain(row.status);
      t.expect([...t.store.observed.statuses].sort()).toEqual([...STATUSES].sort());
    },
  },
  {
    id: "s37-task-id-pattern-and-order",
    title: "ids match the §2.4 pattern, are unique, and sort by creation millisecond",
    spec: "§14.37, §2.4",
    async run(t) {
      const burst = await Promise.all(Array.from({ length: 50 }, (_, n) => t.submit("burst", { payload: { n } })));
      for (const row of burst) t.expect(row.id).toMatch(TASK_ID_PATTERN);
      t.expect(new Set(ids(burst)).size).toBe(50);
      const sequence: Task[] = [];
      for (let i = 0; i < 5; i++) {
        sequence.push(await t.submit("seq"));
        await t.sleep(3);
      }
      t.expect(ids(sequence)).toEqual([...ids(sequence)].sort());
      for (const row of sequence) {
        const idMs = ulidTimeMs(row.id);
        // The id is generated before the insert (§2.4), so it never postdates the row's creation
        // on a process clock; a database clock may be skewed from the process, so only check there.
        if (!t.capabilities.databaseClock) {
          t.expect(idMs).toBeLessThanOrEqual(row.created_at_ms + CLOCK_SLACK_MS);
          t.expect(row.created_at_ms - idMs).toBeLessThan(60_000);
        }
      }
    },
  },
  {
    id: "s38-serialization-errors-write-nothing",
    title: "every §2.2 rejection (a Map, Set, typed array or RegExp included) raises SerializationError and writes nothing; undefined properties, toJSON and Date follow JSON.stringify",
    spec: "§14.38, §2.2",
    async run(t) {
      const cyclic: Record<string, unknown> = { a: 1 };
      cyclic.self = cyclic;
      // [label, value, still rejected when nested as an object property?]
      const bad: [string, unknown, boolean][] = [
        ["NaN", { n: Number.NaN }, true],
        ["Infinity", { deep: { list: [1, Number.POSITIVE_INFINITY] } }, true],
        ["-Infinity", [Number.NEGATIVE_INFINITY], true],
        ["BigInt", { big: 10n }, true],
        ["cycle", cyclic, true],
        ["undefined array element", [1, undefined], true],
        ["function array element", [() => 1], true],
        ["symbol array element", [Symbol("s")], true],
        // JSON.stringify would leave these properties out without a word.
        ["function property", { keep: 1, f: () => 1 }, true],
        ["symbol property", { keep: 1, s: Symbol("s") }, true],
        ["top-level BigInt", 5n, true],
        ["top-level NaN", Number.NaN, true],
        // JSON.stringify would write these as {} or numbered keys: the task would get data it was never given.
        ["Map", { tags: new Map([["a", 1]]) }, true],
        ["Set", [new Set([1, 2])], true],
        ["Uint8Array", { bytes: new Uint8Array([1, 2]) }, true],
        ["RegExp", { re: /a+/ }, true],
        ["top-level function", () => 1, false],
        ["top-level symbol", Symbol("s"), false],
      ];
      for (const [label, payload, nested] of bad) {
        await t.rejects(t.submit("bad", { payload }), SerializationError, `submit payload with ${label}`);
        await t.rejects(t.submit("bad", { payload, key: `key-${label}` }), SerializationError, `keyed submit payload with ${label}`);
        t.expect(await t.store.getByKey(`key-${label}`)).toBeNull();
        if (nested) await t.rejects(t.submit("bad", { metadata: { label, value: payload } }), SerializationError, `submit metadata with ${label}`);
      }
      t.expect(await t.all()).toEqual([]);

      const task = await t.submitAndClaim(t.w1);
      for (const [label, result] of bad) {
        await t.rejects(t.store.complete({ taskId: task.id, workerId: t.w1, result }), SerializationError, `complete result with ${label}`);
        await t.rejects(t.store.succeed({ taskId: task.id, workerId: t.w1, result }), SerializationError, `succeed result with ${label}`);
      }
      t.fields(await t.get(task.id), { status: "running", result: null, worker_id: t.w1, lease_until_ms: task.lease_until_ms, updated_at_ms: task.updated_at_ms });

      // What is not rejected follows JSON.stringify.
      const when = new Date(Date.UTC(2024, 0, 2, 3, 4, 5, 6));
      const lenient = await t.submit("ok", {
        payload: { keep: 1, dropUndefined: undefined, when, custom: { toJSON: () => "custom" } },
      });
      const expected = { keep: 1, when: "2024-01-02T03:04:05.006Z", custom: "custom" };
      t.fields(lenient, { payload: expected });
      t.fields(await t.get(lenient.id), { payload: expected });
      t.fields(await t.submit("absent"), { payload: {}, metadata: {} });
    },
  },
];

const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/** The creation millisecond in a task id: its first 10 base-32 digits (§2.4). */
export function ulidTimeMs(id: string): number {
  let ms = 0;
  for (const char of id.slice("task_".length, "task_".length + 10)) ms = ms * 32 + CROCKFORD.indexOf(char);
  return ms;
}
