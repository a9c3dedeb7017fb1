/**
 * Connect failures retrying cannot fix — the database does not exist
 * (SQLSTATE 3D000), the server refuses the login (28000) — are a fatal
 * `DatabaseUnusable` naming the database and what to do, on a connection
 * string and on a pool the caller passes; a refused connection stays
 * transient, and so does a spent connection budget (53300), said as such.
 * A session the server ends with a statement in flight (57P01, what a fast
 * shutdown sends every backend) is a transient `PostgresConnectionLost`.
 */
import pg from "pg";
import { DatabaseUnusable, isFatalError } from "@cairnq/protocol";
import { describe, expect, it } from "vitest";
import { PostgresStore } from "../../src/index.js";
import { firstSubmitFailure, randomSchemaName } from "@cairnq/test-support";
import { client, openStore, pgDsn, q, schemaName, until } from "../helpers.js";

/** `pgDsn()` with its database (and, when given, user) replaced. */
function dsnWith(database: string, user?: string): string {
  const url = new URL(pgDsn());
  url.pathname = `/${database}`;
  if (user !== undefined) url.username = user;
  return url.toString();
}

describe("Postgres connect failures retrying cannot fix", () => {
  it("a database that does not exist is a fatal DatabaseUnusable naming it and saying to create it", async () => {
    const err = await firstSubmitFailure(new PostgresStore(dsnWith("cairnq_no_such_db")));
    expect(err).toBeInstanceOf(DatabaseUnusable);
    expect(isFatalError(err)).toBe(true);
    expect(err).toMatchObject({ database: "cairnq_no_such_db", code: "3D000" });
    expect((err as Error).message).toMatch(/^could not open a connection to Postgres \(database "cairnq_no_such_db" does not exist, SQLSTATE 3D000\): the server has no database "cairnq_no_such_db": create it/);
    expect((err as Error).message).not.toMatch(/server is down/);
  });

  it("so is a refused login (a role that does not exist), naming the database asked for", async () => {
    const err = await firstSubmitFailure(new PostgresStore(dsnWith("cairnq_no_such_db", "cairnq_no_such_role")));
    expect(err).toBeInstanceOf(DatabaseUnusable);
    expect(isFatalError(err)).toBe(true);
    expect(err).toMatchObject({ database: "cairnq_no_such_db", code: "28000" });
    expect((err as Error).message).toMatch(/the server refused the login: check the user and password/);
  });

  it("on a pool the caller passes too", async () => {
    const pool = new pg.Pool({ connectionString: dsnWith("cairnq_no_such_db") });
    try {
      const err = await firstSubmitFailure(new PostgresStore(pool));
      expect(err).toBeInstanceOf(DatabaseUnusable);
      expect(err).toMatchObject({ database: "cairnq_no_such_db", code: "3D000" });
    } finally {
      await pool.end();
    }
  });

  it("a refused connection stays transient", async () => {
    const err = await firstSubmitFailure(new PostgresStore("postgresql://postgres@127.0.0.1:1/x", { timeouts: { connectTimeoutMs: 2000 } }));
    expect(isFatalError(err)).toBe(false);
    expect((err as Error).name).toBe("PostgresConnectError");
  });
});

describe("a connection budget that is spent (SQLSTATE 53300)", () => {
  it("says so, and what to do, instead of blaming a server that is down; it stays transient", async () => {
    const role = randomSchemaName("cq_lim");
    await q(`CREATE ROLE "${role}" LOGIN CONNECTION LIMIT 2`);
    const held: pg.Client[] = [];
    try {
      // The role's two connections taken, the store's first connect is refused by a server that is up.
      for (let i = 0; i < 2; i++) held.push(await client({ connectionString: dsnWith(new URL(pgDsn()).pathname.slice(1), role) }));
      const err = await firstSubmitFailure(new PostgresStore(dsnWith(new URL(pgDsn()).pathname.slice(1), role), { listen: false }));
      expect(isFatalError(err)).toBe(false);
      expect(err).toMatchObject({ name: "PostgresConnectError", code: "53300" });
      const message = (err as Error).message;
      expect(message).toMatch(/^could not open a connection to Postgres \(too many connections for role "cq_lim[^"]*"\): the server is up but its connection budget is spent/);
      expect(message).toMatch(/the `max` option/);
      expect(message).toMatch(/Running many workers/);
      expect(message).toMatch(/retry once connections free up/);
      expect(message).not.toMatch(/server is down/);
    } finally {
      for (const c of held) await c.end();
      await q(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1`, [role]);
      await q(`DROP ROLE "${role}"`);
    }
  });
});

describe("a session the server ends with a statement in flight (SQLSTATE 57P01)", () => {
  it("fails a submit and a claim with a transient PostgresConnectionLost, and the store works on afterwards", async () => {
    const schema = schemaName("cq_term");
    const store = openStore(pgDsn(), { schema, listen: false });
    await store.connect();
    await store.submit({ name: "queued" });
    for (const call of ["submit", "claim"] as const) {
      // A table lock held elsewhere keeps the call's statement waiting, so it is surely in flight when its backend is terminated.
      const locker = await client();
      await locker.query("BEGIN");
      await locker.query(`LOCK TABLE "${schema}".cairnq_tasks IN EXCLUSIVE MODE`);
      const [{ pid: lockerPid } = { pid: 0 }] = (await locker.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows;
      const start = (): Promise<Error & { code?: unknown }> =>
        (call === "submit" ? store.submit({ name: "in-flight" }) : store.claim({ queues: ["default"], workerId: "w1", leaseMs: 30_000 })).then(
          (answer): Error & { code?: unknown } => new Error(`the ${call} succeeded: ${JSON.stringify(answer)}`),
          (err: unknown) => err as Error & { code?: unknown },
        );
      let pending = start();
      let early: (Error & { code?: unknown }) | null = null;
      const watch = (p: Promise<Error & { code?: unknown }>): void => void p.then((err) => (early = err));
      watch(pending);
      let blocked: number[] = [];
      const waiting = async (): Promise<boolean> => {
        blocked = (await q<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))", [lockerPid])).map((row) => row.pid);
        if (blocked.length === 0 && early !== null && early.name === "PostgresConnectionLost" && early.code !== "57P01") {
          // The previous call's termination can leave an idle pool connection dead until the pool sees its socket close;
          // a call that draws it fails at once, before it blocks (transient: a worker retries). Start the call again.
          early = null;
          pending = start();
          watch(pending);
        }
        return blocked.length > 0;
      };
      expect(await until(waiting, 10_000), call).toBe(true);
      for (const pid of blocked) await q("SELECT pg_terminate_backend($1)", [pid]);
      const failure = await pending;
      await locker.query("ROLLBACK");
      expect(failure?.name).toBe("PostgresConnectionLost");
      expect(failure?.code).toBe("57P01");
      expect(isFatalError(failure)).toBe(false);
      expect(failure?.message).toMatch(/^the connection to Postgres ended while a statement was in flight \(terminating connection due to administrator command\): the server may or may not have applied it/);
      expect((failure?.cause as { code?: unknown } | undefined)?.code).toBe("57P01");
    }
    // The terminated connection is gone from the pool: the store's next calls run on fresh ones.
    const task = await store.submit({ name: "after" });
    const claimed = await store.claim({ queues: ["default"], workerId: "w1", leaseMs: 30_000, limit: 10 });
    expect(claimed.map((t) => t.name).sort()).toEqual(["after", "queued"]);
    expect(claimed.some((t) => t.id === task.id)).toBe(true);
  });
});
