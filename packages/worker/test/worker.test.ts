import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { DatabaseUnusable, isFatalError, ProtocolVersionMismatch, SchemaMismatch } from "@cairnq/protocol";
import { SQLiteStore } from "@cairnq/store-sqlite";
import type { WorkerErrorInfo } from "../src/index.js";
import { Worker } from "../src/index.js";
import { delay, gate, MemoryStore, spyStore, waitFor, waitForStatus } from "./support/helpers.js";
import { makeWorker } from "./support/worker.js";

const DAY = 24 * 3600_000;
describe("durations of 2^31 ms and more are honoured, not fired after ~1 ms", () => {
  it("maxRunMs: 30 days does not time out a 40 ms handler", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store, { maxRunMs: 30 * DAY });
    worker.task("x", async () => {
      await delay(40);
      return "finished";
    });
    const task = await store.submit({ name: "x", maxAttempts: 1 });
    void worker.run();
    const row = await waitForStatus(store, task.id, ["succeeded", "failed"]);
    expect(row).toMatchObject({ status: "succeeded", result: "finished" });
  });

  it("stopTimeoutMs: 2**31 lets a running handler finish instead of abandoning it at once", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store, { stopTimeoutMs: 2 ** 31 });
    const started = gate();
    worker.task("x", async () => {
      started.open();
      await delay(60);
      return "drained";
    });
    const stopped: number[] = [];
    worker.on("worker:stopped", (e) => stopped.push(e.abandoned));
    const task = await store.submit({ name: "x" });
    void worker.run();
    await started.promise;
    await worker.stop();
    expect(stopped).toEqual([0]);
    expect(await store.get(task.id)).toMatchObject({ status: "succeeded", result: "drained" });
  });

  it("heartbeatIntervalMs: 2**31 does not beat every millisecond", async () => {
    const spy = spyStore();
    const worker = makeWorker(spy.store, { leaseMs: 2 ** 33, heartbeatIntervalMs: 2 ** 31 });
    worker.task("x", async () => {
      await delay(80);
    });
    const task = await spy.store.submit({ name: "x" });
    void worker.run();
    await waitForStatus(spy.store, task.id, ["succeeded"]);
    expect(spy.callsOf("heartbeatBatch")).toHaveLength(0);
  });
});

describe("a worker that cannot work says so", () => {
  it("a SQLite path that is a directory, or a file that is not a database, rejects run() at once (real SQLite)", async () => {
    const dir = await mkdtemp(join(tmpdir(), "cairnq-worker-fatal-"));
    try {
      const file = join(dir, "notes.txt");
      await writeFile(file, "this is not a database, it is a shopping list\n".repeat(200));
      for (const path of [dir, file]) {
        const worker = new Worker(new SQLiteStore(path), { logger: null, pollIntervalMs: 10 });
        worker.task("x", () => "never");
        const err = await worker.run().then(
          () => null,
          (e: unknown) => e,
        );
        expect(isFatalError(err)).toBe(true);
        expect(String((err as Error).message)).toContain(path);
        expect(worker.running).toBe(false);
        await worker.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("a store that cannot be opened (DatabaseUnusable from connect) rejects run() at once, even with no handler registered", async () => {
    const unusable = new DatabaseUnusable("/srv/app/tasks.db", "it is a directory");
    const spy = spyStore(new MemoryStore(), { connect: () => Promise.reject(unusable) });
    const worker = new Worker(spy.store, { logger: null, pollIntervalMs: 10 });
    await expect(worker.run()).rejects.toBe(unusable);
    expect(worker.running).toBe(false);
    expect(spy.callsOf("claim")).toHaveLength(0);
    await worker.close();
  });

  it.each([
    ["ProtocolVersionMismatch", () => new ProtocolVersionMismatch(2, 1)],
    ["SchemaMismatch", () => new SchemaMismatch("the tasks table belongs to another installation")],
  ])("%s from a claim rejects run() after one claim, and drains running handlers first", async (_label, make) => {
    const spy = spyStore();
    const worker = makeWorker(spy.store, { concurrency: 2 });
    const started = gate();
    worker.task("slow", async () => {
      started.open();
      await delay(40);
      return "kept";
    });
    const task = await spy.store.submit({ name: "slow" });
    const running = worker.run();
    await started.promise;
    const fatal = make();
    spy.hooks.claim = () => Promise.reject(fatal);
    await expect(running).rejects.toBe(fatal);
    expect(await spy.store.get(task.id)).toMatchObject({ status: "succeeded", result: "kept" });
    const claimsAfter = spy.callsOf("claim").length;
    await delay(30);
    expect(spy.callsOf("claim").length).toBe(claimsAfter);
  });

  it("transient claim errors are reported and retried with backoff; work resumes when they stop", async () => {
    const spy = spyStore();
    const errors: WorkerErrorInfo[] = [];
    const worker = makeWorker(spy.store, { onError: (_err, info) => errors.push(info) });
    let failures = 2;
    spy.hooks.claim = (_args, next) => {
      if (failures > 0) {
        failures -= 1;
        return Promise.reject(Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" }));
      }
      return next();
    };
    worker.task("x", () => "ok");
    const task = await spy.store.submit({ name: "x" });
    void worker.run();
    const row = await waitForStatus(spy.store, task.id, ["succeeded"], 5000);
    expect(row.result).toBe("ok");
    expect(errors).toEqual([{ phase: "claim" }, { phase: "claim" }]);
    expect(worker.running).toBe(true);
  });

  it("with neither onError nor logger, a survived error reaches stderr; logger: null silences it", async () => {
    const lines: string[] = [];
    const write = vi.spyOn(process.stderr, "write").mockImplementation((chunk: string | Uint8Array) => {
      lines.push(String(chunk));
      return true;
    });
    try {
      for (const logger of [undefined, null]) {
        const spy = spyStore();
        const worker = new Worker(spy.store, { pollIntervalMs: 10, ...(logger === null ? { logger } : {}) });
        let failed = false;
        spy.hooks.claim = (_args, next) => {
          if (!failed) {
            failed = true;
            return Promise.reject(new Error("server is restarting"));
          }
          return next();
        };
        worker.task("x", () => "ok");
        void worker.run();
        await waitFor(() => spy.callsOf("claim").length >= 2, 3000);
        await worker.close();
        if (logger === undefined) {
          expect(lines.join("")).toMatch(/^cairnq error: server is restarting \{.*"phase":"claim"/m);
          lines.length = 0;
        } else {
          expect(lines).toEqual([]);
        }
      }
    } finally {
      write.mockRestore();
    }
  });
});

describe("an async logger, onError or listener that rejects does not crash the process", () => {
  /** Runs `body` while recording the process's unhandled rejections (each one would exit a plain Node process with 1). */
  async function unhandledDuring(body: () => Promise<void>): Promise<unknown[]> {
    const unhandled: unknown[] = [];
    const record = (reason: unknown): void => void unhandled.push(reason);
    process.on("unhandledRejection", record);
    try {
      await body();
      await delay(20); // unhandled rejections are detected after the microtask queue drains
    } finally {
      process.off("unhandledRejection", record);
    }
    return unhandled;
  }

  it("a logger whose methods reject (a remote sink that is down) is swallowed like one that throws", async () => {
    const rejecting = async (): Promise<void> => Promise.reject(new Error("log sink down"));
    const calls: string[] = [];
    const logger = Object.fromEntries(
      (["debug", "info", "warn", "error"] as const).map((level) => [level, (message: string) => (calls.push(`${level}: ${message}`), rejecting())]),
    );
    const unhandled = await unhandledDuring(async () => {
      const store = new MemoryStore();
      const worker = makeWorker(store, { logger, maxQueueDepth: 5 });
      worker.task("fails", () => {
        throw new Error("fail");
      });
      worker.task("ok", () => "ok");
      const failing = await store.submit({ name: "fails", maxAttempts: 2 });
      const ok = await store.submit({ name: "ok" });
      void worker.run();
      await waitForStatus(store, failing.id, ["failed"]);
      await waitForStatus(store, ok.id, ["succeeded"]);
      await worker.close();
    });
    expect(unhandled).toEqual([]);
    expect(calls).toEqual(expect.arrayContaining(["info: worker started", "info: task failed; will retry", "info: task failed", "debug: task succeeded", "info: worker stopped"]));
  });

  it("an async event listener's rejection is logged and ignored like a throw; an async onError's is swallowed", async () => {
    const logged: [string, Record<string, unknown> | undefined][] = [];
    const unhandled = await unhandledDuring(async () => {
      const store = new MemoryStore();
      const worker = makeWorker(store, {
        logger: { error: (message, fields) => void logged.push([message, fields]) },
        // eslint-disable-next-line @typescript-eslint/no-misused-promises -- the async hook is the case under test
        onError: async () => Promise.reject(new Error("onError sink down")),
        retryBackoffMs: 0,
      });
      const listenerError = new Error("listener sink down");
      // eslint-disable-next-line @typescript-eslint/no-misused-promises -- the async listener is the case under test
      worker.on("task:succeeded", async () => Promise.reject(listenerError));
      worker.task("ok", () => "ok");
      worker.task("bad-backoff", { retryBackoff: () => 1.5 }, () => {
        throw new Error("fail"); // its unusable retryBackoff is reported to onError
      });
      const ok = await store.submit({ name: "ok" });
      const bad = await store.submit({ name: "bad-backoff", maxAttempts: 2 });
      void worker.run();
      await waitForStatus(store, ok.id, ["succeeded"]);
      await waitForStatus(store, bad.id, ["failed"]);
      await waitFor(() => logged.some(([message]) => message === "a worker event listener threw; ignored"));
      expect(logged.find(([message]) => message === "a worker event listener threw; ignored")?.[1]).toMatchObject({ event: "task:succeeded", error: listenerError });
      await worker.close();
    });
    expect(unhandled).toEqual([]);
  });
});
