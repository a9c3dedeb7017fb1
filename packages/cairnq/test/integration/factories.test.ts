/** Every Postgres store option passes through the umbrella's factories and reaches the store, seen on the server. */
import { sql } from "kysely";
import { afterAll, describe, expect, it } from "vitest";
import { CairnQ, Worker } from "cairnq";
import type { PostgresStore } from "cairnq";
import { closeAdmin, dropSchema, freshSchemaName, pgDsn } from "../support/postgres.ts";

afterAll(closeAdmin);

describe("every store option passes through the factories", () => {
  it("CairnQ.postgres / Worker.postgres: timeouts, combine, preparedStatements, max, schema and storeOnError reach the PostgresStore", async () => {
    const schema = await freshSchemaName("cq_factory");
    const heard: unknown[] = [];
    const api = CairnQ.postgres(pgDsn(), {
      schema,
      max: 1,
      timeouts: { idleInTransactionTimeoutMs: 4321, queryTimeoutMs: 12_345 },
      combine: false,
      preparedStatements: false,
      storeOnError: (err) => heard.push(err),
      maxQueueDepth: 100,
    });
    const runner = Worker.postgres(pgDsn(), { schema, combine: { maxRows: 7 }, preparedStatements: true, max: 1, concurrency: 2 });
    try {
      const store = api.store as PostgresStore;
      expect(store.schema).toBe(schema);
      expect(store.dialect.connection.timeouts).toMatchObject({ idleInTransactionTimeoutMs: 4321, queryTimeoutMs: 12_345 });
      expect(store.dialect.combining).toBeNull();
      expect((runner.store as PostgresStore).dialect.combining).toMatchObject({ maxRows: 7 });

      // On the server: the transaction's setting came from `timeouts`, and with preparedStatements: false (one pooled
      // connection) none of CairnQ's statements was prepared by name, while the worker's store (true) prepares them.
      const task = await api.submit("job", { n: 1 });
      expect((await api.get(task.id))?.status).toBe("queued");
      const setting = await store.db.transaction().execute((trx) => sql<{ v: string }>`select current_setting('idle_in_transaction_session_timeout') as v`.execute(trx));
      expect(setting.rows[0]?.v).toBe("4321ms");
      const prepared = async (s: PostgresStore): Promise<number> =>
        Number((await sql<{ n: string }>`select count(*) as n from pg_prepared_statements`.execute(s.db)).rows[0]?.n);
      expect(await prepared(store)).toBe(0);
      runner.task("job", async (_ctx, payload: { n: number }) => payload);
      const running = runner.run();
      expect(await api.wait(task.id, { timeoutMs: 20_000 })).toMatchObject({ status: "succeeded" });
      expect(await prepared(runner.store as PostgresStore)).toBeGreaterThan(0);
      await runner.stop();
      await running;
      expect(heard).toEqual([]);
    } finally {
      await runner.close();
      await api.close();
      await dropSchema(schema);
    }
  });
});
