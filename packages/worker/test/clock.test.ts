/**
 * The `clock` option: a worker reads the time and starts its timers on the
 * clock it is given. A clock driven by hand shows it — its `maxRunMs`,
 * heartbeats and event durations follow that clock and ignore real time.
 */
import { describe, expect, it } from "vitest";
import type { RuntimeClock, TimerHandle, TimerOptions } from "@cairnq/runtime";
import { sleepOn } from "@cairnq/runtime";
import { Worker } from "../src/index.js";
import { MemoryStore } from "./support/helpers.js";

/** A clock that moves only when `tick` says so; its timers fire in due order. */
class HandClock implements RuntimeClock {
  #ms = 1_800_000_000_000;
  #timers: { atMs: number; callback: () => void; live: boolean }[] = [];

  now(): number {
    return this.#ms;
  }

  monotonicMs(): number {
    return this.#ms;
  }

  startTimer(callback: () => void, ms: number, options: TimerOptions = {}): TimerHandle {
    const timer = { atMs: this.#ms + Math.max(0, ms), callback, live: true };
    this.#timers.push(timer);
    const handle = {
      fired: false,
      clear: () => {
        timer.live = false;
      },
    };
    options.signal?.addEventListener("abort", handle.clear, { once: true });
    return handle;
  }

  sleep(ms: number, options?: TimerOptions): Promise<void> {
    return sleepOn((callback, delay, opts) => this.startTimer(callback, delay, opts), ms, options);
  }

  /** Pending timers not yet fired or cleared. */
  get pending(): number {
    return this.#timers.filter((t) => t.live).length;
  }

  /** Moves the clock by `ms`, firing every timer due on the way, with a macrotask turn after each. */
  async tick(ms: number): Promise<void> {
    const target = this.#ms + ms;
    for (;;) {
      const due = this.#timers.filter((t) => t.live && t.atMs <= target).sort((a, b) => a.atMs - b.atMs)[0];
      if (due === undefined) break;
      due.live = false;
      this.#ms = Math.max(this.#ms, due.atMs);
      due.callback();
      await new Promise((resolve) => setImmediate(resolve));
    }
    this.#ms = target;
  }
}

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

describe("WorkerOptions.clock", () => {
  it("maxRunMs and heartbeats run on the given clock: real time passing does nothing, moving the clock fires them", async () => {
    const clock = new HandClock();
    const store = new MemoryStore({ clock: () => clock.now() });
    const worker = new Worker(store, { clock, maxRunMs: 60_000, leaseMs: 30_000, pollIntervalMs: 5, retryBackoffMs: 0, logger: null });
    const durations: number[] = [];
    worker.on("task:failed", (e) => durations.push(e.durationMs));
    worker.task("hang", (ctx) => new Promise((resolve) => ctx.signal.addEventListener("abort", resolve)));
    const task = await store.submit({ name: "hang", maxAttempts: 1 });
    const running = worker.run();
    try {
      await until(() => store.get(task.id), (row) => row?.status === "running");
      // Real time passes; the system clock would have fired a 10 ms heartbeat many times by now, this clock none.
      await new Promise((resolve) => setTimeout(resolve, 30));
      expect((await store.get(task.id))?.lease_until_ms).toBe(clock.now() + 30_000);
      // The heartbeat (every 10 s of this clock) and the maxRunMs timer are this clock's.
      expect(clock.pending).toBe(2);
      await clock.tick(10_000);
      expect((await store.get(task.id))?.lease_until_ms).toBe(clock.now() + 30_000);
      await clock.tick(50_000);
      const row = await until(() => store.get(task.id), (r) => r?.status === "failed");
      expect(row).toMatchObject({ status: "failed", error: { code: "handler_timeout" } });
      expect(durations).toEqual([60_000]);
    } finally {
      await worker.stop();
      await running;
    }
  });
});
