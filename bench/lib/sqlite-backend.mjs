// The SQLite backend of the bench: a fresh database file per measurement, the
// backlog fill used only to set up the claim measurement, and the raw
// better-sqlite3 floors.
import { fork } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { wakeSignal, watchCommits } from "./commit-watch.mjs";
import { newTaskId, openStore } from "./targets.mjs";
import { sqliteVersion } from "./machine.mjs";
import { percentile } from "./stats.mjs";

const require = createRequire(import.meta.url);
/** The bench's better-sqlite3, loaded on first use: Bun (the drivers row's bun:sqlite child) cannot load it. */
let BetterSqlite3 = null;
function openBetterSqlite3(path) {
  BetterSqlite3 ??= require("better-sqlite3");
  return new BetterSqlite3(path);
}

let dir = null;
let counter = 0;

function runDir() {
  dir ??= mkdtempSync(join(tmpdir(), "cairnq-bench-"));
  return dir;
}

/** The raw driver with the store's own durability settings, so the floor does the same work: WAL, synchronous = NORMAL. */
function openRaw(path) {
  const db = openBetterSqlite3(path);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  return db;
}

/** A raw connection on `driver` (see {@link openRawOn}), no settings applied. */
export function openDriver(driver, path) {
  if (driver === "node:sqlite") return new (process.getBuiltinModule("node:sqlite").DatabaseSync)(path);
  // strict: named parameters bind without their `@` prefix, as the other two bindings do.
  if (driver === "bun:sqlite") return new (require("bun:sqlite").Database)(path, { strict: true });
  return driver === null ? openBetterSqlite3(path) : new (require(driver.betterSqlite3))(path);
}

/**
 * A raw connection on `driver` — null for the bench's better-sqlite3, `{ betterSqlite3: modulePath }`
 * for another copy, "node:sqlite", "bun:sqlite" (under Bun) — with the store's writer settings (WAL,
 * synchronous = NORMAL, temp_store = MEMORY, foreign_keys = ON). Each binding's `prepare(sql).run/all/get`
 * takes the named parameters the floors use.
 */
export function openRawOn(driver, path) {
  const db = openDriver(driver, path);
  // busy_timeout: better-sqlite3 opens with 5 s, node:sqlite and bun:sqlite with 0, which made the raw cross-process floor's
  // worker fail on its follow-up claim (SQLITE_BUSY against the next INSERT) instead of waiting as the other does.
  for (const pragma of ["journal_mode = WAL", "synchronous = NORMAL", "temp_store = MEMORY", "foreign_keys = ON", "busy_timeout = 5000"]) {
    db.exec(`PRAGMA ${pragma}`);
  }
  return db;
}

/**
 * The raw driver on a database file holding the protocol v1 schema, created
 * the way the store creates it (a `SQLiteStore` connects once — all
 * migrations, every §3.5 index, every CHECK — and closes), with the
 * connection settings the store uses on its writer (WAL, synchronous =
 * NORMAL, temp_store = MEMORY, foreign_keys = ON), so that the only
 * difference left between this floor and our figure is our code.
 */
async function openRawProtocol(path) {
  const store = openStore({ backend: "sqlite", path });
  await store.connect();
  await store.close();
  const db = openRaw(path);
  db.pragma("temp_store = MEMORY");
  db.pragma("foreign_keys = ON");
  return db;
}

/**
 * The floors' table: the same columns as `cairnq_tasks` (so rows are the
 * same size), but only what a minimal queue needs to stay correct and fast —
 * the primary key and one claim index in claim order. No CHECKs, no other
 * indexes: whatever CairnQ's schema costs beyond this shows up in the ratio.
 */
const FLOOR_DDL = [
  `CREATE TABLE tasks (id text NOT NULL PRIMARY KEY, name text NOT NULL, queue text NOT NULL, status text NOT NULL,
    payload text NOT NULL, result text, error text, metadata text NOT NULL, progress real, message text,
    attempt integer NOT NULL DEFAULT 0, max_attempts integer NOT NULL, priority integer NOT NULL, worker_id text,
    lease_until_ms integer, run_at_ms integer NOT NULL, cancel_requested_at_ms integer, parent_id text, root_id text,
    correlation_id text, created_at_ms integer NOT NULL, updated_at_ms integer NOT NULL, completed_at_ms integer)`,
  `CREATE INDEX tasks_claim ON tasks (queue, status, priority DESC, run_at_ms, id)`,
];

const FLOOR_INSERT = `INSERT INTO tasks (id, name, queue, status, payload, metadata, max_attempts, priority, run_at_ms, root_id,
  created_at_ms, updated_at_ms) VALUES (@id, 'noop', 'default', 'queued', @payload, '{}', 3, 0, @now, @id, @now, @now)`;

/** Claim = one UPDATE … RETURNING of the next `limit` due rows in claim order (what a draw does). */
const FLOOR_CLAIM = `UPDATE tasks SET status = 'running', worker_id = @workerId, lease_until_ms = @now + 30000, attempt = attempt + 1,
  updated_at_ms = @now WHERE id IN (SELECT id FROM tasks WHERE queue = 'default' AND status = 'queued' AND run_at_ms <= @now
  ORDER BY priority DESC, run_at_ms, id LIMIT @limit) RETURNING *`;

/** Complete = one ownership-checked UPDATE per task. */
const FLOOR_COMPLETE = `UPDATE tasks SET status = 'succeeded', result = @result, progress = 1, completed_at_ms = @now,
  lease_until_ms = NULL, updated_at_ms = @now WHERE id = @id AND status = 'running' AND worker_id = @workerId`;

/**
 * The same four statements on the protocol's `cairnq_tasks` (§3.1): the
 * insert writes what SUBMIT writes for `submit({ name: "noop", payload })`,
 * the claim is one draw in the §3.5 claim index's order, the complete is
 * COMPLETE's no-flag branch for a NULL result (§5.14). Every index, CHECK and
 * `json_valid` of the schema is paid by these as by the store.
 */
export const PROTOCOL = {
  insert: `INSERT INTO cairnq_tasks (id, name, queue, status, payload, metadata, max_attempts, priority, run_at_ms, root_id,
    created_at_ms, updated_at_ms) VALUES (@id, 'noop', 'default', 'queued', @payload, '{}', 3, 0, @now, @id, @now, @now)`,
  claim: `UPDATE cairnq_tasks SET status = 'running', worker_id = @workerId, lease_until_ms = @now + 30000, attempt = attempt + 1,
    updated_at_ms = @now WHERE id IN (SELECT id FROM cairnq_tasks WHERE queue = 'default' AND status = 'queued' AND run_at_ms <= @now
    ORDER BY priority DESC, run_at_ms, id LIMIT @limit) RETURNING *`,
  complete: `UPDATE cairnq_tasks SET status = 'succeeded', result = @result, progress = 1, completed_at_ms = @now,
    lease_until_ms = NULL, updated_at_ms = @now WHERE id = @id AND status = 'running' AND worker_id = @workerId
    AND cancel_requested_at_ms IS NULL`,
};
const MINIMAL = { insert: FLOOR_INSERT, claim: FLOOR_CLAIM, complete: FLOOR_COMPLETE };
/** The call() floor's read of the finished row (protocol schema only). */
export const PROTOCOL_GET = "SELECT * FROM cairnq_tasks WHERE id = ?";

/**
 * A fresh floor database: `schema` = "minimal" (the floor table above) or
 * "protocol" (the protocol v1 schema as the store creates it). Returns the
 * raw connection, the statements and the result value a no-op complete
 * writes (the minimal floor keeps its historical JSON `null`; the protocol
 * writes SQL NULL for a null result, §2.2).
 */
async function floorDatabase(label, schema) {
  const { target, cleanup } = await sqliteBackend.fresh(`${label}-${schema}`);
  if (schema === "protocol") {
    const db = await openRawProtocol(target.path);
    return { db, sql: PROTOCOL, result: null, cleanup, path: target.path };
  }
  const db = openRaw(target.path);
  for (const ddl of FLOOR_DDL) db.exec(ddl);
  return { db, sql: MINIMAL, result: "null", cleanup };
}

/**
 * Task ids for the floors, generated before the clock starts and sorted, so
 * that rows are inserted — and claimed — in id order: the floor's best case.
 * CairnQ's ids are ULIDs, random within one millisecond, so rows created in
 * the same millisecond are claimed out of insertion order and a claim of 64
 * touches more pages; with every row stamped in one instant that alone made
 * this drain floor 2–3× slower (measured while writing this), so it must not
 * leak into the floor. Whatever it costs CairnQ shows up in the ratio.
 */
export function floorIds(n) {
  return Array.from({ length: n }, () => newTaskId()).sort();
}

/**
 * The call() floor's loop on an open connection (`db`: better-sqlite3 or node:sqlite, both take named
 * parameters and answer run/all/get): per call INSERT, claim, complete (each its own commit) and a SELECT of
 * the row, `warmup` untimed first. Returns `{ p50, p99 }` in ms.
 */
export function callFloorOn(db, sql, { calls, warmup, result, label = "the call floor" }) {
  const insert = db.prepare(sql.insert);
  const claim = db.prepare(sql.claim);
  const complete = db.prepare(sql.complete);
  const get = db.prepare(PROTOCOL_GET);
  const ids = floorIds(warmup + calls);
  const workerId = "worker_floor";
  const samples = [];
  for (let i = 0; i < ids.length; i += 1) {
    const started = performance.now();
    insert.run({ id: ids[i], payload: JSON.stringify({ i }), now: Date.now() });
    const [row] = claim.all({ workerId, now: Date.now(), limit: 1 });
    if (row?.id !== ids[i]) throw new Error(`${label} claimed ${row?.id} instead of ${ids[i]}`);
    complete.run({ result, now: Date.now(), id: ids[i], workerId });
    if (get.get(ids[i])?.status !== "succeeded") throw new Error(`${label}'s task did not succeed`);
    if (i >= warmup) samples.push(performance.now() - started);
  }
  return { p50: percentile(samples, 50), p99: percentile(samples, 99) };
}

const CALL_FLOOR_CHILD = fileURLToPath(new URL("../call-floor-child.mjs", import.meta.url));
/** A floor call that takes this long has lost a wake-up: fail rather than hang. */
const CALL_FLOOR_STUCK_MS = 10_000;

/**
 * The call() floor across two processes, as a call() runs: this process INSERTs the task (its own
 * commit) and signals the wake file; a raw better-sqlite3 process (`call-floor-child.mjs`) notices the
 * commit through `watchCommits` (a watch on the wake file and `PRAGMA data_version`), claims the task
 * and completes it (a commit each), signalling after the complete; this process notices that commit the same way and SELECTs the row on a second
 * connection (a reader, as the store has). The same statements and commits as the one-connection call
 * floor, plus what two processes cost on this host: two waits on the other's commit, each connection's
 * page cache emptied by the other's commits, the wake-ups every WAL write sends the other side.
 * `driver`: see {@link openRawOn}; `path` holds the protocol v1 schema. Returns `{ p50, p99 }` in ms.
 */
export async function crossProcessCallFloor(driver, path, { calls, warmup }) {
  const db = openRawOn(driver, path);
  const reader = openRawOn(driver, path);
  const insert = db.prepare(PROTOCOL.insert);
  const get = reader.prepare(PROTOCOL_GET);
  const signal = wakeSignal(path);
  const child = fork(CALL_FLOOR_CHILD, [path, JSON.stringify(driver)], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const exited = new Promise((resolve) => child.once("exit", resolve));
  let waiting = null;
  const stop = watchCommits(path, reader, () => {
    if (waiting === null || get.get(waiting.id)?.status !== "succeeded") return;
    const done = waiting;
    waiting = null;
    done.resolve();
  });
  try {
    await new Promise((resolve, reject) => {
      child.once("message", resolve);
      void exited.then((code) => reject(new Error(`the cross-process call floor's worker exited (code ${code}) before it was ready`)));
    });
    const ids = floorIds(warmup + calls);
    const samples = [];
    for (let i = 0; i < ids.length; i += 1) {
      const started = performance.now();
      let stuck;
      const done = new Promise((resolve, reject) => {
        waiting = { id: ids[i], resolve };
        stuck = setTimeout(() => reject(new Error(`the cross-process call floor's task ${ids[i]} did not succeed within ${CALL_FLOOR_STUCK_MS} ms`)), CALL_FLOOR_STUCK_MS);
      });
      insert.run({ id: ids[i], payload: JSON.stringify({ i }), now: Date.now() });
      signal();
      try {
        await done;
      } finally {
        clearTimeout(stuck);
      }
      if (i >= warmup) samples.push(performance.now() - started);
    }
    return { p50: percentile(samples, 50), p99: percentile(samples, 99) };
  } finally {
    stop();
    if (child.connected) child.send("stop");
    await exited;
    signal.close();
    reader.close();
    db.close();
  }
}

export const sqliteBackend = {
  name: "sqlite",

  /** Nothing to check: the driver is a dependency of the bench. */
  async available() {
    return { ok: true };
  },

  async version() {
    return sqliteVersion();
  },

  /** A fresh database file; `cleanup()` removes it with its WAL, shm and wake files. */
  async fresh(label) {
    counter += 1;
    const path = join(runDir(), `${String(counter).padStart(3, "0")}-${label}.db`);
    return {
      target: { backend: "sqlite", path },
      cleanup: async () => {
        for (const suffix of ["", "-wal", "-shm", "-wake"]) rmSync(path + suffix, { force: true });
      },
    };
  },

  /**
   * SETUP ONLY (the claim-under-backlog measurement): appends `count` queued
   * `noop` tasks with exactly the values the protocol's SUBMIT writes for
   * `submit({ name: "noop", payload: { i } })` — a `task_` ULID id, root_id =
   * id, metadata {}, max_attempts 3, priority 0, run_at = created = updated =
   * now — in one raw transaction, because 100k submits through the client
   * would take longer than everything else. The schema must already exist.
   */
  async fillBacklog(target, count) {
    const db = openRaw(target.path);
    try {
      const insert = db.prepare(
        `INSERT INTO cairnq_tasks (id, name, queue, status, payload, metadata, max_attempts, priority, run_at_ms, root_id,
          created_at_ms, updated_at_ms) VALUES (@id, 'noop', 'default', 'queued', @payload, '{}', 3, 0, @now, @id, @now, @now)`,
      );
      db.transaction(() => {
        for (let i = 0; i < count; i += 1) {
          const now = Date.now();
          insert.run({ id: newTaskId(now), payload: JSON.stringify({ i }), now });
        }
      }).immediate();
    } finally {
      db.close();
    }
  },

  /** The `completed_at_ms` of every succeeded task, ascending (the churn figures' completion clock). */
  async completionTimes(target) {
    const db = openRaw(target.path);
    try {
      return db.prepare("SELECT completed_at_ms AS t FROM cairnq_tasks WHERE status = 'succeeded' ORDER BY completed_at_ms").all().map((r) => Number(r.t));
    } finally {
      db.close();
    }
  },

  /**
   * SETUP ONLY (the growth figure): appends `count` terminal (`succeeded`)
   * `noop` tasks, as COMPLETE leaves them, older than anything queued (ids
   * and times before now), with ONE `INSERT … SELECT` over a recursive CTE —
   * no row crosses into JavaScript, so a million rows take seconds.
   */
  async fillTerminal(target, count) {
    const db = openRaw(target.path);
    try {
      const t0 = Date.now() - count - 60_000;
      db.prepare(
        `WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i + 1 < @count)
        INSERT INTO cairnq_tasks (id, name, queue, status, payload, metadata, progress, attempt, max_attempts, priority, worker_id,
          run_at_ms, root_id, created_at_ms, updated_at_ms, completed_at_ms)
        SELECT 'task_' || printf('%026d', i), 'noop', 'default', 'succeeded', '{"i":' || i || '}', '{}', 1, 1, 3, 0, 'worker_bench',
          @t0 + i, 'task_' || printf('%026d', i), @t0 + i, @t0 + i + 5, @t0 + i + 5 FROM s`,
      ).run({ count, t0 });
    } finally {
      db.close();
    }
  },

  /**
   * Raw better-sqlite3 floors; each runs on its own fresh file and returns
   * tasks/s. `schema` = "minimal" (the floor table) or "protocol" (the
   * protocol v1 schema, see `openRawProtocol`).
   */
  floors: {
    /** INSERT of a task row: `perTx` = 1 is autocommit (one statement per transaction), else `perTx` inserts per transaction. */
    async insert({ n, perTx, schema = "minimal" }) {
      const { db, sql, cleanup } = await floorDatabase(`floor-insert-${perTx}`, schema);
      try {
        const insert = db.prepare(sql.insert);
        const ids = floorIds(n);
        const insertOne = (i) => insert.run({ id: ids[i], payload: JSON.stringify({ i }), now: Date.now() });
        const batch = db.transaction((from, to) => {
          for (let i = from; i < to; i += 1) insertOne(i);
        });
        const started = performance.now();
        if (perTx === 1) {
          for (let i = 0; i < n; i += 1) insertOne(i);
        } else {
          for (let i = 0; i < n; i += perTx) batch.immediate(i, Math.min(n, i + perTx));
        }
        const ms = performance.now() - started;
        return n / (ms / 1000);
      } finally {
        db.close();
        await cleanup();
      }
    },

    /**
     * Drain of `warmup + n` queued rows: claim (UPDATE … RETURNING of up to
     * `perTx` due rows) then one complete UPDATE per task. `perTx` = 1: each
     * of the two statements is its own transaction; else one claim
     * transaction of `perTx` rows and one transaction completing them. Timed
     * from the moment `warmup` rows are completed (from the start when it is 0).
     */
    async drain({ n, warmup = 0, perTx, schema = "minimal" }) {
      const { db, sql, result, cleanup } = await floorDatabase(`floor-drain-${perTx}`, schema);
      try {
        const insert = db.prepare(sql.insert);
        const total = warmup + n;
        const ids = floorIds(total);
        db.transaction(() => {
          for (let i = 0; i < total; i += 1) insert.run({ id: ids[i], payload: JSON.stringify({ i }), now: Date.now() });
        }).immediate();
        const claim = db.prepare(sql.claim);
        const complete = db.prepare(sql.complete);
        const workerId = "worker_floor";
        const completeAll = db.transaction((rows) => {
          for (const row of rows) complete.run({ result, now: Date.now(), id: row.id, workerId });
        });
        const claimTx = db.transaction((limit) => claim.all({ workerId, now: Date.now(), limit }));
        let done = 0;
        let started = performance.now();
        let doneBefore = 0;
        let timing = warmup === 0;
        for (;;) {
          const rows = perTx === 1 ? claim.all({ workerId, now: Date.now(), limit: 1 }) : claimTx.immediate(perTx);
          if (rows.length === 0) break;
          for (const row of rows) JSON.parse(row.payload);
          if (perTx === 1) complete.run({ result, now: Date.now(), id: rows[0].id, workerId });
          else completeAll.immediate(rows);
          done += rows.length;
          if (!timing && done >= warmup) {
            timing = true;
            started = performance.now();
            doneBefore = done;
          }
        }
        const ms = performance.now() - started;
        if (done !== total) throw new Error(`the SQLite drain floor drained ${done} of ${total} rows`);
        return (done - doneBefore) / (ms / 1000);
      } finally {
        db.close();
        await cleanup();
      }
    },
  },

  /**
   * The call() floor: one connection, per call: INSERT the task, claim it, complete it (each its own
   * autocommit transaction), SELECT the row — the three commits of a submit → claim → complete round trip
   * plus the read, with no process hop and no client code (see the Postgres backend's). `warmup` untimed
   * calls first. Returns `{ p50, p99 }` in ms.
   */
  async callFloor({ calls, warmup }) {
    const { db, sql, result, cleanup } = await floorDatabase("floor-call", "protocol");
    try {
      return callFloorOn(db, sql, { calls, warmup, result });
    } finally {
      db.close();
      await cleanup();
    }
  },

  /**
   * The call() floor across two processes (see `crossProcessCallFloor`); `{ p50, p99 }` in ms. Not in
   * `floorPlan`: run.mjs measures it with the call() latency, right after it.
   */
  async crossProcessCallFloor({ calls, warmup }) {
    const { db, cleanup, path } = await floorDatabase("floor-call-x", "protocol");
    db.close();
    try {
      return await crossProcessCallFloor(null, path, { calls, warmup });
    } finally {
      await cleanup();
    }
  },

  /** The floors in table order, each matched to our figure by id in report.mjs. */
  get floorPlan() {
    return [
      { id: "insert.tx1", run: (n) => this.floors.insert({ n, perTx: 1 }) },
      { id: "insert.tx64", run: (n) => this.floors.insert({ n, perTx: 64 }) },
      { id: "drain.tx1", run: (n, settings) => this.floors.drain({ n, warmup: settings.drainWarmup, perTx: 1 }) },
      { id: "drain.tx64", run: (n, settings) => this.floors.drain({ n, warmup: settings.drainWarmup, perTx: 64 }) },
      { id: "proto.insert.tx1", run: (n) => this.floors.insert({ n, perTx: 1, schema: "protocol" }) },
      { id: "proto.insert.tx64", run: (n) => this.floors.insert({ n, perTx: 64, schema: "protocol" }) },
      { id: "proto.drain.tx1", run: (n, settings) => this.floors.drain({ n, warmup: settings.drainWarmup, perTx: 1, schema: "protocol" }) },
      { id: "proto.drain.tx64", run: (n, settings) => this.floors.drain({ n, warmup: settings.drainWarmup, perTx: 64, schema: "protocol" }) },
      { id: "proto.call", run: (_n, settings) => this.callFloor({ calls: settings.latencyCalls, warmup: settings.latencyWarmup }) },
    ];
  },

  /** Removes the run's temp directory. */
  async finish() {
    if (dir !== null) rmSync(dir, { recursive: true, force: true });
    dir = null;
  },
};
