import { InvalidArgument } from "@cairnq/protocol";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { WatchSignal } from "../src/index.js";
import { CairnQ } from "../src/index.js";
import { watchStore } from "../src/watch.js";
import { RecordingStore } from "./support.js";

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

describe("watch", () => {
  it("passes every queued signal when no queues are given, and done signals unfiltered", () => {
    const store = new RecordingStore();
    const seen: WatchSignal[] = [];
    const stop = watchStore(store, {}, (s) => void seen.push(s));
    store.emit({ reason: "queued", queue: "a" });
    store.emit({ reason: "queued", queue: "b" });
    store.emit({ reason: "done", taskId: "task_1" });
    stop();
    expect(seen).toEqual([
      { reason: "queued", queue: "a" },
      { reason: "queued", queue: "b" },
      { reason: "done", taskId: "task_1" },
    ]);
  });

  it("filters queued signals by queue but never done signals", () => {
    const store = new RecordingStore();
    const seen: WatchSignal[] = [];
    const stop = watchStore(store, { queues: ["a"] }, (s) => void seen.push(s));
    store.emit({ reason: "queued", queue: "b" });
    store.emit({ reason: "done", taskId: "task_9" });
    store.emit({ reason: "queued", queue: "a" });
    stop();
    expect(seen).toEqual([
      { reason: "done", taskId: "task_9" },
      { reason: "queued", queue: "a" },
    ]);
  });

  it("refuses an unknown option, naming it: { queue: [...] } would watch every queue", () => {
    const store = new RecordingStore();
    const client = new CairnQ(store);
    expect(() => client.watch({ queue: ["emails"] } as never, () => {})).toThrow(
      expect.objectContaining({ name: "InvalidArgument", argument: "queue", message: expect.stringContaining("'queue' is not an option of watch (did you mean 'queues'?); the options are queues, pollMs") }),
    );
    expect(store.listeners.size).toBe(0);
  });

  it("emits poll every pollMs (default 2000) until stopped", async () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    const store = new RecordingStore();
    const client = new CairnQ(store);
    const seen: WatchSignal[] = [];
    const stop = client.watch({}, (s) => void seen.push(s));
    await vi.advanceTimersByTimeAsync(6_100);
    expect(seen).toEqual([{ reason: "poll" }, { reason: "poll" }, { reason: "poll" }]);
    stop();
    await vi.advanceTimersByTimeAsync(10_000);
    expect(seen).toHaveLength(3);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("honours pollMs", async () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    const store = new RecordingStore();
    let polls = 0;
    const stop = watchStore(store, { pollMs: 50 }, () => void (polls += 1));
    await vi.advanceTimersByTimeAsync(260);
    stop();
    expect(polls).toBe(5);
  });

  it("does not hold the process open: its timer is unref'd", () => {
    const spy = vi.spyOn(globalThis, "setInterval");
    const stop = watchStore(new RecordingStore(), { pollMs: 1000 }, () => {});
    const timer = spy.mock.results[0]?.value as NodeJS.Timeout;
    expect(timer.hasRef()).toBe(false);
    stop();
  });

  it("stop unsubscribes, is idempotent, and drops later signals", () => {
    const store = new RecordingStore();
    const onSignal = vi.fn();
    const stop = watchStore(store, {}, onSignal);
    expect(store.listeners.size).toBe(1);
    stop();
    stop();
    expect(store.listeners.size).toBe(0);
    store.emit({ reason: "done", taskId: "t" });
    expect(onSignal).not.toHaveBeenCalled();
  });

  it("survives a throwing or rejecting callback, reporting it to the logger", async () => {
    const store = new RecordingStore();
    const error = vi.fn();
    const client = new CairnQ(store, { logger: { error } });
    let calls = 0;
    const stop = client.watch({}, (signal) => {
      calls += 1;
      if (signal.reason === "done") throw new Error("sync boom");
      return Promise.reject(new Error("async boom"));
    });
    store.emit({ reason: "done", taskId: "t" });
    store.emit({ reason: "queued", queue: "q" });
    await new Promise((resolve) => setImmediate(resolve));
    store.emit({ reason: "done", taskId: "t2" });
    stop();
    expect(calls).toBe(3);
    expect(error).toHaveBeenCalledTimes(3);
    expect(error).toHaveBeenCalledWith("watch callback failed", expect.objectContaining({ reason: "done" }));
    expect(error.mock.calls.map((c) => ((c[1] as { error: Error }).error).message)).toEqual(["sync boom", "async boom", "sync boom"]);
  });

  it("swallows a failing callback silently without a logger, and a throwing logger too", () => {
    const store = new RecordingStore();
    const stopA = watchStore(store, {}, () => {
      throw new Error("x");
    });
    const stopB = watchStore(
      store,
      {},
      () => {
        throw new Error("y");
      },
      {
        error: () => {
          throw new Error("logger down");
        },
      },
    );
    expect(() => store.emit({ reason: "done", taskId: "t" })).not.toThrow();
    stopA();
    stopB();
  });

  it.each([
    [null, "options"],
    [{ pollMs: 0 }, "pollMs"],
    [{ pollMs: 1.5 }, "pollMs"],
    [{ queues: "emails" }, "queues"],
    [{ queues: [""] }, "queues"],
  ])("rejects bad options %o", (options, argument) => {
    const store = new RecordingStore();
    expect(() => watchStore(store, options as never, () => {})).toThrow(expect.objectContaining({ argument }));
    expect(store.listeners.size).toBe(0);
  });

  it("rejects a missing callback", () => {
    expect(() => watchStore(new RecordingStore(), {}, undefined as never)).toThrow(InvalidArgument);
  });
});
