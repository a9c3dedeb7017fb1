/**
 * The umbrella: every name of the public floor (`FLOOR` below: the client,
 * worker, retention and store classes and the protocol's shared names and
 * errors, which applications of earlier releases already import and which may
 * never be renamed) is exported by `cairnq`, as the same binding its package
 * exports. That importing `cairnq` loads no database
 * driver until a factory's store opens is checked in a fresh process running
 * the built package (integration/umbrella.test.ts).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, expectTypeOf, it } from "vitest";
import * as cairnq from "cairnq";
import * as client from "@cairnq/client";
import * as protocol from "@cairnq/protocol";
import * as protocolAdapter from "@cairnq/protocol/adapter";
import * as protocolSdk from "@cairnq/protocol/sdk";
import * as retention from "@cairnq/retention";
import * as storeMysql from "@cairnq/store-mysql";
import * as storePostgres from "@cairnq/store-postgres";
import * as storeSqlite from "@cairnq/store-sqlite";
import * as worker from "@cairnq/worker";

/** The floor's error classes below `CairnQError` (all defined by `@cairnq/protocol`). */
const ERRORS = [
  "AlreadyExists",
  "QueueFull",
  "TaskTimeout",
  "TaskFailed",
  "TaskCanceled",
  "TaskError",
  "LostLease",
  "EventLoopBlocked",
  "ProtocolVersionMismatch",
  "SchemaMismatch",
  "SerializationError",
  "KeyHeldByOtherTask",
] as const;

/** The floor's runtime names, by the package that defines them. */
const FLOOR: Record<string, { from: Record<string, unknown>; names: string[] }> = {
  "@cairnq/protocol": {
    from: protocol,
    names: [
      "STATUSES",
      "isTerminal",
      "isTerminalStatus",
      "isQueued",
      "isRunning",
      "isSucceeded",
      "isFailed",
      "isCanceled",
      "cancelRequested",
      "defineTask",
      "CairnQError",
      ...ERRORS,
    ],
  },
  // The bounds the README's "What a task can hold" names for applications to check their inputs against.
  "@cairnq/protocol/adapter": { from: protocolAdapter, names: ["TEXT_LIMITS", "MAX_JSON_DEPTH"] },
  "@cairnq/protocol/sdk": { from: protocolSdk, names: ["MAX_RETRY_DELAY_MS"] },
  "@cairnq/client": { from: client, names: ["CairnQ", "listPage", "WaitInterrupted"] },
  "@cairnq/worker": { from: worker, names: ["Worker"] },
  "@cairnq/retention": { from: retention, names: ["RetentionSweeper"] },
  "@cairnq/store-sqlite": { from: storeSqlite, names: ["SQLiteStore"] },
  "@cairnq/store-postgres": { from: storePostgres, names: ["PostgresStore"] },
  "@cairnq/store-mysql": { from: storeMysql, names: ["MySQLStore"] },
};

const CLIENT_METHODS = [
  "connect",
  "close",
  "submit",
  "get",
  "getByKey",
  "getStatus",
  "getStatusByKey",
  "list",
  "stats",
  "queueDepth",
  "cancel",
  "cancelByKey",
  "retry",
  "retryByKey",
  "purge",
  "wait",
  "waitByKey",
  "call",
  "watch",
];
const WORKER_METHODS = ["task", "run", "serve", "stop", "close"];
const RETENTION_METHODS = ["start", "stop", "sweep"];

const exported = cairnq as unknown as Record<string, unknown>;

function missingMethods(instance: object, methods: string[]): string[] {
  return methods.filter((name) => typeof (instance as Record<string, unknown>)[name] !== "function");
}

describe("cairnq re-exports the public floor", () => {
  let dir: string | undefined;

  afterEach(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
    dir = undefined;
  });

  it("every runtime name of the floor, as the very binding of the package that defines it", () => {
    const missing: string[] = [];
    const foreign: string[] = [];
    for (const [pkg, { from, names }] of Object.entries(FLOOR)) {
      for (const name of names) {
        if (exported[name] === undefined) missing.push(`${name} (${pkg})`);
        else if (from[name] === undefined) missing.push(`${name}: not even exported by ${pkg}`);
        // CairnQ and Worker are the umbrella's subclasses with factories; everything else is re-exported as is.
        else if (name !== "CairnQ" && name !== "Worker" && exported[name] !== from[name]) foreign.push(`${name} (${pkg})`);
      }
    }
    expect(missing, "floor names missing from cairnq").toEqual([]);
    expect(foreign, "cairnq exports a different binding than the package").toEqual([]);
    expect(cairnq.STATUSES).toEqual(["queued", "running", "succeeded", "failed", "canceled"]);
  });

  it("the floor's types (checked by `tsc --noEmit`, which type-checks this file)", () => {
    expectTypeOf<cairnq.TaskStatus>().toEqualTypeOf<"queued" | "running" | "succeeded" | "failed" | "canceled">();
    expectTypeOf<cairnq.Conflict>().toEqualTypeOf<"reuse" | "reuse-succeeded" | "reject" | "replace">();
    expectTypeOf<cairnq.Task["status"]>().toEqualTypeOf<cairnq.TaskStatus>();
    expectTypeOf<cairnq.Task>().toHaveProperty("run_at_ms");
    expectTypeOf<cairnq.Task>().toHaveProperty("max_attempts");
    expectTypeOf<cairnq.TaskRef>().toHaveProperty("status");
    expectTypeOf<cairnq.TaskDef<{ n: number }, { doubled: number }>>().toHaveProperty("name");
    expectTypeOf<cairnq.TaskStore>().toHaveProperty("heartbeatBatch");
    expectTypeOf<cairnq.QueueDepthGate>().not.toBeNever();
    expectTypeOf<cairnq.TaskContext>().toHaveProperty("canceled");
    expectTypeOf<cairnq.TaskContext>().toHaveProperty("signal").toEqualTypeOf<AbortSignal>();
    expectTypeOf(cairnq.CairnQ.sqlite).returns.toEqualTypeOf<cairnq.CairnQ>();
    expectTypeOf(cairnq.Worker.sqlite).returns.toEqualTypeOf<cairnq.Worker>();
  });

  it("leaves plumbing in its package: the gate class and the store contract's inputs are not umbrella names", () => {
    expect(exported.BackpressureGate, "import it from @cairnq/client").toBeUndefined();
    expect(client.BackpressureGate).toBeTypeOf("function");
    // Each line fails `tsc --noEmit` (which type-checks this file) if the umbrella exports the type again.
    // @ts-expect-error ClaimInput is written by store adapters: @cairnq/protocol
    expectTypeOf<cairnq.ClaimInput>().not.toBeAny();
    // @ts-expect-error SubmitInput is written by store adapters: @cairnq/protocol
    expectTypeOf<cairnq.SubmitInput>().not.toBeAny();
    // @ts-expect-error StoreSignal is what a store pushes to its subscribers: @cairnq/protocol
    expectTypeOf<cairnq.StoreSignal>().not.toBeAny();
    expectTypeOf<cairnq.Explanation["state"]>().toEqualTypeOf<client.ExplainState>();
  });

  it("every error class is a CairnQError, and TaskError / TaskFailed carry their structured fields", () => {
    const notErrors = ERRORS.filter((name) => !(cairnq[name].prototype instanceof cairnq.CairnQError));
    expect(notErrors).toEqual([]);
    const thrown = new cairnq.TaskError("out of paper", { code: "no_paper", retryable: true, details: { tray: 2 } });
    expect(thrown).toBeInstanceOf(cairnq.CairnQError);
    expect(thrown).toMatchObject({ code: "no_paper", retryable: true, details: { tray: 2 }, message: "out of paper" });
    expect(new cairnq.TaskError("no default").retryable).toBe(false);
  });

  it("CairnQ.sqlite and Worker.sqlite build the floor's client and worker; RetentionSweeper has its methods", async () => {
    dir = await mkdtemp(join(tmpdir(), "cairnq-umbrella-"));
    const file = join(dir, "cairnq.db");

    const api = cairnq.CairnQ.sqlite(file);
    const runner = cairnq.Worker.sqlite(file);
    const sweeper = new cairnq.RetentionSweeper(api.store, { olderThanMs: 60_000 });
    try {
      expect(api).toBeInstanceOf(client.CairnQ);
      expect(api.store).toBeInstanceOf(cairnq.SQLiteStore);
      expect(missingMethods(api, CLIENT_METHODS)).toEqual([]);

      expect(runner).toBeInstanceOf(worker.Worker);
      expect(missingMethods(runner, WORKER_METHODS)).toEqual([]);
      expect(runner.workerId).toEqual(expect.any(String));
      const other = cairnq.Worker.sqlite(file);
      expect(other.workerId, "a worker id is never shared").not.toBe(runner.workerId);
      await other.close();

      expect(missingMethods(sweeper, RETENTION_METHODS)).toEqual([]);
    } finally {
      await sweeper.stop();
      await runner.close();
      await api.close();
    }
  });

  it("CairnQ.sqlite(path, { retention: { olderThanMs } }) — the seed's documented form — builds, owns and stops a sweeper on that file", async () => {
    dir = await mkdtemp(join(tmpdir(), "cairnq-umbrella-"));
    const file = join(dir, "cairnq.db");
    const store = new cairnq.SQLiteStore(file);
    const old = await store.submit({ name: "job" });
    const [claimed] = await store.claim({ queues: ["default"], workerId: "worker_umbrella", leaseMs: 5000, limit: 1 });
    expect(claimed?.id).toBe(old.id);
    await store.complete({ taskId: old.id, workerId: "worker_umbrella", result: { ok: true } });
    const queued = await store.submit({ name: "job" });

    const seeded = cairnq.CairnQ.sqlite(file, { retention: { olderThanMs: 7 * 24 * 3600_000 } });
    await seeded.close();
    const api = cairnq.CairnQ.sqlite(file, { retention: { olderThanMs: 0, intervalMs: 10 } });
    try {
      const deadline = Date.now() + 5000;
      while ((await store.get(old.id)) !== null) {
        if (Date.now() > deadline) throw new Error("the owned sweeper did not purge the old succeeded task within 5000 ms");
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      expect((await store.get(queued.id))?.status).toBe("queued");
    } finally {
      await api.close();
      await store.close();
    }
    expect(() => cairnq.CairnQ.sqlite(file, { retention: { olderThanMS: 5 } as never })).toThrow(expect.objectContaining({ name: "InvalidArgument", argument: "olderThanMS" }));
  });

  it("CairnQ.postgres and Worker.postgres build a client and worker on a PostgresStore (no connection until used)", async () => {
    const dsn = "postgres://postgres@127.0.0.1:1/never-connected";
    const api = cairnq.CairnQ.postgres(dsn, { schema: "cairnq_umbrella", max: 2 });
    const runner = cairnq.Worker.postgres(dsn, { schema: "cairnq_umbrella", concurrency: 2 });
    try {
      expect(api.store).toBeInstanceOf(cairnq.PostgresStore);
      expect(runner.store).toBeInstanceOf(cairnq.PostgresStore);
      expect(missingMethods(api, CLIENT_METHODS)).toEqual([]);
      expect(missingMethods(runner, WORKER_METHODS)).toEqual([]);
      expectTypeOf(cairnq.CairnQ.postgres).returns.toEqualTypeOf<cairnq.CairnQ>();
      expectTypeOf(cairnq.Worker.postgres).returns.toEqualTypeOf<cairnq.Worker>();
    } finally {
      await runner.close();
      await api.close();
    }
  });

  it("CairnQ.mysql and Worker.mysql build a client and worker on a MySQLStore (no connection, no driver loaded until used)", async () => {
    const dsn = "mysql://root@127.0.0.1:1/never_connected";
    const api = cairnq.CairnQ.mysql(dsn, { max: 2 });
    const runner = cairnq.Worker.mysql(dsn, { concurrency: 2 });
    try {
      expect(api.store).toBeInstanceOf(cairnq.MySQLStore);
      expect(runner.store).toBeInstanceOf(cairnq.MySQLStore);
      expect(missingMethods(api, CLIENT_METHODS)).toEqual([]);
      expect(missingMethods(runner, WORKER_METHODS)).toEqual([]);
      expectTypeOf(cairnq.CairnQ.mysql).returns.toEqualTypeOf<cairnq.CairnQ>();
      expectTypeOf(cairnq.Worker.mysql).returns.toEqualTypeOf<cairnq.Worker>();
    } finally {
      await runner.close();
      await api.close();
    }
    expect(() => cairnq.CairnQ.mysql(dsn, { maks: 2 } as never)).toThrow(expect.objectContaining({ name: "InvalidArgument" }));
  });

  // The bag's `onError` is the worker's (`{ phase, taskId }`); the store's hook is `storeOnError`.
  it("Worker.postgres(target, { onError }): the worker's own errors (a claim that cannot connect) reach onError", async () => {
    const heard: unknown[] = [];
    const runner = cairnq.Worker.postgres("postgres://postgres@127.0.0.1:1/never-connected", {
      schema: "cairnq_umbrella",
      onError: (_error: unknown, info: unknown) => heard.push(info),
    });
    runner.task("noop", async () => null);
    const running = runner.run();
    try {
      const deadline = Date.now() + 2_000;
      while (!heard.some((info) => (info as { phase?: unknown }).phase === "claim") && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(heard).toContainEqual(expect.objectContaining({ phase: "claim" }));
    } finally {
      await runner.stop();
      await running;
      await runner.close();
    }
  });
});
