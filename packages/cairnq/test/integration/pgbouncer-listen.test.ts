/**
 * A LISTEN that cannot hear is caught and answered by polling, said once.
 *
 * `listen` pointed through PgBouncer in transaction mode: PgBouncer accepts
 * LISTEN but runs it on a server session it then hands to other clients, so
 * the store's notifications never reach the LISTEN connection. The store's
 * check (a NOTIFY to itself through the pool) must fail, the store must
 * give push wakeups up — `listenState` `deaf`, `capabilities.pushWakeups`
 * false — and say so exactly once through `onError` and its logger, and a
 * worker on it must still drain its queue by polling, each task picked up
 * within the poll interval.
 */
import { randomBytes } from "node:crypto";
import { performance } from "node:perf_hooks";
import { ListenUnavailable } from "@cairnq/protocol";
import type { PostgresStore } from "@cairnq/store-postgres";
import type { PgBouncer } from "@cairnq/test-support";
import { startPgBouncer } from "@cairnq/test-support";
import { CairnQ, Worker } from "cairnq";
import { afterAll, describe, expect, it } from "vitest";
import { closeAdmin, q } from "../support/postgres.ts";
import { sleep, until } from "../support/waiting.ts";

const POLL_MS = 200;
const CHECK_MS = 1_000;

describe("LISTEN pointed through a transaction-mode PgBouncer", () => {
  let bouncer: PgBouncer | undefined;
  afterAll(async () => {
    await bouncer?.stop();
    await closeAdmin();
  });

  it("is found deaf, reported once, and a worker drains by polling within the poll interval", async () => {
    bouncer = await startPgBouncer({ poolMode: "transaction", poolSize: 4 });
    const database = `cq_deaf_${randomBytes(5).toString("hex")}`;
    await q(`CREATE DATABASE "${database}"`);
    const dsn = bouncer.dsnFor(database);
    const errors: unknown[] = [];
    const warnings: string[] = [];
    const worker = Worker.postgres(dsn, {
      preparedStatements: false,
      listen: dsn,
      max: 4,
      concurrency: 4,
      pollIntervalMs: POLL_MS,
      timeouts: { listenCheckTimeoutMs: CHECK_MS },
      storeOnError: (error) => errors.push(error),
      logger: { warn: (message) => warnings.push(message) },
    });
    const api = CairnQ.postgres(dsn, { preparedStatements: false, listen: false, max: 2 });
    const pickups: number[] = [];
    const submittedAt = new Map<string, number>();
    worker.task("double", async (ctx, { n }: { n: number }) => {
      const at = submittedAt.get(ctx.taskId);
      if (at !== undefined) pickups.push(performance.now() - at);
      return { doubled: n * 2 };
    });
    const running = worker.run();
    try {
      const store = worker.store as PostgresStore;
      await until("the LISTEN check to fail", () => (store.listenState === "deaf" ? true : undefined), 20_000, () => `listenState ${store.listenState}`);
      expect(store.capabilities.pushWakeups).toBe(false);

      // Sequential single tasks on an idle worker: each waits for a poll, never longer than about one interval.
      for (let n = 0; n < 10; n += 1) {
        const task = await api.submit("double", { n });
        submittedAt.set(task.id, performance.now());
        expect(await api.wait(task.id, { timeoutMs: 10_000 })).toMatchObject({ status: "succeeded" });
      }
      // A backlog drains too.
      const backlog = await Promise.all(Array.from({ length: 200 }, (_, n) => api.submit("double", { n })));
      for (const task of backlog) expect(await api.wait(task.id, { timeoutMs: 30_000 })).toMatchObject({ status: "succeeded", result: { doubled: expect.any(Number) } });

      // Still said once, however long it keeps polling.
      await sleep(2 * CHECK_MS);
      const deaf = errors.filter((error) => error instanceof ListenUnavailable);
      expect(deaf, errors.map(String).join("\n")).toHaveLength(1);
      expect(String((deaf[0] as Error).message)).toMatch(/transaction-mode pooler/);
      expect(warnings.filter((message) => /did not hear a NOTIFY/.test(message))).toHaveLength(1);
      expect(store.listenState).toBe("deaf");

      const sorted = [...pickups].sort((a, b) => a - b);
      const p99 = sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.99) - 1)] ?? Number.NaN;
      // The poll interval, plus the claim and a scheduling hiccup on a shared 2-core machine.
      expect(p99).toBeLessThan(POLL_MS + 400);
      console.log(
        `[pgbouncer deaf LISTEN] deaf after the ${CHECK_MS} ms check; reported ${deaf.length}×; idle pickups by polling (poll ${POLL_MS} ms): ` +
          `p50 ${(sorted[Math.floor(sorted.length / 2)] ?? Number.NaN).toFixed(0)} ms, max ${p99.toFixed(0)} ms; 200-task backlog drained`,
      );
    } finally {
      await worker.stop();
      await running;
      await api.close();
      await q(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
    }
  }, 120_000);
});
