// The Postgres backend of the bench: a fresh schema per measurement (dropped
// afterwards), the backlog fill used only to set up the claim measurement,
// and the raw pg floors.
//
// The database: CAIRNQ_BENCH_PG_DSN, default postgres://postgres@127.0.0.1:5432/test.
import { createRequire } from "node:module";
import { floorIds } from "./sqlite-backend.mjs";
import { asyncCallFloor, timedDrain } from "./stats.mjs";
import { hasPostgres, openStore } from "./targets.mjs";

const require = createRequire(import.meta.url);
const pg = require("pg");

const DSN = process.env.CAIRNQ_BENCH_PG_DSN ?? "postgres://postgres@127.0.0.1:5432/test";
/** The database the bench measures against (the pooler figures make databases of their own on its server). */
export const POSTGRES_DSN = DSN;
const PREFIX = `cairnq_bench_${process.pid}_`;
const DB_NOW = "(extract(epoch from clock_timestamp()) * 1000)::bigint";
let counter = 0;

/** A connected client whose search_path is `schema` (created when asked). */
async function connect(schema, { create = false } = {}) {
  const client = new pg.Client({ connectionString: DSN, ...(schema === null ? {} : { options: `-c search_path=${schema}` }) });
  await client.connect();
  if (create) await client.query(`CREATE SCHEMA "${schema}"`);
  return client;
}

async function admin(fn) {
  const client = await connect(null);
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** `n` clients on `schema`, connected before any clock starts. */
async function clients(schema, n) {
  return Promise.all(Array.from({ length: n }, () => connect(schema)));
}

/**
 * The floors' table: the same columns and types as `cairnq_tasks` on
 * Postgres, the primary key and one claim index in claim order — no notify
 * trigger, no other index (see the SQLite floor table).
 */
const FLOOR_DDL = [
  `CREATE TABLE tasks (id text NOT NULL PRIMARY KEY, name text NOT NULL, queue text NOT NULL, status text NOT NULL,
    payload jsonb NOT NULL, result jsonb, error jsonb, metadata jsonb NOT NULL, progress double precision, message text,
    attempt integer NOT NULL DEFAULT 0, max_attempts integer NOT NULL, priority integer NOT NULL, worker_id text,
    lease_until_ms bigint, run_at_ms bigint NOT NULL, cancel_requested_at_ms bigint, parent_id text, root_id text,
    correlation_id text, created_at_ms bigint NOT NULL, updated_at_ms bigint NOT NULL, completed_at_ms bigint)`,
  `CREATE INDEX tasks_claim ON tasks (queue, status, priority DESC, run_at_ms, id)`,
];

const INSERT_ONE = {
  name: "floor_insert_one",
  text: `INSERT INTO tasks (id, name, queue, status, payload, metadata, max_attempts, priority, run_at_ms, root_id, created_at_ms,
    updated_at_ms) VALUES ($1, 'noop', 'default', 'queued', $2::jsonb, '{}', 3, 0, $3, $1, $3, $3)`,
};
const INSERT_MANY = {
  name: "floor_insert_many",
  text: `INSERT INTO tasks (id, name, queue, status, payload, metadata, max_attempts, priority, run_at_ms, root_id, created_at_ms,
    updated_at_ms) SELECT u.id, 'noop', 'default', 'queued', u.payload, '{}', 3, 0, $3, u.id, $3, $3
    FROM unnest($1::text[], $2::jsonb[]) AS u(id, payload)`,
};
/** Claim = one UPDATE … RETURNING of the next `limit` due rows, row-locked with SKIP LOCKED so connections never wait on each other. */
const CLAIM = {
  name: "floor_claim",
  text: `UPDATE tasks SET status = 'running', worker_id = $1, lease_until_ms = $2 + 30000, attempt = attempt + 1, updated_at_ms = $2
    WHERE id IN (SELECT id FROM tasks WHERE queue = 'default' AND status = 'queued' AND run_at_ms <= $2
    ORDER BY priority DESC, run_at_ms, id LIMIT $3 FOR UPDATE SKIP LOCKED) RETURNING *`,
};
const COMPLETE_ONE = {
  name: "floor_complete_one",
  text: `UPDATE tasks SET status = 'succeeded', result = 'null', progress = 1, completed_at_ms = $1, lease_until_ms = NULL,
    updated_at_ms = $1 WHERE id = $2 AND status = 'running' AND worker_id = $3`,
};
const COMPLETE_MANY = {
  name: "floor_complete_many",
  text: `UPDATE tasks SET status = 'succeeded', result = 'null', progress = 1, completed_at_ms = $1, lease_until_ms = NULL,
    updated_at_ms = $1 WHERE id = ANY($2::text[]) AND status = 'running' AND worker_id = $3`,
};

/**
 * The same statements on the protocol's `cairnq_tasks` (§3.1; see the SQLite
 * backend's PROTOCOL): every §3.5 index and the §3.8 notify trigger fire for
 * these as for the store (each insert notifies `cairnq_queued`, each complete
 * `cairnq_done`). A no-op complete writes SQL NULL (§2.2).
 */
const PROTOCOL = {
  insertOne: {
    name: "proto_insert_one",
    text: `INSERT INTO cairnq_tasks (id, name, queue, status, payload, metadata, max_attempts, priority, run_at_ms, root_id,
      created_at_ms, updated_at_ms) VALUES ($1, 'noop', 'default', 'queued', $2::jsonb, '{}'::jsonb, 3, 0, $3, $1, $3, $3)`,
  },
  insertMany: {
    name: "proto_insert_many",
    text: `INSERT INTO cairnq_tasks (id, name, queue, status, payload, metadata, max_attempts, priority, run_at_ms, root_id,
      created_at_ms, updated_at_ms) SELECT u.id, 'noop', 'default', 'queued', u.payload, '{}'::jsonb, 3, 0, $3, u.id, $3, $3
      FROM unnest($1::text[], $2::jsonb[]) AS u(id, payload)`,
  },
  claim: {
    name: "proto_claim",
    text: `UPDATE cairnq_tasks SET status = 'running', worker_id = $1, lease_until_ms = $2 + 30000, attempt = attempt + 1,
      updated_at_ms = $2 WHERE id IN (SELECT id FROM cairnq_tasks WHERE queue = 'default' AND status = 'queued' AND run_at_ms <= $2
      ORDER BY priority DESC, run_at_ms, id LIMIT $3 FOR UPDATE SKIP LOCKED) RETURNING *`,
  },
  completeOne: {
    name: "proto_complete_one",
    text: `UPDATE cairnq_tasks SET status = 'succeeded', result = NULL, progress = 1, completed_at_ms = $1, lease_until_ms = NULL,
      updated_at_ms = $1 WHERE id = $2 AND status = 'running' AND worker_id = $3 AND cancel_requested_at_ms IS NULL`,
  },
  getOne: { name: "proto_get_one", text: `SELECT * FROM cairnq_tasks WHERE id = $1` },
  completeMany: {
    name: "proto_complete_many",
    text: `UPDATE cairnq_tasks SET status = 'succeeded', result = NULL, progress = 1, completed_at_ms = $1, lease_until_ms = NULL,
      updated_at_ms = $1 WHERE id = ANY($2::text[]) AND status = 'running' AND worker_id = $3 AND cancel_requested_at_ms IS NULL`,
  },
};
const MINIMAL = { insertOne: INSERT_ONE, insertMany: INSERT_MANY, claim: CLAIM, completeOne: COMPLETE_ONE, completeMany: COMPLETE_MANY };

/** Runs `fn(client, index)` on every client at once; resolves with the elapsed ms. */
async function timed(conns, fn) {
  const started = performance.now();
  await Promise.all(conns.map((client, index) => fn(client, index)));
  return performance.now() - started;
}

/**
 * A fresh floor schema with `conns` connections on it; `done()` closes and
 * drops everything. `kind` = "minimal" (the floor table) or "protocol" (the
 * protocol v1 schema, created the way the store creates it: a
 * `PostgresStore` connects once — migrations, indexes, CHECK, trigger — and
 * closes).
 */
async function floorSchema(label, conns, kind = "minimal") {
  counter += 1;
  const schema = `${PREFIX}${counter}_${kind === "protocol" ? "p_" : ""}${label}`;
  let first;
  if (kind === "protocol") {
    const store = openStore({ backend: "postgres", dsn: DSN, schema });
    await store.connect();
    await store.close();
    first = await connect(schema);
  } else {
    first = await connect(schema, { create: true });
    for (const ddl of FLOOR_DDL) await first.query(ddl);
  }
  const rest = await clients(schema, conns - 1);
  const all = [first, ...rest];
  return {
    schema,
    conns: all,
    sql: kind === "protocol" ? PROTOCOL : MINIMAL,
    table: kind === "protocol" ? "cairnq_tasks" : "tasks",
    async done() {
      await Promise.all(all.map((client) => client.end()));
      await admin((client) => client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`));
    },
  };
}

/** `n` rows in insertion order (see floorIds), written in chunks before the clock starts. */
async function prefill(s, n) {
  const client = s.conns[0];
  const ids = floorIds(n);
  for (let i = 0; i < n; i += 5_000) {
    const chunk = ids.slice(i, i + 5_000);
    await client.query(s.sql.insertMany, [chunk, chunk.map((_, j) => JSON.stringify({ i: i + j })), Date.now()]);
  }
  await client.query(`ANALYZE ${s.table}`);
}

/**
 * How many connections the 64-tasks-per-statement floors use: enough that
 * one connection's statement runs while others wait for their commit's WAL
 * flush. Measured on this 2-core machine at n = 10,000 (3 runs each, medians):
 * drain 20.2k/s with 2 connections, 23.3k/s with 4, 26.8k/s with 8, 24.5k/s
 * with 16; insert 58k/72k/69k/74k — 8 is at the top for both within the
 * noise, and the store's default pool is 10.
 */
export const BATCH_CONNECTIONS = 8;

export const postgresBackend = {
  name: "postgres",

  /** Ready when the built umbrella has the Postgres factories and the database answers. */
  async available() {
    if (!hasPostgres()) return { ok: false, reason: "the built cairnq package has no CairnQ.postgres / Worker.postgres / PostgresStore yet" };
    try {
      await admin((client) => client.query("SELECT 1"));
      return { ok: true };
    } catch (err) {
      return { ok: false, reason: `cannot connect to ${DSN.replace(/\/\/[^@]*@/, "//…@")}: ${err instanceof Error ? err.message : String(err)}` };
    }
  },

  async version() {
    return admin(async (client) => (await client.query("SHOW server_version")).rows[0].server_version);
  },

  /** A fresh, empty schema name; the store creates the schema. `cleanup()` drops it. */
  async fresh(label) {
    counter += 1;
    const schema = `${PREFIX}${counter}_${label.replace(/[^A-Za-z0-9_]/g, "_")}`;
    return {
      target: { backend: "postgres", dsn: DSN, schema },
      cleanup: () => admin((client) => client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)),
    };
  },

  /**
   * SETUP ONLY (claim under backlog): appends `count` queued `noop` tasks
   * with the values the protocol's SUBMIT writes (see the SQLite backend),
   * the database clock as the store uses it, in one raw multi-row statement
   * per 10k rows; then ANALYZE, as autovacuum would have done for a backlog
   * that built up over time.
   */
  async fillBacklog(target, count) {
    const client = await connect(target.schema);
    try {
      for (let done = 0; done < count; done += 10_000) {
        const size = Math.min(10_000, count - done);
        const ids = floorIds(size);
        await client.query(
          `INSERT INTO cairnq_tasks (id, name, queue, status, payload, metadata, max_attempts, priority, run_at_ms, root_id,
            created_at_ms, updated_at_ms) SELECT u.id, 'noop', 'default', 'queued', u.payload, '{}'::jsonb, 3, 0, ${DB_NOW}, u.id,
            ${DB_NOW}, ${DB_NOW} FROM unnest($1::text[], $2::jsonb[]) AS u(id, payload)`,
          [ids, ids.map((_, j) => JSON.stringify({ i: done + j }))],
        );
      }
      await client.query("ANALYZE cairnq_tasks");
    } finally {
      await client.end();
    }
  },

  /** The `completed_at_ms` of every succeeded task, ascending (the churn figures' completion clock). */
  async completionTimes(target) {
    const client = await connect(target.schema);
    try {
      const { rows } = await client.query("SELECT completed_at_ms AS t FROM cairnq_tasks WHERE status = 'succeeded' ORDER BY completed_at_ms");
      return rows.map((r) => Number(r.t));
    } finally {
      await client.end();
    }
  },

  /**
   * SETUP ONLY (the growth figure): appends `count` terminal (`succeeded`)
   * `noop` tasks, as COMPLETE leaves them, older than anything queued, with
   * ONE `INSERT … SELECT` over `generate_series` (no row crosses the wire),
   * with the §3.8 trigger disabled for that statement only: for an insert of
   * a terminal row it matches no branch and notifies nothing, so this skips
   * a million no-op plpgsql calls and nothing else. The rows are written in
   * their final state, so the table holds no dead tuples from them (as after
   * autovacuum). ANALYZE follows in `fillBacklog`.
   */
  async fillTerminal(target, count) {
    const client = await connect(target.schema);
    try {
      await client.query("BEGIN");
      await client.query("ALTER TABLE cairnq_tasks DISABLE TRIGGER cairnq_tasks_notify");
      await client.query(
        `INSERT INTO cairnq_tasks (id, name, queue, status, payload, metadata, progress, attempt, max_attempts, priority, worker_id,
          run_at_ms, root_id, created_at_ms, updated_at_ms, completed_at_ms)
        SELECT 'task_' || lpad(i::text, 26, '0'), 'noop', 'default', 'succeeded', jsonb_build_object('i', i), '{}'::jsonb, 1, 1, 3, 0,
          'worker_bench', $1::bigint + i, 'task_' || lpad(i::text, 26, '0'), $1::bigint + i, $1::bigint + i + 5, $1::bigint + i + 5
        FROM generate_series(0, $2::integer - 1) AS i`,
        [Date.now() - count - 60_000, count],
      );
      await client.query("ALTER TABLE cairnq_tasks ENABLE TRIGGER cairnq_tasks_notify");
      await client.query("COMMIT");
    } finally {
      await client.end();
    }
  },

  /** Raw pg floors; each on its own fresh schema, connections opened before the clock starts; tasks/s. */
  floors: {
    /** INSERT: `perStatement` = 1 (single-row INSERTs) or 64 (one multi-row INSERT), over `conns` connections. */
    async insert({ n, perStatement, conns, schema = "minimal" }) {
      const s = await floorSchema(`insert_${perStatement}_c${conns}`, conns, schema);
      try {
        const ids = floorIds(n);
        let next = 0;
        const ms = await timed(s.conns, async (client) => {
          while (next < n) {
            const from = next;
            next = Math.min(n, next + perStatement);
            if (perStatement === 1) {
              await client.query(s.sql.insertOne, [ids[from], JSON.stringify({ i: from }), Date.now()]);
            } else {
              const chunk = ids.slice(from, next);
              await client.query(s.sql.insertMany, [chunk, chunk.map((_, j) => JSON.stringify({ i: from + j })), Date.now()]);
            }
          }
        });
        return n / (ms / 1000);
      } finally {
        await s.done();
      }
    },

    /**
     * Drain of `warmup + n` queued rows over `conns` connections, each looping:
     * claim (UPDATE … RETURNING of up to `perStatement` rows, SKIP LOCKED)
     * then complete (one UPDATE per task, or one UPDATE … = ANY of the
     * batch). Timed from the moment `warmup` rows are completed (from the
     * start when it is 0): the rows completed after it, over the time since.
     */
    async drain({ n, warmup = 0, perStatement, conns, schema = "minimal" }) {
      const s = await floorSchema(`drain_${perStatement}_c${conns}`, conns, schema);
      try {
        await prefill(s, warmup + n);
        return await timedDrain(s.conns, { total: warmup + n, warmup, what: "the Postgres drain floor" }, async (client, index) => {
          const workerId = `worker_floor_${index}`;
          const { rows } = await client.query(s.sql.claim, [workerId, Date.now(), perStatement]);
          if (rows.length === 0) return 0;
          if (perStatement === 1) {
            await client.query(s.sql.completeOne, [Date.now(), rows[0].id, workerId]);
          } else {
            await client.query(s.sql.completeMany, [Date.now(), rows.map((row) => row.id), workerId]);
          }
          return rows.length;
        });
      } finally {
        await s.done();
      }
    },
  },

  /**
   * The call() floor: on ONE connection, sequentially, per call: INSERT the task (autocommit), claim it (the
   * single-statement claim of the drain floor, autocommit), complete it (autocommit), SELECT the row — the
   * three commits any submit → claim → complete round trip needs plus the read, with no process hop, no
   * NOTIFY delivery and no client code. `warmup` untimed calls first. Returns `{ p50, p99 }` in ms.
   */
  async callFloor({ calls, warmup }) {
    const s = await floorSchema("call", 1, "protocol");
    try {
      const client = s.conns[0];
      const workerId = "worker_floor";
      return await asyncCallFloor(floorIds(warmup + calls), warmup, {
        insert: (id, i) => client.query(s.sql.insertOne, [id, JSON.stringify({ i }), Date.now()]),
        claim: async () => (await client.query(s.sql.claim, [workerId, Date.now(), 1])).rows[0]?.id,
        complete: (id) => client.query(s.sql.completeOne, [Date.now(), id, workerId]),
        status: async (id) => (await client.query(s.sql.getOne, [id])).rows[0]?.status,
      });
    } finally {
      await s.done();
    }
  },

  /** The floors in table order, each matched to our figure by id in report.mjs. */
  get floorPlan() {
    return [
      { id: "insert.stmt1.c1", run: (n) => this.floors.insert({ n, perStatement: 1, conns: 1 }) },
      { id: "insert.stmt1.c64", run: (n) => this.floors.insert({ n, perStatement: 1, conns: 64 }) },
      { id: "insert.stmt64", run: (n) => this.floors.insert({ n, perStatement: 64, conns: BATCH_CONNECTIONS }) },
      { id: "drain.stmt1.c1", run: (n, settings) => this.floors.drain({ n, warmup: settings.drainWarmup, perStatement: 1, conns: 1 }) },
      { id: "drain.stmt1.c64", run: (n, settings) => this.floors.drain({ n, warmup: settings.drainWarmup, perStatement: 1, conns: 64 }) },
      { id: "drain.stmt64", run: (n, settings) => this.floors.drain({ n, warmup: settings.drainWarmup, perStatement: 64, conns: BATCH_CONNECTIONS }) },
      { id: "proto.insert.stmt1.c1", run: (n) => this.floors.insert({ n, perStatement: 1, conns: 1, schema: "protocol" }) },
      {
        id: "proto.insert.stmt64",
        run: (n) => this.floors.insert({ n, perStatement: 64, conns: BATCH_CONNECTIONS, schema: "protocol" }),
      },
      { id: "proto.drain.stmt1.c1", run: (n, settings) => this.floors.drain({ n, warmup: settings.drainWarmup, perStatement: 1, conns: 1, schema: "protocol" }) },
      {
        id: "proto.drain.stmt64",
        run: (n, settings) => this.floors.drain({ n, warmup: settings.drainWarmup, perStatement: 64, conns: BATCH_CONNECTIONS, schema: "protocol" }),
      },
      { id: "proto.call", run: (_n, settings) => this.callFloor({ calls: settings.latencyCalls, warmup: settings.latencyWarmup }) },
    ];
  },

  /** Drops every schema this run created that a failure may have left behind. */
  async finish() {
    await admin(async (client) => {
      const { rows } = await client.query("SELECT nspname FROM pg_namespace WHERE nspname LIKE $1", [`${PREFIX}%`]);
      for (const row of rows) await client.query(`DROP SCHEMA IF EXISTS "${row.nspname}" CASCADE`);
    });
  },
};
