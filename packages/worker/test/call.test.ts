import { describe, expect, it } from "vitest";
import type { Task } from "@cairnq/protocol";
import { systemClock } from "@cairnq/runtime";
import type { CallHost } from "../src/call.js";
import { Call } from "../src/call.js";
import type { Heartbeat } from "../src/heartbeat.js";
import type { ContextHost } from "../src/task-context.js";
import { Context } from "../src/task-context.js";
import type { Registration } from "../src/task-registry.js";
import { MemoryStore } from "./support/helpers.js";

const WORKER_ID = "worker_call_test";

const REGISTRATION: Registration = { name: "t", handler: () => null, batch: 2, concurrency: null, resource: null };

/** A call of `count` tasks claimed from a fresh store, with a host and a heartbeat that record what the call asks of them. */
async function claimedCall(count: number, registered = true) {
  const registration = registered ? REGISTRATION : undefined;
  const store = new MemoryStore();
  for (let i = 0; i < count; i += 1) await store.submit({ name: "t" });
  const rows: Task[] = await store.claim({ queues: ["default"], workerId: WORKER_ID, leaseMs: 60_000, names: ["t"], limit: count });
  const contextHost: ContextHost = {
    store,
    workerId: WORKER_ID,
    leaseMs: 60_000,
    clock: systemClock,
    failDelayMs: () => 0,
    settled: () => {},
    lost: () => {},
  };
  const contexts = rows.map((row) => new Context(contextHost, row, Date.now()));
  const settling: Call[] = [];
  const canceled: Context[] = [];
  const host: CallHost = {
    settling: (call) => settling.push(call),
    cancelWaiting: (ctx) => {
      canceled.push(ctx);
      return Promise.resolve();
    },
    clock: systemClock,
  };
  const released: string[] = [];
  const heartbeat = { add: () => {}, release: (ctx: Context) => released.push(ctx.taskId) } as unknown as Heartbeat;
  const call = new Call(host, registration, contexts, 0);
  if (registration !== undefined) call.join(heartbeat);
  return { call, contexts, settling, canceled, released };
}

describe("Call: the phases of one handler call", () => {
  it("a registered call starts buffered, then runs with every live task once admission starts it", async () => {
    const { call, contexts, settling } = await claimedCall(2);
    expect(call.phase).toBe("buffered");
    expect(call.handed).toEqual([]);
    const started = call.whenStarted();
    call.start();
    expect(call.phase).toBe("running");
    expect(call.handed).toEqual(contexts);
    await expect(started).resolves.toBe(true);
    expect(settling).toEqual([]);
  });

  it("a buffered call starts with only the tasks still live, and is dropped when none is", async () => {
    const some = await claimedCall(2);
    (some.contexts[0] as Context).markLost("heartbeat");
    some.call.start();
    expect(some.call.handed).toEqual([some.contexts[1]]);

    const none = await claimedCall(1);
    const started = none.call.whenStarted();
    (none.contexts[0] as Context).markLost("heartbeat");
    none.call.start();
    expect(none.call.phase).toBe("settling");
    expect(none.settling).toEqual([none.call]);
    expect(none.released).toEqual([(none.contexts[0] as Context).taskId]);
    await expect(started).resolves.toBe(false);
  });

  it("review settles a buffered task whose cancel was seen, and drops a call with nothing left to run", async () => {
    const { call, contexts, canceled, settling } = await claimedCall(2);
    (contexts[0] as Context).recordCancel(true);
    (contexts[1] as Context).markLost("heartbeat");
    call.review();
    expect(canceled).toEqual([contexts[0]]);
    expect(call.early).toHaveLength(1);
    expect(call.phase).toBe("buffered"); // the canceled task is live until its settlement begins
    (contexts[0] as Context).beginSettle();
    call.review();
    expect(call.phase).toBe("settling");
    expect(settling).toEqual([call]);
  });

  it("review leaves a started call alone", async () => {
    const { call, contexts, canceled } = await claimedCall(1);
    call.start();
    (contexts[0] as Context).recordCancel(true);
    call.review();
    expect(canceled).toEqual([]);
    expect(call.phase).toBe("running");
  });

  it("the handler's end makes a running call settling, unless it was abandoned", async () => {
    const ended = await claimedCall(1);
    ended.call.start();
    ended.call.handlerEnded(false);
    expect(ended.call.phase).toBe("settling");
    expect(ended.settling).toEqual([ended.call]);
    expect(ended.released).toHaveLength(1);

    const abandoned = await claimedCall(1);
    abandoned.call.start();
    abandoned.call.handlerEnded(true);
    expect(abandoned.call.phase).toBe("running");
    expect(abandoned.settling).toEqual([]);
    expect(abandoned.released).toHaveLength(1);
  });

  it("abandon lets go of a running call (its hook ends the handler's wait) and drops a buffered one; a settling call is left alone", async () => {
    const running = await claimedCall(1);
    running.call.start();
    let hooked = 0;
    running.call.onAbandon({ abandoned: () => (hooked += 1) });
    expect(running.call.abandon()).toBe(true);
    expect(running.call.abandoned).toBe(true);
    expect(hooked).toBe(1);
    expect((running.contexts[0] as Context).lostLease).toBe(true);
    expect(running.call.phase).toBe("running");

    const buffered = await claimedCall(1);
    expect(buffered.call.abandon()).toBe(true);
    expect(buffered.call.abandoned).toBe(false);
    expect(buffered.call.phase).toBe("settling");
    expect(buffered.settling).toEqual([buffered.call]);

    const settling = await claimedCall(1);
    settling.call.start();
    settling.call.handlerEnded(false);
    expect(settling.call.abandon()).toBe(false);
    expect((settling.contexts[0] as Context).lostLease).toBe(false);
  });

  it("an unregistered name's call is settling from the start and hands every task to its fails", async () => {
    const { call, contexts, settling } = await claimedCall(2, false);
    expect(call.phase).toBe("settling");
    expect(call.heartbeat).toBeNull();
    call.start();
    expect(call.handed).toEqual(contexts);
    expect(call.phase).toBe("settling");
    expect(settling).toEqual([]);
  });
});
