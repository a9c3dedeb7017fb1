/**
 * Bad inputs are rejected before anything is written (§5.1 "validate first",
 * §5.4, §5.6, §5.9). Every case here checks the rejection *and* that the
 * store is unchanged. Which error class is used is checked separately
 * (`input-errors-are-invalid-argument`), so a third-party store that throws
 * its own validation errors can opt out of that one case with a reason.
 */
import type { ClaimInput, SubmitInput, Task } from "@cairnq/protocol";
import { InvalidArgument, MAX_DELAY_MS } from "@cairnq/protocol";
import type { CaseContext, ConformanceCase } from "../case.js";
import { LEASE_MS } from "../case.js";

/** Each bad submit must reject, and neither a row nor its key may appear. */
function badSubmits(id: string, title: string, inputs: [string, SubmitInput][]): ConformanceCase {
  return {
    id,
    title,
    spec: "§5.1",
    async run(t) {
      for (const [label, input] of inputs) {
        await t.rejectsAny(t.store.submit(input), `submit with ${label}`);
        await t.rejectsAny(t.store.submit({ ...input, key: `k-${label}` }), `keyed submit with ${label}`);
        t.expect(await t.store.getByKey(`k-${label}`)).toBeNull();
      }
      t.expect(await t.all()).toEqual([]);
    },
  };
}

/** A running task and a snapshot of every row, to prove a rejected write changed nothing. */
async function runningSnapshot(t: CaseContext): Promise<{ task: Task; before: Task[] }> {
  const task = await t.submitAndClaim(t.w1);
  await t.submit("idle");
  return { task, before: await t.all() };
}

export const inputCases: readonly ConformanceCase[] = [
  badSubmits("input-unknown-conflict", "an unknown conflict strategy is rejected, writing nothing", [
    ["conflict 'upsert'", { name: "job", conflict: "upsert" as never }],
    ["conflict ''", { name: "job", conflict: "" as never }],
  ]),
  badSubmits("input-max-attempts", "maxAttempts 0, -1 and 1.5 are rejected, writing nothing", [
    ["maxAttempts 0", { name: "job", maxAttempts: 0 }],
    ["maxAttempts -1", { name: "job", maxAttempts: -1 }],
    ["maxAttempts 1.5", { name: "job", maxAttempts: 1.5 }],
    ["maxAttempts NaN", { name: "job", maxAttempts: Number.NaN }],
  ]),
  badSubmits("input-negative-run-at-delay", "a negative or fractional runAtDelayMs is rejected, writing nothing", [
    ["runAtDelayMs -1", { name: "job", runAtDelayMs: -1 }],
    ["runAtDelayMs 0.5", { name: "job", runAtDelayMs: 0.5 }],
  ]),
  badSubmits("input-empty-name-or-queue", "an empty name or queue is rejected, writing nothing", [
    ["name ''", { name: "" }],
    ["queue ''", { name: "job", queue: "" }],
  ]),
  {
    id: "input-bad-lease",
    title: "claim and heartbeat reject a negative lease, writing nothing",
    spec: "§5.10, §5.11",
    async run(t) {
      const { task, before } = await runningSnapshot(t);
      const claim: ClaimInput = { queues: ["default"], workerId: t.w2, leaseMs: -1, limit: 10 };
      await t.rejectsAny(t.store.claim(claim), "claim with leaseMs -1");
      await t.rejectsAny(t.store.heartbeat({ taskId: task.id, workerId: t.w1, leaseMs: -1 }), "heartbeat with leaseMs -1");
      await t.rejectsAny(t.store.heartbeatBatch({ taskIds: [task.id], workerId: t.w1, leaseMs: -1 }), "heartbeatBatch with leaseMs -1");
      t.expect(await t.all()).toEqual(before);
    },
  },
  {
    id: "input-bad-fail-delay",
    title: "fail rejects a negative delayMs, writing nothing",
    spec: "§5.16",
    async run(t) {
      const { task, before } = await runningSnapshot(t);
      await t.rejectsAny(t.store.fail({ taskId: task.id, workerId: t.w1, error: {}, delayMs: -5 }), "fail with delayMs -5");
      t.expect(await t.all()).toEqual(before);
    },
  },
  {
    id: "input-bad-list",
    title: "list rejects an unknown status or order, a negative limit or offset, beforeId without order 'id', and a key it does not take (InvalidArgument naming it)",
    spec: "§5.4",
    async run(t) {
      await t.submit("job");
      await t.rejectsAny(t.store.list({ status: "pending" as never }), "list with status 'pending'");
      await t.rejectsAny(t.store.list({ limit: -1 }), "list with limit -1");
      await t.rejectsAny(t.store.list({ offset: -1 }), "list with offset -1");
      await t.rejectsAny(t.store.list({ order: "newest" as never }), "list with order 'newest'");
      await t.rejectsAny(t.store.list({ beforeId: "task_0" }), "list with beforeId but without order 'id'");
      for (const key of ["parentId", "stauts"]) {
        const err = await t.rejects(t.store.list({ [key]: "queued" }), InvalidArgument, `list with the unknown key '${key}'`);
        t.expect(err.argument).toBe(key);
      }
    },
  },
  {
    id: "input-bad-purge",
    title: "purge rejects a non-terminal status, a negative or non-finite olderThanMs and a limit below 1, deleting nothing",
    spec: "§5.9",
    async run(t) {
      const task = await t.submitAndClaim(t.w1);
      await t.store.complete({ taskId: task.id, workerId: t.w1, result: null });
      await t.sleep(20);
      await t.rejectsAny(t.store.purge({ status: "queued" as never }), "purge with status 'queued'");
      await t.rejectsAny(t.store.purge({ olderThanMs: -1 }), "purge with olderThanMs -1");
      await t.rejectsAny(t.store.purge({ olderThanMs: Number.POSITIVE_INFINITY }), "purge with olderThanMs Infinity");
      await t.rejectsAny(t.store.purge({ limit: 0 }), "purge with limit 0");
      t.expect(await t.all()).toHaveLength(1);
    },
  },
  {
    id: "input-purge-cutoff-bound",
    title: "purge refuses an olderThanMs over MAX_DELAY_MS with InvalidArgument before the store subtracts it from its clock, deleting nothing",
    spec: "§5.9",
    async run(t) {
      const task = await t.submitAndClaim(t.w1);
      await t.store.complete({ taskId: task.id, workerId: t.w1, result: null });
      t.expect((await t.store.purge({ olderThanMs: MAX_DELAY_MS })).length).toBe(0);
      for (const olderThanMs of [MAX_DELAY_MS + 1, 1e20, Number.MAX_VALUE]) {
        const err = await t.rejects(t.store.purge({ olderThanMs }), InvalidArgument, `purge with olderThanMs ${olderThanMs}`);
        t.expect(err.argument).toBe("olderThanMs");
        t.expect(err.message).toContain(`${MAX_DELAY_MS} (MAX_DELAY_MS`);
      }
      t.expect(await t.all()).toHaveLength(1);
    },
  },
  {
    id: "input-bad-queue-depth",
    title: "queueDepth rejects a negative or fractional maxDepth",
    spec: "§5.6",
    async run(t) {
      await t.rejectsAny(t.store.queueDepth("default", -1), "queueDepth with maxDepth -1");
      await t.rejectsAny(t.store.queueDepth("default", 1.5), "queueDepth with maxDepth 1.5");
    },
  },
  {
    id: "input-errors-are-invalid-argument",
    title: "rejected inputs raise InvalidArgument naming the argument, as the shared validation does",
    spec: "§5.1 (validate first), design: bad input fails the same way on every store",
    async run(t) {
      const expectations: [string, string, () => Promise<unknown>][] = [
        ["conflict", "unknown conflict", () => t.store.submit({ name: "job", conflict: "upsert" as never })],
        ["maxAttempts", "maxAttempts 0", () => t.store.submit({ name: "job", maxAttempts: 0 })],
        ["runAtDelayMs", "runAtDelayMs -1", () => t.store.submit({ name: "job", runAtDelayMs: -1 })],
        ["runAtDelayMs", "runAtDelayMs past MAX_DELAY_MS", () => t.store.submit({ name: "job", runAtDelayMs: MAX_DELAY_MS + 1 })],
        ["name", "empty name", () => t.store.submit({ name: "" })],
        ["queue", "empty queue", () => t.store.submit({ name: "job", queue: "" })],
        ["leaseMs", "claim leaseMs -1", () => t.store.claim({ queues: ["default"], workerId: t.w1, leaseMs: -1 })],
        ["status", "list status 'pending'", () => t.store.list({ status: "pending" as never })],
        ["status", "purge status 'queued'", () => t.store.purge({ status: "queued" as never })],
        ["maxDepth", "queueDepth -1", () => t.store.queueDepth("default", -1)],
      ];
      for (const [argument, label, call] of expectations) {
        const err = await t.rejects(call(), InvalidArgument, label);
        t.expect({ label, argument: err.argument }).toEqual({ label, argument });
      }
      t.expect(await t.store.claim({ queues: ["default"], workerId: t.w1, leaseMs: LEASE_MS })).toEqual([]);
    },
  },
];
