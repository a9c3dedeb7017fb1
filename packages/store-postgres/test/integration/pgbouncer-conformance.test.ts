/**
 * The work pool holds no session state: the whole conformance kit passes
 * through PgBouncer 1.x in transaction mode, where every transaction (and
 * every autocommit statement) may run on another server session, startup
 * parameters other than a handful are refused, and named prepared
 * statements do not survive a transaction (PgBouncer before 1.21). LISTEN
 * runs on its own direct connection, as the README says to.
 *
 * The cases share one database of their own (PgBouncer forwards any
 * database name): behind a transaction-mode pooler search_path cannot be a
 * per-connection setting, so the `schema` option is not used here — the
 * tables live in `public` of that database. The first case's store migrates
 * it through PgBouncer; after every case its CairnQ tables are emptied
 * (every one but the migrations ledger and the meta rows the migrations
 * wrote), so each case starts from an empty installation, as the MySQL
 * kit's do. A database per case cost a CREATE and a DROP DATABASE (a copy
 * of the template, and PgBouncer's server connections ended by FORCE) for
 * each of the ~160 cases: half the file's time. Sharing one also means
 * each case's store gets the server sessions the cases before it used, so
 * session state left behind by one case would reach the next. Afterwards
 * no advisory lock is held on the server and PgBouncer logged no refused
 * startup parameter and no prepared-statement error.
 */
import pg from "pg";
import { runConformance } from "@cairnq/conformance/vitest";
import { PostgresStore } from "@cairnq/store-postgres";
import type { PgBouncer } from "@cairnq/test-support";
import { KIT_CASE_TIMEOUT_MS, PgAdmin, pgDsn, startPgBouncer } from "@cairnq/test-support";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const admin = new PgAdmin({ applicationName: "cairnq-test-pgbouncer-admin" });
let bouncer: PgBouncer | undefined;
/** The one database the cases share. */
const DATABASE = `cq_bouncer_kit_${process.pid}`;
/** Tables an emptied installation keeps: the migrations ledger and the meta rows the migrations wrote. */
const KEPT = new Set(["cairnq_migrations", "cairnq_meta"]);

/** The test database's DSN pointed at another database of the same server. */
function directDsn(database: string): string {
  const url = new URL(pgDsn());
  url.pathname = `/${database}`;
  return url.toString();
}

beforeAll(async () => {
  await admin.q(`DROP DATABASE IF EXISTS "${DATABASE}" WITH (FORCE)`);
  await admin.q(`CREATE DATABASE "${DATABASE}"`);
  bouncer = await startPgBouncer({ poolMode: "transaction", poolSize: 4 });
}, 120_000);

afterAll(async () => {
  await bouncer?.stop();
  await admin.q(`DROP DATABASE IF EXISTS "${DATABASE}" WITH (FORCE)`);
  await admin.close();
});

/** Empties every CairnQ table of the shared database but the kept ones, straight on the server (not through PgBouncer). */
async function emptyDatabase(): Promise<void> {
  const client = new pg.Client({ connectionString: directDsn(DATABASE), application_name: "cairnq-test-pgbouncer-admin" });
  await client.connect();
  try {
    const { rows } = await client.query<{ t: string }>("SELECT tablename AS t FROM pg_tables WHERE schemaname = 'public' AND tablename LIKE 'cairnq\\_%'");
    const tables = rows.map((r) => r.t).filter((t) => !KEPT.has(t));
    if (tables.length > 0) await client.query(`TRUNCATE ${tables.map((t) => `"${t}"`).join(", ")} RESTART IDENTITY CASCADE`);
  } finally {
    await client.end();
  }
}

runConformance({
  name: "PostgresStore through PgBouncer (transaction mode)",
  caseTimeoutMs: KIT_CASE_TIMEOUT_MS,
  capabilities: { pushWakeups: true, transactionalComplete: true, databaseClock: true, flowControl: true, schedules: true, completeRef: true, claimReprobe: true, durableSteps: true, queueHealth: true, groups: true },
  createStore: () => new PostgresStore(bouncer!.dsnFor(DATABASE), { preparedStatements: false, listen: directDsn(DATABASE), max: 4 }),
  destroyStore: async (store) => {
    await store.close();
    await emptyDatabase();
  },
});

describe("after the conformance run through PgBouncer", () => {
  it("no advisory lock is held, and PgBouncer refused nothing the store sent", async () => {
    // This database's locks only: pg_locks is the whole server's, where other files' transactions (their own
    // databases, in parallel) may hold transaction-scoped key locks at this moment.
    const held = await admin.q("SELECT l.pid, l.objid FROM pg_locks l JOIN pg_database d ON d.oid = l.database WHERE l.locktype = 'advisory' AND d.datname = $1", [DATABASE]);
    expect(held).toEqual([]);
    const log = bouncer!.log();
    expect(log).not.toMatch(/unsupported startup parameter/i);
    expect(log).not.toMatch(/prepared statement/i);
  });
});
