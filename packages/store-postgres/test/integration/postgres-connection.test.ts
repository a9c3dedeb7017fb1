import { afterEach, describe, expect, it } from "vitest";
import { sql } from "kysely";
import { InvalidArgument } from "@cairnq/protocol";
import { PostgresStore } from "../../src/index.js";
import { DEFAULT_POSTGRES_TIMEOUTS } from "../../src/postgres-connection.js";
import { HalfOpenProxy } from "../half-open-proxy.js";
import { openStore, pgDsn, poolFor, q, schemaName, until } from "../helpers.js";

const proxies: HalfOpenProxy[] = [];
afterEach(async () => {
  for (const proxy of proxies.splice(0)) await proxy.close();
});

async function proxy(): Promise<{ proxy: HalfOpenProxy; dsn: string }> {
  const p = new HalfOpenProxy(pgDsn());
  proxies.push(p);
  return { proxy: p, dsn: await p.listen() };
}

/** Timeouts short enough that a test takes seconds. */
const SHORT = { queryTimeoutMs: 1500, idleInTransactionTimeoutMs: 1000, listenPingIntervalMs: 1000, connectTimeoutMs: 3000, keepAliveInitialDelayMs: 1000 };

describe("timeouts options", () => {
  it("have documented defaults and are validated", () => {
    expect(DEFAULT_POSTGRES_TIMEOUTS).toEqual({
      connectTimeoutMs: 10_000,
      queryTimeoutMs: 30_000,
      storeQueryTimeoutMs: 10_000,
      idleInTransactionTimeoutMs: 60_000,
      keepAliveInitialDelayMs: 10_000,
      listenCheckTimeoutMs: 5_000,
      listenPingIntervalMs: 30_000,
    });
    expect(() => new PostgresStore(pgDsn(), { timeouts: { queryTimeoutMs: -1 } })).toThrow(InvalidArgument);
    expect(() => new PostgresStore(pgDsn(), { timeouts: { queryTimeoutMs: 1.5 } })).toThrow(/queryTimeoutMs/);
    // A caller's pool is configured where it is made; only the LISTEN ping and check and the store's own statements' bound apply to it.
    const pool = poolFor(schemaName());
    expect(() => new PostgresStore(pool, { timeouts: { queryTimeoutMs: 1000 } })).toThrow(/with your own pg.Pool set/);
    expect(() => new PostgresStore(pool, { timeouts: { idleInTransactionTimeoutMs: 1000 } })).toThrow(/with your own pg.Pool set/);
    expect(() => new PostgresStore(pool, { timeouts: { listenPingIntervalMs: 1000, listenCheckTimeoutMs: 1000, storeQueryTimeoutMs: 1000 } })).not.toThrow();
  });

  it("sets idle_in_transaction_session_timeout on each of the store's transactions (SET LOCAL), never on the session", async () => {
    const store = openStore(undefined, { timeouts: { idleInTransactionTimeoutMs: 4321 } });
    await store.connect();
    const setting = (db: Pick<typeof store.db, "selectNoFrom">) =>
      db.selectNoFrom((eb) => eb.fn<string>("current_setting", [eb.val("idle_in_transaction_session_timeout")]).as("v")).execute();
    const rows = await store.db.transaction().execute(async (trx) => await setting(trx));
    expect(rows[0]?.v).toBe("4321ms");
    // The same pooled session, outside a transaction: the server's default, so a transaction-mode pooler hands on a clean session.
    const [server] = await q<{ v: string }>("SELECT current_setting('idle_in_transaction_session_timeout') AS v");
    expect((await setting(store.db))[0]?.v).toBe(server?.v);
  });
});

describe("a connection lost with a statement in flight", () => {
  for (const listen of [false, undefined] as const) {
    it(`fails the call with a PostgresConnectionLost that says the outcome is unknown, and the server may indeed apply it (${listen === false ? "the pool" : "the LISTEN connection's lane"})`, async () => {
      const { proxy: p, dsn } = await proxy();
      const schema = schemaName("cq_lost");
      const direct = openStore(pgDsn(), { schema });
      await direct.connect();
      const cut = openStore(dsn, { schema, ...(listen === false ? { listen } : {}) });
      await cut.connect();
      if (listen !== false) expect(await until(() => cut.listenState === "listening", 10_000)).toBe(true);
      // The submit waits on a lock held elsewhere, so it is surely in flight when its connection goes.
      const held = direct.db.transaction().execute(async (trx) => {
        await sql`LOCK TABLE cairnq_tasks IN EXCLUSIVE MODE`.execute(trx);
        const submit = cut.submit({ name: "in-flight" }).then(
          () => null,
          (err: unknown) => err as Error & { code?: unknown },
        );
        const waiting = (): Promise<boolean> =>
          q("SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO cairnq_tasks%' AND datname = current_database()").then(
            (rows) => rows.length > 0,
          );
        expect(await until(waiting, 10_000)).toBe(true);
        expect(p.sever()).toBeGreaterThanOrEqual(1);
        return submit;
      });
      const failure = await held;
      expect(failure?.name).toBe("PostgresConnectionLost");
      expect(failure?.message).toMatch(/^the connection to Postgres ended while a statement was in flight \(Connection terminated unexpectedly\): the server may or may not have applied it/);
      expect((failure?.cause as Error | undefined)?.message).toBe("Connection terminated unexpectedly");
      // The lock is gone: the server's session, never told, inserts the task after all — what "may or may not" means.
      const landed = async (): Promise<boolean> => (await direct.list({ name: "in-flight" })).length === 1;
      expect(await until(landed, 10_000)).toBe(true);
      await cut.close();
      await direct.close();
    });
  }
});

describe("a server that does not answer", () => {
  it("a call fails at once with a PostgresConnectError that says nothing was written (the driver's error as cause, its code kept)", async () => {
    // A port nothing listens on: the proxy's, closed again.
    const { proxy: p, dsn } = await proxy();
    await p.close();
    proxies.splice(proxies.indexOf(p), 1);
    const store = openStore(dsn, { schema: schemaName(), timeouts: { connectTimeoutMs: 3_000 } });
    const failure = await store.connect().then(
      () => null,
      (err: unknown) => err as Error & { code?: unknown },
    );
    expect(failure?.name).toBe("PostgresConnectError");
    expect(failure?.code).toBe("ECONNREFUSED");
    expect(failure?.message).toMatch(/^could not open a connection to Postgres \(connect ECONNREFUSED 127\.0\.0\.1:\d+\): the server is down, restarting or not reachable there\. The statement was not sent, so nothing was written; retry once the server answers/);
    expect((failure?.cause as { code?: unknown } | undefined)?.code).toBe("ECONNREFUSED");
  });
});

describe("a connection cut without FIN or RST (half-open)", () => {
  it("bounds the call, discards the dead connection, frees the server-side locks, and resumes on fresh connections (LISTEN too)", async () => {
    const { proxy: p, dsn } = await proxy();
    const schema = schemaName("cq_halfopen");
    const cut = openStore(dsn, { schema, max: 2, timeouts: SHORT });
    const direct = openStore(pgDsn(), { schema });
    await cut.connect();
    await direct.connect();
    expect(await until(() => cut.listenState === "listening", 10_000)).toBe(true);
    const listenPid = cut.dialect.wakeups.backendPid;
    const task = await direct.submit({ name: "job" });

    // A claim-like transaction on the cut store locks the task's row, then its path goes dark mid-transaction.
    let lockerPid = 0;
    const stuck = cut.db.transaction().execute(async (trx) => {
      const row = await trx.selectNoFrom((eb) => eb.fn<number>("pg_backend_pid", []).as("pid")).executeTakeFirstOrThrow();
      lockerPid = Number(row.pid);
      await trx.selectFrom("cairnq_tasks").select("id").where("id", "=", task.id).forUpdate().execute();
      expect(p.freeze()).toBeGreaterThanOrEqual(2);
      // The next statement never arrives: the call must fail at the query timeout, not hang.
      await trx.selectFrom("cairnq_tasks").select("id").execute();
    });
    await expect(stuck).rejects.toThrow(/Query read timeout|Connection terminated|closed/);

    // Server side: the session idle in its transaction is ended, so its row lock is released and
    // another worker's SKIP LOCKED claim gets the task (without the timeout it would skip it forever).
    expect(
      await until(async () => (await q("SELECT 1 FROM pg_stat_activity WHERE pid = $1", [lockerPid])).length === 0, 15_000),
    ).toBe(true);
    const claimed = await direct.claim({ queues: ["default"], workerId: "worker_direct", leaseMs: 30_000 });
    expect(claimed.map((t) => t.id)).toEqual([task.id]);

    // Client side: the dead connection was destroyed, not pooled again; the next calls run on fresh connections.
    for (let i = 0; i < 4; i++) expect((await cut.getStatus(task.id))?.status).toBe("running");
    const again = await cut.submit({ name: "after-the-cut" });
    expect((await direct.get(again.id))?.name).toBe("after-the-cut");

    // LISTEN: the liveness ping noticed the dark connection; a new one listens, and push wakeups work again.
    expect(await until(() => cut.listenState === "listening" && cut.dialect.wakeups.backendPid !== listenPid, 20_000)).toBe(true);
    // The reconnect buffers one wake per known queue (signals were missed meanwhile): consume it first.
    await cut.claimWake(["default"], 10);
    // Ends only on the push: a wake that never comes fails the test at its timeout.
    const woke = cut.claimWake(["default"], 600_000);
    await direct.submit({ name: "wake" });
    await woke;

    // close() does not wait on the dead sockets.
    await cut.close();
  }, 60_000);

  it("close() while the LISTEN connection is reopened over the dead path does not wait out that connect", async () => {
    const { proxy: p, dsn } = await proxy();
    // A long connect bound, so a close that waited for the attempt in flight could not pass for one that did not.
    const connectTimeoutMs = 10_000;
    const store = openStore(dsn, { schema: schemaName("cq_halfopen_close"), max: 2, timeouts: { ...SHORT, connectTimeoutMs } });
    await store.connect();
    expect(await until(() => store.listenState === "listening", 10_000)).toBe(true);
    // The whole path goes dark: the ping drops the LISTEN connection, and its reconnect hangs in connect.
    expect(p.cut()).toBeGreaterThanOrEqual(1);
    expect(await until(() => store.listenState === "connecting", 15_000)).toBe(true);
    const start = Date.now();
    await store.close();
    // Without abandoning the attempt, close() waited for it: the rest of connectTimeoutMs (a worker's stop() too).
    expect(Date.now() - start).toBeLessThan(connectTimeoutMs / 2);
    expect(store.listenState).toBe("closed");
  }, 60_000);
});
