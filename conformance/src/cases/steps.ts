/**
 * Durable steps (an extension of v1, `TaskStepStore`; rules in
 * `@cairnq/protocol` `steps.ts`): the journal is written only under the
 * attempt fence, replays across attempts, parking gives the lease back
 * without using up attempts, messages sent early are kept, a message wakes a
 * parked wait, and a join sees children finished by another worker. Run only
 * for stores declaring `durableSteps`.
 */
import type { TaskStepStore } from "@cairnq/protocol";
import { InvalidArgument, LostLease, PARK_FOREVER_AT_MS } from "@cairnq/protocol";
import type { CaseContext, ConformanceCase } from "../case.js";
import { ConformanceFailure, EXPIRY_WAIT_MS, SHORT_LEASE_MS } from "../case.js";

export const needsSteps = (c: { durableSteps?: boolean }): string | null => (c.durableSteps === true ? null : "durableSteps (TaskStepStore)");
const SPEC = "store.ts TaskStepStore, steps.ts";

function steps(t: CaseContext): TaskStepStore {
  return t.store.inner as TaskStepStore;
}

export const stepCases: readonly ConformanceCase[] = [
  {
    id: "steps-record-replay",
    title: "a recorded step is in the journal for later attempts, is never overwritten, and a failed step can be recorded done later",
    spec: SPEC,
    skipUnless: needsSteps,
    async run(t) {
      const s = steps(t);
      const task = await t.submitAndClaim(t.w1, "job", { maxAttempts: 3 });
      const owned = { taskId: task.id, workerId: t.w1, attempt: task.attempt };
      await s.recordStep({ ...owned, name: "charge", kind: "step", status: "done", seq: 1, result: { charged: 12 } });
      await s.recordStep({ ...owned, name: "ship", kind: "step", status: "failed", seq: 2, error: { message: "boom" } });
      // A done entry is final: writing it again matches nothing.
      await t.rejects(s.recordStep({ ...owned, name: "charge", kind: "step", status: "done", seq: 1, result: { charged: 99 } }), LostLease, "rewriting a done step");
      await t.store.fail({ ...owned, error: { message: "boom" } });
      const again = await t.claimOne(t.w2);
      t.expect(again.attempt).toBe(2);
      await s.recordStep({ taskId: task.id, workerId: t.w2, attempt: 2, name: "ship", kind: "step", status: "done", seq: 2, result: "shipped" });
      const journal = await s.steps(task.id);
      t.expect(journal.map((e) => [e.name, e.kind, e.status, e.result, e.attempt])).toEqual([
        ["charge", "step", "done", { charged: 12 }, 1],
        ["ship", "step", "done", "shipped", 2],
      ]);
      t.expect(typeof journal[0]?.atMs).toBe("number");
      t.expect(await s.steps("task_unknown")).toEqual([]);
    },
  },
  {
    id: "steps-fence",
    title: "a worker that lost its lease (or names another attempt) records nothing: LostLease, journal unchanged",
    spec: SPEC,
    skipUnless: needsSteps,
    async run(t) {
      const s = steps(t);
      const task = await t.submitAndClaim(t.w1, "job", {}, SHORT_LEASE_MS);
      await t.rejects(s.recordStep({ taskId: task.id, workerId: t.w1, attempt: 7, name: "a", kind: "step", status: "done", seq: 1 }), LostLease, "wrong attempt");
      await t.sleep(EXPIRY_WAIT_MS);
      const stolen = await t.claimOne(t.w2);
      t.expect(stolen.id).toBe(task.id);
      const zombie = { taskId: task.id, workerId: t.w1, attempt: task.attempt };
      await t.rejects(s.recordStep({ ...zombie, name: "a", kind: "step", status: "done", seq: 1, result: "zombie" }), LostLease, "zombie record");
      await t.rejects(s.parkStep({ ...zombie, name: "nap", kind: "sleep", seq: 1, delayMs: 10 }), LostLease, "zombie park");
      await t.rejects(s.spawnStep({ ...zombie, name: "kid", seq: 1, child: { name: "child" } }), LostLease, "zombie spawn");
      t.expect(await s.steps(task.id)).toEqual([]);
      t.expect((await t.all()).filter((row) => row.name === "child")).toEqual([]);
      t.fields(await t.get(task.id), { status: "running", worker_id: t.w2 });
    },
  },
  {
    id: "steps-park-sleep",
    title: "a sleep parks the task: queued, no worker or lease, due at the wake time, attempt given back (parking never uses up maxAttempts), progress and message cleared",
    spec: SPEC,
    skipUnless: needsSteps,
    async run(t) {
      const s = steps(t);
      let claimed = await t.submitAndClaim(t.w1, "job", { maxAttempts: 1 });
      const id = claimed.id;
      // Parked with a wake time in the past and claimed again, over and over: never failed for attempts.
      for (let i = 0; i < 3; i++) {
        t.expect(claimed.attempt).toBe(1);
        t.expect(await s.parkStep({ taskId: id, workerId: t.w1, attempt: 1, name: "nap", kind: "sleep", seq: 1, untilMs: 1 })).toEqual({ kind: "parked", status: "queued" });
        claimed = await t.claimOne(t.w1);
      }
      await t.store.progress({ taskId: id, workerId: t.w1, progress: 0.4, message: "half" });
      const before = Date.now();
      const out = await s.parkStep({ taskId: id, workerId: t.w1, attempt: 1, name: "nap", kind: "sleep", seq: 1, delayMs: 60_000 });
      t.expect(out).toEqual({ kind: "parked", status: "queued" });
      const row = await t.get(id);
      // As every road back to queued (§4), a park clears progress and message: the resumed handler reports them again.
      t.fields(row, { status: "queued", worker_id: null, lease_until_ms: null, attempt: 0, progress: null, message: null });
      t.expect(row.run_at_ms).toBeGreaterThanOrEqual(before + 60_000 - 5_000);
      t.expect(await t.claim(t.w1)).toEqual([]);
      const [entry] = await s.steps(id);
      t.expect([entry?.name, entry?.kind, entry?.status]).toEqual(["nap", "sleep", "waiting"]);
      t.expect(entry?.wakeAtMs).toBe(row.run_at_ms);
    },
  },
  {
    id: "steps-park-cancel",
    title: "a task whose cancel was requested while it ran ends canceled when it parks",
    spec: SPEC,
    skipUnless: needsSteps,
    async run(t) {
      const s = steps(t);
      const task = await t.submitAndClaim(t.w1);
      await t.store.cancel(task.id);
      const out = await s.parkStep({ taskId: task.id, workerId: t.w1, attempt: task.attempt, name: "nap", kind: "sleep", seq: 1, delayMs: 1000 });
      t.expect(out).toEqual({ kind: "parked", status: "canceled" });
      t.fields(await t.get(task.id), { status: "canceled", lease_until_ms: null });
    },
  },
  {
    id: "steps-early-message",
    title: "a message sent before the wait is kept: the wait takes it without parking; each wait consumes one message, oldest first",
    spec: SPEC,
    skipUnless: needsSteps,
    async run(t) {
      const s = steps(t);
      const task = await t.submit("job");
      t.expect(await s.send({ taskId: task.id, name: "go", payload: { n: 1 } })).toEqual({ taskId: task.id, name: "go", woke: false });
      await s.send({ taskId: task.id, name: "go", payload: { n: 2 } });
      const claimed = await t.claimOne(t.w1);
      const owned = { taskId: task.id, workerId: t.w1, attempt: claimed.attempt };
      t.expect(await s.parkStep({ ...owned, name: "go", kind: "wait", seq: 1, message: "go", untilMs: PARK_FOREVER_AT_MS })).toEqual({ kind: "ready", result: { n: 1 } });
      t.expect(await s.parkStep({ ...owned, name: "go#2", kind: "wait", seq: 2, message: "go", untilMs: PARK_FOREVER_AT_MS })).toEqual({ kind: "ready", result: { n: 2 } });
      t.fields(await t.get(task.id), { status: "running" });
      t.expect((await s.steps(task.id)).map((e) => [e.name, e.status, e.result])).toEqual([
        ["go", "done", { n: 1 }],
        ["go#2", "done", { n: 2 }],
      ]);
      await t.rejects(s.send({ taskId: "task_01J0000000000000000000NONE", name: "go" }), InvalidArgument, "send to a missing task");
    },
  },
  {
    id: "steps-wake-on-message",
    title: "a message to a task parked waiting for its name makes it due now; another name does not",
    spec: SPEC,
    skipUnless: needsSteps,
    async run(t) {
      const s = steps(t);
      const task = await t.submitAndClaim(t.w1);
      const parked = await s.parkStep({ taskId: task.id, workerId: t.w1, attempt: task.attempt, name: "approval", kind: "wait", seq: 1, message: "approval", untilMs: PARK_FOREVER_AT_MS });
      t.expect(parked).toEqual({ kind: "parked", status: "queued" });
      t.fields(await t.get(task.id), { run_at_ms: PARK_FOREVER_AT_MS });
      t.expect(await t.claim(t.w1)).toEqual([]);
      t.expect((await s.send({ taskId: task.id, name: "other" })).woke).toBe(false);
      t.expect(await t.claim(t.w1)).toEqual([]);
      t.expect((await s.send({ taskId: task.id, name: "approval", payload: "yes" })).woke).toBe(true);
      const resumed = await t.claimOne(t.w2);
      t.expect(resumed.attempt).toBe(1);
      const owned = { taskId: task.id, workerId: t.w2, attempt: resumed.attempt };
      t.expect(await s.parkStep({ ...owned, name: "approval", kind: "wait", seq: 1, message: "approval", untilMs: PARK_FOREVER_AT_MS })).toEqual({ kind: "ready", result: "yes" });
      // The message for "other" stays for a later wait of that name.
      t.expect(await s.parkStep({ ...owned, name: "other", kind: "wait", seq: 2, message: "other", untilMs: PARK_FOREVER_AT_MS })).toEqual({ kind: "ready", result: null });
    },
  },
  {
    id: "steps-has-message",
    title: "hasMessage says whether an untaken message of a name is stored for the task, sent before or after its wait parked, until a wait takes it; sentBeforeMs bounds it",
    spec: SPEC,
    skipUnless: needsSteps,
    async run(t) {
      const s = steps(t);
      if (typeof s.hasMessage !== "function") {
        throw new ConformanceFailure("the store declares durableSteps but has no TaskStepStore.hasMessage (an optional read): add it, or skip 'steps-has-message' with a reason");
      }
      const task = await t.submit("job");
      const hasMessage = s.hasMessage.bind(s);
      const has = (name: string, sentBeforeMs?: number): Promise<boolean> => hasMessage(task.id, name, sentBeforeMs);
      t.expect(await has("go")).toBe(false);
      // Sent before any wait: kept, and counted until a wait takes it.
      await s.send({ taskId: task.id, name: "go", payload: 1 });
      t.expect(await has("go")).toBe(true);
      t.expect(await has("other")).toBe(false);
      t.expect(await hasMessage("task_01J0000000000000000000NONE", "go")).toBe(false);
      // A wait with a deadline takes only messages sent before it.
      t.expect(await has("go", 1)).toBe(false);
      t.expect(await has("go", PARK_FOREVER_AT_MS)).toBe(true);
      const claimed = await t.claimOne(t.w1);
      const owned = { taskId: task.id, workerId: t.w1, attempt: claimed.attempt };
      t.expect(await s.parkStep({ ...owned, name: "go", kind: "wait", seq: 1, message: "go", untilMs: PARK_FOREVER_AT_MS })).toEqual({ kind: "ready", result: 1 });
      t.expect(await has("go")).toBe(false);
      // Sent after the wait parked: the entry stays waiting until a worker resumes the task, the message is there.
      t.expect(await s.parkStep({ ...owned, name: "go#2", kind: "wait", seq: 2, message: "go", untilMs: PARK_FOREVER_AT_MS })).toEqual({ kind: "parked", status: "queued" });
      t.expect(await has("go")).toBe(false);
      t.expect((await s.send({ taskId: task.id, name: "go", payload: 2 })).woke).toBe(true);
      t.expect((await s.steps(task.id)).map((e) => [e.name, e.status])).toEqual([
        ["go", "done"],
        ["go#2", "waiting"],
      ]);
      t.expect(await has("go")).toBe(true);
      const resumed = await t.claimOne(t.w2);
      const again = { taskId: task.id, workerId: t.w2, attempt: resumed.attempt };
      t.expect(await s.parkStep({ ...again, name: "go#2", kind: "wait", seq: 2, message: "go", untilMs: PARK_FOREVER_AT_MS })).toEqual({ kind: "ready", result: 2 });
      t.expect(await has("go")).toBe(false);
    },
  },
  {
    id: "steps-wait-deadline",
    title: "a wait past its deadline (expired) takes a message sent before the deadline, else is recorded done with null without parking; a later message stays for the next wait",
    spec: SPEC,
    skipUnless: needsSteps,
    async run(t) {
      const s = steps(t);
      const task = await t.submitAndClaim(t.w1, "job", { maxAttempts: 1 });
      const deadline = async (name: string): Promise<number> => (await s.steps(task.id)).find((e) => e.name === name)?.wakeAtMs ?? -1;
      // In time: the message wakes the wait; the task resumes only after the deadline (as after a crash).
      t.expect(await s.parkStep({ taskId: task.id, workerId: t.w1, attempt: task.attempt, name: "a", kind: "wait", seq: 1, message: "a", delayMs: 100 })).toEqual({ kind: "parked", status: "queued" });
      t.expect((await s.send({ taskId: task.id, name: "a", payload: "in time" })).woke).toBe(true);
      await t.sleep(EXPIRY_WAIT_MS);
      const resumed = await t.claimOne(t.w2);
      const owned = { taskId: task.id, workerId: t.w2, attempt: resumed.attempt };
      t.expect(await s.parkStep({ ...owned, name: "a", kind: "wait", seq: 1, message: "a", untilMs: await deadline("a"), expired: true })).toEqual({ kind: "ready", result: "in time" });
      // Too late: the deadline passed before the message came: null, no park, and the message waits for the next wait of its name.
      t.expect(await s.parkStep({ ...owned, name: "b", kind: "wait", seq: 2, message: "b", delayMs: 1 })).toEqual({ kind: "parked", status: "queued" });
      await t.sleep(20);
      t.expect((await s.send({ taskId: task.id, name: "b", payload: "late" })).woke).toBe(false);
      const again = await t.claimOne(t.w1);
      const owner = { taskId: task.id, workerId: t.w1, attempt: again.attempt };
      t.expect(await s.parkStep({ ...owner, name: "b", kind: "wait", seq: 2, message: "b", untilMs: await deadline("b"), expired: true })).toEqual({ kind: "ready", result: null });
      t.fields(await t.get(task.id), { status: "running", worker_id: t.w1 });
      t.expect(await s.parkStep({ ...owner, name: "b#2", kind: "wait", seq: 3, message: "b", delayMs: 60_000 })).toEqual({ kind: "ready", result: "late" });
      t.expect((await s.steps(task.id)).map((e) => [e.name, e.status, e.result])).toEqual([
        ["a", "done", "in time"],
        ["b", "done", null],
        ["b#2", "done", "late"],
      ]);
    },
  },
  {
    id: "steps-spawn-join",
    title: "a spawn submits its child once per step name (parent and root set); a join parks until every child is terminal, then answers their rows in order",
    spec: SPEC,
    skipUnless: needsSteps,
    async run(t) {
      const s = steps(t);
      const parent = await t.submitAndClaim(t.w1, "parent");
      const owned = { taskId: parent.id, workerId: t.w1, attempt: parent.attempt };
      const a = await s.spawnStep({ ...owned, name: "a", seq: 1, child: { name: "child", payload: { i: 1 }, queue: "kids" } });
      const b = await s.spawnStep({ ...owned, name: "b", seq: 2, child: { name: "child", payload: { i: 2 }, queue: "kids" } });
      t.expect(await s.spawnStep({ ...owned, name: "a", seq: 1, child: { name: "child", payload: { i: 1 }, queue: "kids" } })).toBe(a);
      const children = (await t.all()).filter((row) => row.name === "child");
      t.expect(children.map((row) => row.id).sort()).toEqual([a, b].sort());
      for (const child of children) t.fields(child, { parent_id: parent.id, root_id: parent.root_id, status: "queued" });
      await t.rejects(s.spawnStep({ ...owned, name: "c", seq: 3, child: { name: "child", key: "k" } }), InvalidArgument, "keyed child");
      const join = { ...owned, name: "all", kind: "join" as const, seq: 3, childIds: [b, a], delayMs: 600_000 };
      t.expect(await s.parkStep(join)).toEqual({ kind: "parked", status: "queued" });
      // Another worker finishes the first child: the join wakes, re-checks and parks again.
      const first = await t.claimOne(t.w2, { queues: ["kids"] });
      await t.store.complete({ taskId: first.id, workerId: t.w2, attempt: first.attempt, result: "r1" });
      t.expect(await s.wakeJoin(parent.id)).toBe(true);
      t.expect(await s.wakeJoin(parent.id)).toBe(false);
      const resumed = await t.claimOne(t.w1);
      const again = { ...join, attempt: resumed.attempt };
      t.expect((await s.parkStep(again)).kind).toBe("parked");
      const second = await t.claimOne(t.w3, { queues: ["kids"] });
      await t.store.fail({ taskId: second.id, workerId: t.w3, attempt: second.attempt, error: { message: "no" }, retryable: false });
      t.expect(await s.wakeJoin(parent.id)).toBe(true);
      const last = await t.claimOne(t.w1);
      const ready = await s.parkStep({ ...join, attempt: last.attempt });
      t.expect(ready.kind).toBe("ready");
      const rows = (ready as { result: { id: string; status: string }[] }).result;
      t.expect(rows.map((row) => [row.id, row.status])).toEqual([
        [b, second.id === b ? "failed" : "succeeded"],
        [a, first.id === a ? "succeeded" : "failed"],
      ]);
      t.expect((await s.steps(parent.id)).map((e) => [e.name, e.kind, e.status])).toEqual([
        ["a", "spawn", "done"],
        ["b", "spawn", "done"],
        ["all", "join", "done"],
      ]);
    },
  },
  {
    id: "steps-join-wake-on-cancel",
    title: "a child a cancel ends (queued, so no worker settles it) makes its parent parked on a join due now, whether cancelled by id or in a cancel batch",
    spec: SPEC + ", §5.7",
    skipUnless: needsSteps,
    async run(t) {
      const s = steps(t);
      const parent = await t.submitAndClaim(t.w1, "parent");
      const owned = { taskId: parent.id, workerId: t.w1, attempt: parent.attempt };
      const a = await s.spawnStep({ ...owned, name: "a", seq: 1, child: { name: "child", queue: "kids" } });
      const b = await s.spawnStep({ ...owned, name: "b", seq: 2, child: { name: "child", queue: "kids" } });
      // A re-check far away: only the cancel's wake can make the parent due within this case.
      const join = { ...owned, name: "all", kind: "join" as const, seq: 3, childIds: [a, b], delayMs: 600_000 };
      t.expect(await s.parkStep(join)).toEqual({ kind: "parked", status: "queued" });
      t.expect(await t.claim(t.w1, { queues: [parent.queue] })).toEqual([]);
      t.fields(await t.store.cancel(a), { status: "canceled" });
      const resumed = await t.claimOne(t.w1, { queues: [parent.queue] });
      t.expect(resumed.id).toBe(parent.id);
      t.expect(await s.parkStep({ ...join, attempt: resumed.attempt })).toEqual({ kind: "parked", status: "queued" });
      t.expect(await t.store.cancelBatch({ queue: "kids", limit: 10 })).toEqual([b]);
      const last = await t.claimOne(t.w1, { queues: [parent.queue] });
      const ready = await s.parkStep({ ...join, attempt: last.attempt });
      t.expect(ready.kind).toBe("ready");
      t.expect((ready as { result: { id: string; status: string }[] }).result.map((row) => [row.id, row.status])).toEqual([
        [a, "canceled"],
        [b, "canceled"],
      ]);
    },
  },
  {
    id: "steps-send-refused",
    title: "send refuses, before it writes, a message name no wait can have ('#', over 200 UTF-16 code units) and a succeeded task; a failed task keeps the message for its retry",
    spec: SPEC,
    skipUnless: needsSteps,
    async run(t) {
      const s = steps(t);
      const task = await t.submit("job");
      const named = await t.rejects(s.send({ taskId: task.id, name: "a#2" }), InvalidArgument, "send with '#' in the name");
      t.expect(named.argument).toBe("name");
      await t.rejects(s.send({ taskId: task.id, name: "n".repeat(1000) }), InvalidArgument, "send with a 1000-character name");
      await t.rejects(s.send({ taskId: "task_01J0000000000000000000NONE", name: "go" }), InvalidArgument, "send to a missing task");
      const claimed = await t.claimOne(t.w1);
      await t.store.complete({ taskId: task.id, workerId: t.w1, attempt: claimed.attempt, result: null });
      const done = await t.rejects(s.send({ taskId: task.id, name: "a", payload: 1 }), InvalidArgument, "send to a succeeded task");
      t.expect(done.argument).toBe("taskId");
      t.expect(done.message).toMatch(/has succeeded/);

      const failing = await t.submitAndClaim(t.w2, "job", { maxAttempts: 1 });
      await t.store.fail({ taskId: failing.id, workerId: t.w2, attempt: failing.attempt, error: { message: "boom" }, retryable: false });
      t.expect(await s.send({ taskId: failing.id, name: "go", payload: "kept" })).toEqual({ taskId: failing.id, name: "go", woke: false });
      t.fields(await t.store.retry(failing.id, { resetAttempt: true }), { status: "queued" });
      const retried = await t.claimOne(t.w2);
      t.expect(await s.parkStep({ taskId: failing.id, workerId: t.w2, attempt: retried.attempt, name: "go", kind: "wait", seq: 1, message: "go", untilMs: PARK_FOREVER_AT_MS })).toEqual({
        kind: "ready",
        result: "kept",
      });
    },
  },
  {
    id: "steps-deleted-with-task",
    title: "purging a finished task deletes its journal and messages with it",
    spec: SPEC + ", §5.9",
    skipUnless: needsSteps,
    async run(t) {
      const s = steps(t);
      const task = await t.submitAndClaim(t.w1);
      const owned = { taskId: task.id, workerId: t.w1, attempt: task.attempt };
      await s.recordStep({ ...owned, name: "a", kind: "step", status: "done", seq: 1, result: 1 });
      await s.send({ taskId: task.id, name: "never-read", payload: 1 });
      await t.store.complete({ ...owned, result: null });
      const kept = await t.submitAndClaim(t.w2);
      await s.recordStep({ taskId: kept.id, workerId: t.w2, attempt: kept.attempt, name: "b", kind: "step", status: "done", seq: 1, result: 2 });
      await t.sleep(5);
      t.expect(await t.store.purge({ olderThanMs: 0 })).toEqual([task.id]);
      t.expect(await s.steps(task.id)).toEqual([]);
      t.expect((await s.steps(kept.id)).map((e) => e.name)).toEqual(["b"]);
    },
  },
  {
    id: "steps-record-concurrent",
    title: "concurrent records of many tasks (which a store may combine into one statement) are each fenced on their own",
    spec: SPEC,
    skipUnless: needsSteps,
    async run(t) {
      const s = steps(t);
      for (let i = 0; i < 6; i++) await t.submit("job", { payload: { i } });
      const claimed = await t.claim(t.w1, { limit: 6 });
      t.expect(claimed).toHaveLength(6);
      const records = claimed.map((task, i) =>
        // The third names a wrong attempt: its record alone must not land.
        s.recordStep({ taskId: task.id, workerId: t.w1, attempt: i === 2 ? task.attempt + 5 : task.attempt, name: "a", kind: "step", status: "done", seq: 1, result: i }),
      );
      const outcomes = await Promise.allSettled(records);
      t.expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "fulfilled", "rejected", "fulfilled", "fulfilled", "fulfilled"]);
      t.expect((outcomes[2] as PromiseRejectedResult).reason instanceof LostLease).toBe(true);
      for (const [i, task] of claimed.entries()) {
        t.expect((await s.steps(task.id)).map((e) => e.result)).toEqual(i === 2 ? [] : [i]);
      }
    },
  },
];
