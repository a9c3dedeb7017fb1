/**
 * The work pool holds no session state: the whole conformance kit passes
 * through PgBouncer 1.x in transaction mode, where every transaction (and
 * every autocommit statement) may run on another server session, startup
 * parameters other than a handful are refused, and named prepared
 * statements do not survive a transaction (PgBouncer before 1.21). LISTEN
 * runs on its own direct connection, as the README says to.
 *
 * Each case gets a fresh database (PgBouncer forwards any database name):
 * behind a transaction-mode pooler search_path cannot be a per-connection
 * setting, so the `schema` option is not used here — the tables live in
 * `public` of the case's database. Afterwards no advisory lock is held on
 * the server and PgBouncer logged no refused startup parameter and no
 * prepared-statement error.
 */
import { runConformance } from "@cairnq/conformance/vitest";
import { PostgresStore } from "@cairnq/store-postgres";
import type { PgBouncer } from "@cairnq/test-support";
import { PgAdmin, pgDsn, startPgBouncer } from "@cairnq/test-support";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const admin = new PgAdmin({ applicationName: "cairnq-test-pgbouncer-admin" });
let bouncer: PgBouncer | undefined;

/** The test database's DSN pointed at another database of the same server. */
function directDsn(database: string): string {
  const url = new URL(pgDsn());
  url.pathname = `/${database}`;
  return url.toString();
}

beforeAll(async () => {
  bouncer = await startPgBouncer({ poolMode: "transaction", poolSize: 4 });
}, 120_000);

afterAll(async () => {
  await bouncer?.stop();
  await admin.close();
});

runConformance({
  name: "PostgresStore through PgBouncer (transaction mode)",
  capabilities: { pushWakeups: true, transactionalComplete: true, databaseClock: true, flowControl: true, schedules: true, completeRef: true, claimReprobe: true, durableSteps: true, queueHealth: true, groups: true },
  createStore: async (ctx) => {
    await admin.q(`CREATE DATABASE "${ctx.testId}"`);
    return new PostgresStore(bouncer!.dsnFor(ctx.testId), { preparedStatements: false, listen: directDsn(ctx.testId), max: 4 });
  },
  destroyStore: async (store, ctx) => {
    await store.close();
    // PgBouncer keeps its server connections to the database open: FORCE ends them.
    await admin.q(`DROP DATABASE IF EXISTS "${ctx.testId}" WITH (FORCE)`);
  },
});

describe("after the conformance run through PgBouncer", () => {
  it("no advisory lock is held, and PgBouncer refused nothing the store sent", async () => {
    const held = await admin.q("SELECT pid, objid FROM pg_locks WHERE locktype = 'advisory'");
    expect(held).toEqual([]);
    const log = bouncer!.log();
    expect(log).not.toMatch(/unsupported startup parameter/i);
    expect(log).not.toMatch(/prepared statement/i);
  });
});
