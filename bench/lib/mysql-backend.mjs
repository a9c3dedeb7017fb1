// The MySQL/MariaDB backend of the bench: a fresh database per measurement
// (dropped afterwards), the backlog fills used only to set up the claim and
// churn measurements, and the raw mysql2 floors.
//
// The server: CAIRNQ_BENCH_MYSQL_DSN, default mysql://root@127.0.0.1:3306/cairnq_bench. The DSN's database
// name is the prefix of the databases the run creates (`cairnq_bench_<pid>_<n>_<label>`, one per
// measurement) and drops when done; the DSN's database itself is never created or used.
import { createRequire } from "node:module";
import { floorIds } from "./sqlite-backend.mjs";
import { percentile } from "./stats.mjs";
import { hasMySQL, openStore } from "./targets.mjs";

const require = createRequire(import.meta.url);
const mysql = require("mysql2/promise");

const DSN = process.env.CAIRNQ_BENCH_MYSQL_DSN ?? "mysql://root@127.0.0.1:3306/cairnq_bench";
const SERVER = new URL(DSN);
const BASE = SERVER.pathname.replace(/^\//, "") || "cairnq_bench";
const PREFIX = `${BASE}_${process.pid}_`;
/** The store's statement clock (MYSQL_CLOCK in @cairnq/store-mysql): epoch ms of UTC_TIMESTAMP(6). */
const DB_NOW = "(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000)";
let counter = 0;

/** The DSN of `database` on the bench's server. */
function dsnOf(database) {
  const url = new URL(DSN);
  url.pathname = `/${database}`;
  return url.toString();
}

/**
 * A connection to `database` (none: the server only), with the session the store gives its own pool's
 * connections (UTC, READ COMMITTED: see SESSION_SETUP in @cairnq/store-mysql).
 */
async function connect(database) {
  const conn = await mysql.createConnection({
    host: SERVER.hostname,
    port: Number(SERVER.port || 3306),
    user: decodeURIComponent(SERVER.username || "root"),
    password: decodeURIComponent(SERVER.password),
    ...(database === null ? {} : { database }),
    charset: "UTF8MB4_BIN",
    supportBigNumbers: true,
    decimalNumbers: true,
  });
  await conn.query("SET SESSION time_zone = '+00:00'");
  await conn.query("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED");
  return conn;
}

async function admin(fn) {
  const conn = await connect(null);
  try {
    return await fn(conn);
  } finally {
    await conn.end();
  }
}

/** A new database name for `label` (≤ 64 characters, MySQL's limit). */
function databaseName(label) {
  counter += 1;
  return `${PREFIX}${counter}_${label.replace(/[^A-Za-z0-9_]/g, "_")}`.slice(0, 64);
}

const dropDatabase = (name) => admin((conn) => conn.query(`DROP DATABASE IF EXISTS \`${name}\``));

/**
 * The floors' table: the columns and types of `cairnq_tasks` on MySQL (MYSQL_TYPES: VARBINARY keys,
 * LONGTEXT JSON), the primary key and one claim index in claim order — no other index (see the SQLite
 * and Postgres floor tables).
 */
const FLOOR_DDL = [
  `CREATE TABLE tasks (id VARBINARY(255) NOT NULL PRIMARY KEY, name VARBINARY(1024) NOT NULL, queue VARBINARY(256) NOT NULL,
    status VARBINARY(32) NOT NULL, payload LONGTEXT NOT NULL, result LONGTEXT, error LONGTEXT, metadata LONGTEXT NOT NULL,
    progress DOUBLE, message LONGTEXT, attempt INT NOT NULL DEFAULT 0, max_attempts INT NOT NULL, priority INT NOT NULL,
    worker_id VARBINARY(1024), lease_until_ms BIGINT, run_at_ms BIGINT NOT NULL, cancel_requested_at_ms BIGINT,
    parent_id VARBINARY(1024), root_id VARBINARY(1024), correlation_id VARBINARY(1024), created_at_ms BIGINT NOT NULL,
    updated_at_ms BIGINT NOT NULL, completed_at_ms BIGINT) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
  `CREATE INDEX tasks_claim ON tasks (queue, status, priority DESC, run_at_ms, id)`,
];

const COLUMNS = "id, name, queue, status, payload, metadata, max_attempts, priority, run_at_ms, root_id, created_at_ms, updated_at_ms";
const ROW = "(?, 'noop', 'default', 'queued', ?, '{}', 3, 0, ?, ?, ?, ?)";
const rowValues = (id, payload, now) => [id, payload, now, id, now, now];

/**
 * The floor statements on `table` (the floor table or the protocol's `cairnq_tasks`). MySQL has no
 * UPDATE … RETURNING, so a claim is a transaction: SELECT the next due rows FOR UPDATE SKIP LOCKED (the
 * rows a worker needs, read under the lock), UPDATE them by id, COMMIT — the fewest statements a raw
 * client needs for it. The limit is a literal (1 or 64), as the store writes it.
 */
function statements(table) {
  return {
    insertOne: `INSERT INTO ${table} (${COLUMNS}) VALUES ${ROW}`,
    insertMany: (count) => `INSERT INTO ${table} (${COLUMNS}) VALUES ${Array.from({ length: count }, () => ROW).join(", ")}`,
    pick: (limit) =>
      `SELECT * FROM ${table} WHERE queue = 'default' AND status = 'queued' AND run_at_ms <= ? ORDER BY priority DESC, run_at_ms, id LIMIT ${limit} FOR UPDATE SKIP LOCKED`,
    claim: (count) =>
      `UPDATE ${table} SET status = 'running', worker_id = ?, lease_until_ms = ? + 30000, attempt = attempt + 1, updated_at_ms = ? ` +
      `WHERE id ${count === 1 ? "= ?" : `IN (${Array.from({ length: count }, () => "?").join(", ")})`}`,
    // A no-op complete writes SQL NULL (§2.2).
    complete: (count) =>
      `UPDATE ${table} SET status = 'succeeded', result = NULL, progress = 1, completed_at_ms = ?, lease_until_ms = NULL, updated_at_ms = ? ` +
      `WHERE id ${count === 1 ? "= ?" : `IN (${Array.from({ length: count }, () => "?").join(", ")})`} AND status = 'running' AND worker_id = ?`,
    getOne: `SELECT * FROM ${table} WHERE id = ?`,
  };
}

/** Claims up to `limit` rows on `conn` in one transaction (pick, update, commit); returns the picked rows. */
async function claim(conn, sql, workerId, limit) {
  await conn.query("START TRANSACTION");
  try {
    const now = Date.now();
    const [rows] = await conn.execute(sql.pick(limit), [now]);
    if (rows.length > 0) await conn.execute(sql.claim(rows.length), [workerId, now, now, ...rows.map((row) => row.id)]);
    await conn.query("COMMIT");
    return rows;
  } catch (err) {
    await conn.query("ROLLBACK");
    throw err;
  }
}

/** Completes `ids` (claimed by `workerId`) on `conn` in one autocommit UPDATE. */
async function complete(conn, sql, ids, workerId) {
  const now = Date.now();
  await conn.execute(sql.complete(ids.length), [now, now, ...ids, workerId]);
}

/** Runs `fn(conn, index)` on every connection at once; resolves with the elapsed ms. */
async function timed(conns, fn) {
  const started = performance.now();
  await Promise.all(conns.map((conn, index) => fn(conn, index)));
  return performance.now() - started;
}

/**
 * A fresh floor database with `conns` connections on it; `done()` closes and drops everything.
 * `kind` = "minimal" (the floor table) or "protocol" (the protocol v1 schema, created the way the store
 * creates it: a `MySQLStore` connects once — migrations, indexes, key-lock table — and closes).
 */
async function floorDatabase(label, conns, kind = "minimal") {
  const database = databaseName(`${kind === "protocol" ? "p_" : ""}${label}`);
  await admin((conn) => conn.query(`CREATE DATABASE \`${database}\``));
  try {
    if (kind === "protocol") {
      const store = openStore({ backend: "mysql", dsn: dsnOf(database) });
      await store.connect();
      await store.close();
    }
    const all = await Promise.all(Array.from({ length: conns }, () => connect(database)));
    if (kind !== "protocol") for (const ddl of FLOOR_DDL) await all[0].query(ddl);
    const table = kind === "protocol" ? "cairnq_tasks" : "tasks";
    return {
      conns: all,
      sql: statements(table),
      table,
      async done() {
        await Promise.all(all.map((conn) => conn.end()));
        await dropDatabase(database);
      },
    };
  } catch (err) {
    await dropDatabase(database);
    throw err;
  }
}

/** `n` rows in insertion order (see floorIds), written in 1,000-row statements before the clock starts. */
async function prefill(s, n) {
  const conn = s.conns[0];
  const ids = floorIds(n);
  for (let i = 0; i < n; i += 1_000) {
    const chunk = ids.slice(i, i + 1_000);
    const now = Date.now();
    await conn.query(s.sql.insertMany(chunk.length), chunk.flatMap((id, j) => rowValues(id, JSON.stringify({ i: i + j }), now)));
  }
  await conn.query(`ANALYZE TABLE ${s.table}`);
}

/** How many connections the 64-tasks-per-statement floors use (as on Postgres; the store's default pool is 10). */
export const BATCH_CONNECTIONS = 8;

export const mysqlBackend = {
  name: "mysql",

  /** Ready when the built umbrella has the MySQL factories and the server answers. */
  async available() {
    if (!hasMySQL()) return { ok: false, reason: "the built cairnq package has no CairnQ.mysql / Worker.mysql / MySQLStore yet" };
    try {
      await admin((conn) => conn.query("SELECT 1"));
      return { ok: true };
    } catch (err) {
      return { ok: false, reason: `cannot connect to ${DSN.replace(/\/\/[^@]*@/, "//…@")}: ${err instanceof Error ? err.message : String(err)}` };
    }
  },

  async version() {
    return admin(async (conn) => (await conn.query("SELECT VERSION() AS v"))[0][0].v);
  },

  /** A fresh, empty database (created here; the store makes its tables). `cleanup()` drops it. */
  async fresh(label) {
    const database = databaseName(label);
    await admin((conn) => conn.query(`CREATE DATABASE \`${database}\``));
    return { target: { backend: "mysql", dsn: dsnOf(database) }, cleanup: () => dropDatabase(database) };
  },

  /**
   * SETUP ONLY (claim under backlog): appends `count` queued `noop` tasks with the values the protocol's
   * SUBMIT writes, the database clock as the store uses it, in 1,000-row statements; then ANALYZE TABLE.
   */
  async fillBacklog(target, count) {
    const conn = await connect(new URL(target.dsn).pathname.slice(1));
    try {
      for (let done = 0; done < count; done += 1_000) {
        const ids = floorIds(Math.min(1_000, count - done));
        const row = `(?, 'noop', 'default', 'queued', ?, '{}', 3, 0, ${DB_NOW}, ?, ${DB_NOW}, ${DB_NOW})`;
        await conn.query(
          `INSERT INTO cairnq_tasks (${COLUMNS}) VALUES ${ids.map(() => row).join(", ")}`,
          ids.flatMap((id, j) => [id, JSON.stringify({ i: done + j }), id]),
        );
      }
      await conn.query("ANALYZE TABLE cairnq_tasks");
    } finally {
      await conn.end();
    }
  },

  /** The `completed_at_ms` of every succeeded task, ascending (the churn figures' completion clock). */
  async completionTimes(target) {
    const conn = await connect(new URL(target.dsn).pathname.slice(1));
    try {
      const [rows] = await conn.query("SELECT completed_at_ms AS t FROM cairnq_tasks WHERE status = 'succeeded' ORDER BY completed_at_ms");
      return rows.map((r) => Number(r.t));
    } finally {
      await conn.end();
    }
  },

  /**
   * SETUP ONLY (the growth figure): appends `count` terminal (`succeeded`) `noop` tasks, as COMPLETE
   * leaves them, older than anything queued, in 5,000-row statements.
   */
  async fillTerminal(target, count) {
    const conn = await connect(new URL(target.dsn).pathname.slice(1));
    try {
      const base = Date.now() - count - 60_000;
      for (let done = 0; done < count; done += 5_000) {
        const size = Math.min(5_000, count - done);
        const values = [];
        for (let j = 0; j < size; j += 1) {
          const i = done + j;
          const id = `task_${String(i).padStart(26, "0")}`;
          values.push(id, JSON.stringify({ i }), base + i, id, base + i, base + i + 5, base + i + 5);
        }
        const row = "(?, 'noop', 'default', 'succeeded', ?, '{}', 1, 1, 3, 0, 'worker_bench', ?, ?, ?, ?, ?)";
        await conn.query(
          `INSERT INTO cairnq_tasks (id, name, queue, status, payload, metadata, progress, attempt, max_attempts, priority, worker_id,
            run_at_ms, root_id, created_at_ms, updated_at_ms, completed_at_ms) VALUES ${Array.from({ length: size }, () => row).join(", ")}`,
          values,
        );
      }
    } finally {
      await conn.end();
    }
  },

  /** Raw mysql2 floors; each on its own fresh database, connections opened before the clock starts; tasks/s. */
  floors: {
    /** INSERT: `perStatement` = 1 (single-row INSERTs, autocommit) or 64 (one multi-row INSERT), over `conns` connections. */
    async insert({ n, perStatement, conns, schema = "minimal" }) {
      const s = await floorDatabase(`insert_${perStatement}_c${conns}`, conns, schema);
      try {
        const ids = floorIds(n);
        let next = 0;
        const ms = await timed(s.conns, async (conn) => {
          while (next < n) {
            const from = next;
            next = Math.min(n, next + perStatement);
            const now = Date.now();
            if (perStatement === 1) await conn.execute(s.sql.insertOne, rowValues(ids[from], JSON.stringify({ i: from }), now));
            else {
              const chunk = ids.slice(from, next);
              await conn.execute(s.sql.insertMany(chunk.length), chunk.flatMap((id, j) => rowValues(id, JSON.stringify({ i: from + j }), now)));
            }
          }
        });
        return n / (ms / 1000);
      } finally {
        await s.done();
      }
    },

    /**
     * Drain of `warmup + n` queued rows over `conns` connections, each looping: claim up to
     * `perStatement` rows (one transaction: SELECT … FOR UPDATE SKIP LOCKED, UPDATE by id, COMMIT),
     * then complete them (one autocommit UPDATE per task, or one UPDATE … IN of the batch). Timed from
     * the moment `warmup` rows are completed (from the start when it is 0).
     */
    async drain({ n, warmup = 0, perStatement, conns, schema = "minimal" }) {
      const s = await floorDatabase(`drain_${perStatement}_c${conns}`, conns, schema);
      try {
        await prefill(s, warmup + n);
        let done = 0;
        let timedFrom = warmup === 0 ? performance.now() : null;
        let doneBefore = 0;
        await timed(s.conns, async (conn, index) => {
          const workerId = `worker_floor_${index}`;
          for (;;) {
            const rows = await claim(conn, s.sql, workerId, perStatement);
            if (rows.length === 0) return;
            await complete(conn, s.sql, rows.map((row) => row.id), workerId);
            done += rows.length;
            if (timedFrom === null && done >= warmup) {
              timedFrom = performance.now();
              doneBefore = done;
            }
          }
        });
        const ended = performance.now();
        if (done !== warmup + n) throw new Error(`the MySQL drain floor drained ${done} of ${warmup + n} rows`);
        return (done - doneBefore) / ((ended - timedFrom) / 1000);
      } finally {
        await s.done();
      }
    },
  },

  /**
   * The call() floor: on ONE connection, sequentially, per call: INSERT the task (autocommit), claim it
   * (the drain floor's claim transaction), complete it (autocommit), SELECT the row — the three commits
   * any submit → claim → complete round trip needs plus the read, with no process hop, no polling and no
   * client code. `warmup` untimed calls first. Returns `{ p50, p99 }` in ms.
   */
  async callFloor({ calls, warmup }) {
    const s = await floorDatabase("call", 1, "protocol");
    try {
      const conn = s.conns[0];
      const ids = floorIds(warmup + calls);
      const workerId = "worker_floor";
      const samples = [];
      for (let i = 0; i < ids.length; i += 1) {
        const started = performance.now();
        await conn.execute(s.sql.insertOne, rowValues(ids[i], JSON.stringify({ i }), Date.now()));
        const rows = await claim(conn, s.sql, workerId, 1);
        if (String(rows[0]?.id) !== ids[i]) throw new Error(`the call floor claimed ${rows[0]?.id} instead of ${ids[i]}`);
        await complete(conn, s.sql, [ids[i]], workerId);
        const [done] = await conn.execute(s.sql.getOne, [ids[i]]);
        if (String(done[0]?.status) !== "succeeded") throw new Error(`the call floor read ${done[0]?.status} instead of succeeded`);
        if (i >= warmup) samples.push(performance.now() - started);
      }
      return { p50: percentile(samples, 50), p99: percentile(samples, 99) };
    } finally {
      await s.done();
    }
  },

  /** The floors in table order, each matched to our figure by id in report.mjs (the Postgres ids). */
  get floorPlan() {
    return [
      { id: "insert.stmt1.c1", run: (n) => this.floors.insert({ n, perStatement: 1, conns: 1 }) },
      { id: "insert.stmt1.c64", run: (n) => this.floors.insert({ n, perStatement: 1, conns: 64 }) },
      { id: "insert.stmt64", run: (n) => this.floors.insert({ n, perStatement: 64, conns: BATCH_CONNECTIONS }) },
      { id: "drain.stmt1.c1", run: (n, settings) => this.floors.drain({ n, warmup: settings.drainWarmup, perStatement: 1, conns: 1 }) },
      { id: "drain.stmt1.c64", run: (n, settings) => this.floors.drain({ n, warmup: settings.drainWarmup, perStatement: 1, conns: 64 }) },
      { id: "drain.stmt64", run: (n, settings) => this.floors.drain({ n, warmup: settings.drainWarmup, perStatement: 64, conns: BATCH_CONNECTIONS }) },
      { id: "proto.insert.stmt1.c1", run: (n) => this.floors.insert({ n, perStatement: 1, conns: 1, schema: "protocol" }) },
      { id: "proto.insert.stmt64", run: (n) => this.floors.insert({ n, perStatement: 64, conns: BATCH_CONNECTIONS, schema: "protocol" }) },
      { id: "proto.drain.stmt1.c1", run: (n, settings) => this.floors.drain({ n, warmup: settings.drainWarmup, perStatement: 1, conns: 1, schema: "protocol" }) },
      {
        id: "proto.drain.stmt64",
        run: (n, settings) => this.floors.drain({ n, warmup: settings.drainWarmup, perStatement: 64, conns: BATCH_CONNECTIONS, schema: "protocol" }),
      },
      { id: "proto.call", run: (_n, settings) => this.callFloor({ calls: settings.latencyCalls, warmup: settings.latencyWarmup }) },
    ];
  },

  /** Drops every database this run created that a failure may have left behind. */
  async finish() {
    await admin(async (conn) => {
      const [rows] = await conn.query("SELECT schema_name AS name FROM information_schema.schemata WHERE schema_name LIKE ?", [`${PREFIX}%`]);
      for (const row of rows) await conn.query(`DROP DATABASE IF EXISTS \`${row.name}\``);
    });
  },
};
