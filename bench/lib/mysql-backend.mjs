// The MySQL/MariaDB backend of the bench: a fresh database per measurement
// (dropped afterwards) and the raw mysql2 floors on the protocol's schema,
// as lib/postgres-backend.mjs does for Postgres.
//
// The server: CAIRNQ_BENCH_MYSQL_DSN, default mysql://root@127.0.0.1:3306/test.
import { createRequire } from "node:module";
import { floorIds } from "./sqlite-backend.mjs";
import { asyncCallFloor, timedDrain } from "./stats.mjs";
import { openStore } from "./targets.mjs";

const require = createRequire(import.meta.url);
const mysql = require("mysql2/promise");

const DSN = process.env.CAIRNQ_BENCH_MYSQL_DSN ?? "mysql://root@127.0.0.1:3306/test";
const PREFIX = `cairnq_bench_${process.pid}_`;
let counter = 0;

function dsnFor(database) {
  const url = new URL(DSN);
  url.pathname = `/${database}`;
  return url.toString();
}

/** A connection on `database` (null: none), with the session the store sets on its own pool. */
async function connect(database) {
  const conn = await mysql.createConnection({ uri: database === null ? dsnFor("") : dsnFor(database), decimalNumbers: true, charset: "UTF8MB4_BIN" });
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

async function createDatabase(name) {
  await admin((c) => c.query(`CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`));
}

async function dropDatabase(name) {
  await admin((c) => c.query(`DROP DATABASE IF EXISTS \`${name}\``));
}

/**
 * The floors' statements on the protocol's `cairnq_tasks` as `MySQLStore` creates it: the same
 * columns, indexes and types. MariaDB has no `UPDATE … RETURNING`, so the raw claim is what a
 * hand-written MySQL queue does: `SELECT … FOR UPDATE SKIP LOCKED` of the next rows, then one
 * `UPDATE` of those ids, in one transaction.
 */
const SQL = {
  insertOne: `INSERT INTO cairnq_tasks (id, name, queue, status, payload, metadata, max_attempts, priority, run_at_ms, root_id,
    created_at_ms, updated_at_ms) VALUES (?, 'noop', 'default', 'queued', ?, '{}', 3, 0, ?, ?, ?, ?)`,
  insertMany: (rows) =>
    `INSERT INTO cairnq_tasks (id, name, queue, status, payload, metadata, max_attempts, priority, run_at_ms, root_id,
    created_at_ms, updated_at_ms) VALUES ${Array.from({ length: rows }, () => "(?, 'noop', 'default', 'queued', ?, '{}', 3, 0, ?, ?, ?, ?)").join(", ")}`,
  pick: `SELECT * FROM cairnq_tasks WHERE queue = 'default' AND status = 'queued' AND run_at_ms <= ?
    ORDER BY priority DESC, run_at_ms, id LIMIT ? FOR UPDATE SKIP LOCKED`,
  claim: (rows) =>
    `UPDATE cairnq_tasks SET status = 'running', worker_id = ?, lease_until_ms = ? + 30000, attempt = attempt + 1, updated_at_ms = ?
    WHERE id IN (${Array.from({ length: rows }, () => "?").join(", ")})`,
  complete: (rows) =>
    `UPDATE cairnq_tasks SET status = 'succeeded', result = NULL, progress = 1, completed_at_ms = ?, lease_until_ms = NULL,
    updated_at_ms = ? WHERE id IN (${Array.from({ length: rows }, () => "?").join(", ")}) AND status = 'running' AND worker_id = ? AND cancel_requested_at_ms IS NULL`,
  getOne: "SELECT * FROM cairnq_tasks WHERE id = ?",
};

function insertValues(ids, from, now) {
  return ids.flatMap((id, j) => [id, JSON.stringify({ i: from + j }), now, id, now, now]);
}

/** The claim of the raw floors: pick and update in one transaction; the picked rows. */
async function claim(conn, workerId, limit) {
  await conn.query("START TRANSACTION");
  const now = Date.now();
  const [rows] = await conn.query(SQL.pick, [now, limit]);
  if (rows.length > 0) await conn.query(SQL.claim(rows.length), [workerId, now, now, ...rows.map((r) => r.id)]);
  await conn.query("COMMIT");
  return rows;
}

async function timed(conns, fn) {
  const started = performance.now();
  await Promise.all(conns.map((conn, index) => fn(conn, index)));
  return performance.now() - started;
}

/** A fresh database with the protocol's schema (a `MySQLStore` connects once: migrations), and `conns` connections on it. */
async function floorDatabase(label, conns) {
  counter += 1;
  const name = `${PREFIX}${counter}_${label}`.slice(0, 64);
  await createDatabase(name);
  const store = openStore({ backend: "mysql", dsn: dsnFor(name) });
  await store.connect();
  await store.close();
  const all = await Promise.all(Array.from({ length: conns }, () => connect(name)));
  return {
    conns: all,
    async done() {
      await Promise.all(all.map((c) => c.end()));
      await dropDatabase(name);
    },
  };
}

async function prefill(conn, n) {
  const ids = floorIds(n);
  for (let i = 0; i < n; i += 500) {
    const chunk = ids.slice(i, i + 500);
    await conn.query(SQL.insertMany(chunk.length), insertValues(chunk, i, Date.now()));
  }
  await conn.query("ANALYZE TABLE cairnq_tasks");
}

/** How many connections the 64-rows-per-statement floors use (as on Postgres). */
const BATCH_CONNECTIONS = 8;

export const mysqlBackend = {
  name: "mysql",

  async available() {
    try {
      await admin((c) => c.query("SELECT 1"));
      return { ok: true };
    } catch (err) {
      return { ok: false, reason: `cannot connect to ${DSN.replace(/\/\/[^@]*@/, "//…@")}: ${err instanceof Error ? err.message : String(err)}` };
    }
  },

  async version() {
    return admin(async (c) => (await c.query("SELECT VERSION() AS v"))[0][0].v);
  },

  /** A fresh, empty database; `cleanup()` drops it. */
  async fresh(label) {
    counter += 1;
    const name = `${PREFIX}${counter}_${label.replace(/[^A-Za-z0-9_]/g, "_")}`.slice(0, 64);
    await createDatabase(name);
    return { target: { backend: "mysql", dsn: dsnFor(name) }, cleanup: () => dropDatabase(name) };
  },

  /** SETUP ONLY (claim under backlog): `count` queued `noop` tasks, multi-row inserts. */
  async fillBacklog(target, count) {
    const conn = await connect(new URL(target.dsn).pathname.slice(1));
    try {
      await prefill(conn, count);
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
      const row = "(?, 'noop', 'default', 'succeeded', ?, '{}', 1, 1, 3, 0, 'worker_bench', ?, ?, ?, ?, ?)";
      for (let done = 0; done < count; done += 5_000) {
        const size = Math.min(5_000, count - done);
        const values = [];
        for (let i = done; i < done + size; i += 1) {
          const id = `task_${String(i).padStart(26, "0")}`;
          values.push(id, JSON.stringify({ i }), base + i, id, base + i, base + i + 5, base + i + 5);
        }
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

  floors: {
    /** INSERT: `perStatement` = 1 (single-row INSERTs) or 64 (one multi-row INSERT), over `conns` connections; tasks/s. */
    async insert({ n, perStatement, conns }) {
      const s = await floorDatabase(`insert_${perStatement}_c${conns}`, conns);
      try {
        const ids = floorIds(n);
        let next = 0;
        const ms = await timed(s.conns, async (conn) => {
          while (next < n) {
            const from = next;
            next = Math.min(n, next + perStatement);
            const chunk = ids.slice(from, next);
            await conn.query(chunk.length === 1 ? SQL.insertOne : SQL.insertMany(chunk.length), insertValues(chunk, from, Date.now()));
          }
        });
        return n / (ms / 1000);
      } finally {
        await s.done();
      }
    },

    /** Drain of `warmup + n` queued rows: claim up to `perStatement` (pick + update), then complete them in one UPDATE; timed after `warmup`. */
    async drain({ n, warmup = 0, perStatement, conns }) {
      const s = await floorDatabase(`drain_${perStatement}_c${conns}`, conns);
      try {
        await prefill(s.conns[0], warmup + n);
        return await timedDrain(s.conns, { total: warmup + n, warmup, what: "the MySQL drain floor" }, async (conn, index) => {
          const workerId = `worker_floor_${index}`;
          const rows = await claim(conn, workerId, perStatement);
          if (rows.length === 0) return 0;
          const now = Date.now();
          await conn.query(SQL.complete(rows.length), [now, now, ...rows.map((r) => r.id), workerId]);
          return rows.length;
        });
      } finally {
        await s.done();
      }
    },
  },

  /** The call() floor: on one connection, per call: insert, claim (one transaction), complete, read back. `{ p50, p99 }` in ms. */
  async callFloor({ calls, warmup }) {
    const s = await floorDatabase("call", 1);
    try {
      const conn = s.conns[0];
      return await asyncCallFloor(floorIds(warmup + calls), warmup, {
        insert: (id, i) => conn.query(SQL.insertOne, insertValues([id], i, Date.now())),
        claim: async () => String((await claim(conn, "worker_floor", 1))[0]?.id),
        complete: (id) => {
          const now = Date.now();
          return conn.query(SQL.complete(1), [now, now, id, "worker_floor"]);
        },
        status: async (id) => String((await conn.query(SQL.getOne, [id]))[0][0]?.status),
      });
    } finally {
      await s.done();
    }
  },

  /** The floors in table order, named as Postgres's so report.mjs matches them to the same figures. */
  get floorPlan() {
    return [
      { id: "proto.insert.stmt1.c1", run: (n) => this.floors.insert({ n, perStatement: 1, conns: 1 }) },
      { id: "proto.insert.stmt64", run: (n) => this.floors.insert({ n, perStatement: 64, conns: BATCH_CONNECTIONS }) },
      { id: "proto.drain.stmt1.c1", run: (n, settings) => this.floors.drain({ n, warmup: settings.drainWarmup, perStatement: 1, conns: 1 }) },
      { id: "proto.drain.stmt64", run: (n, settings) => this.floors.drain({ n, warmup: settings.drainWarmup, perStatement: 64, conns: BATCH_CONNECTIONS }) },
      { id: "proto.call", run: (_n, settings) => this.callFloor({ calls: settings.latencyCalls, warmup: settings.latencyWarmup }) },
    ];
  },

  /** Drops every database this run created that a failure may have left behind. */
  async finish() {
    await admin(async (c) => {
      const [rows] = await c.query("SELECT schema_name AS name FROM information_schema.schemata WHERE schema_name LIKE ?", [`${PREFIX.replaceAll("_", "\\_")}%`]);
      for (const row of rows) await c.query(`DROP DATABASE IF EXISTS \`${row.name}\``);
    });
  },
};
