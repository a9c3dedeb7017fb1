/**
 * The watched store on its own: it counts calls in flight, kicks after
 * writes and not after reads, claims or heartbeats, ends wake-up waits only
 * when kicked or aborted, reports rate-limit windows, and leaves the store
 * itself working (private fields, the gate property).
 */
import { describe, expect, it } from "vitest";
import type { QueueDepthGate } from "@cairnq/protocol";
import { MemoryStore } from "@cairnq/testing";
import { WatchedStore } from "../src/watched-store.js";

function watch(inner = new MemoryStore()) {
  const events = { wrote: 0, windows: [] as number[][] };
  const watched = new WatchedStore(inner, {
    wrote: () => (events.wrote += 1),
    rateLimited: (windows) => events.windows.push([...windows]),
  });
  return { watched, store: watched.store, inner, events };
}

describe("WatchedStore", () => {
  it("counts a call in flight until its promise settles, and its start and end as activity", async () => {
    const { watched, store } = watch();
    const before = watched.activity;
    const submitting = store.submit({ name: "job" });
    expect(watched.inFlight).toBe(1);
    await submitting;
    expect(watched.inFlight).toBe(0);
    expect(watched.activity).toBe(before + 2);
    await expect(store.get("")).rejects.toThrow();
    expect(watched.inFlight).toBe(0);
  });

  it("reports writes, and not reads, claims, heartbeats or progress", async () => {
    const { store, events } = watch();
    const task = await store.submit({ name: "job" });
    expect(events.wrote).toBe(1);
    await store.get(task.id);
    await store.list({});
    await store.stats();
    const [claimed] = await store.claim({ queues: ["default"], workerId: "worker_w", leaseMs: 30_000 });
    await store.heartbeat({ taskId: task.id, workerId: "worker_w", leaseMs: 30_000 });
    await store.progress({ taskId: task.id, workerId: "worker_w", progress: 0.5, message: null });
    expect(events.wrote).toBe(1);
    await store.complete({ taskId: task.id, workerId: "worker_w", attempt: claimed?.attempt, result: null });
    expect(events.wrote).toBe(2);
  });

  it("ends claimWake and taskDoneWake only when kicked or aborted, whatever their timeout", async () => {
    const { watched, store } = watch();
    let woke = 0;
    void store.claimWake(["default"], 1, undefined).then(() => (woke += 1));
    void store.taskDoneWake("task_x", 1, undefined).then(() => (woke += 1));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(woke).toBe(0);
    watched.kick();
    await new Promise((resolve) => setImmediate(resolve));
    expect(woke).toBe(2);
    const controller = new AbortController();
    const aborted = store.claimWake(["default"], 1, controller.signal);
    controller.abort();
    await aborted;
    await store.claimWake(["default"], 1, AbortSignal.abort());
  });

  it("declares no push wake-ups, so a worker claims after every wake", () => {
    const { store, inner } = watch();
    expect(inner.capabilities.claimReprobe).toBe(true);
    expect(store.capabilities).toEqual({ ...inner.capabilities, pushWakeups: false });
  });

  it("reports the rate-limit windows a claim opened, once per window length", async () => {
    const { store, events } = watch();
    for (let i = 0; i < 2; i += 1) await store.submit({ name: "api" });
    const flowControl = { api: { rateLimit: { max: 2, perMs: 60_000 } } };
    const rows = await store.claim({ queues: ["default"], workerId: "worker_w", leaseMs: 30_000, names: ["api"], flowControl, limit: 2 });
    expect(rows).toHaveLength(2);
    expect(events.windows).toEqual([[60_000]]);
    await store.claim({ queues: ["default"], workerId: "worker_w", leaseMs: 30_000, names: ["api"], flowControl, limit: 2 });
    expect(events.windows).toEqual([[60_000]]);
  });

  it("sets properties on the store itself, so its own methods see them", async () => {
    const { store, inner } = watch();
    const asked: string[] = [];
    const gate: QueueDepthGate = {
      acquire: async (queue) => {
        asked.push(queue);
      },
    };
    store.queueDepthGate = gate;
    // Reads through the proxy give the gate back (the client and the worker compare it before they uninstall theirs).
    expect(store.queueDepthGate).toBe(gate);
    await store.submit({ name: "job", queue: "mail" });
    expect(asked).toEqual(["mail"]);
    store.queueDepthGate = null;
    expect(inner.queueDepthGate).toBeNull();
    expect(store.queueDepthGate).toBeNull();
  });

  it("does not count a submit the gate holds as in flight while the gate waits, and counts the gate's probes", async () => {
    const { watched, store } = watch();
    let release = (): void => {};
    let probed: number | null = null;
    let inFlightWhileProbing: number | null = null;
    store.queueDepthGate = {
      acquire: async (queue, gated) => {
        const probe = gated.queueDepth(queue, 10);
        inFlightWhileProbing = watched.inFlight;
        probed = await probe;
        await new Promise<void>((resolve) => (release = resolve));
      },
    };
    const submitting = store.submit({ name: "job" });
    await new Promise((resolve) => setImmediate(resolve));
    expect([probed, inFlightWhileProbing]).toEqual([10, 1]);
    expect(watched.inFlight).toBe(0);
    release();
    await submitting;
    expect(watched.inFlight).toBe(0);
    expect(await store.list({})).toHaveLength(1);
  });
});
