// The Postgres backend of the bench: a fresh schema per measurement (dropped
// afterwards), the backlog fill used only to set up the claim measurement,
// and the raw pg floors.
//
// The database: CAIRNQ_BENCH_PG_DSN, default postgres://postgres@127.0.0.1:5432/test.
import { createRequire } from "node:module";
import { floorIds } from "./sqlite-backend.mjs";
import { hasPostgres } from "./targets.mjs";

const require = createRequire(import.meta.url);
const pg = require("pg");

const DSN = process.env.CAIRNQ_BENCH_PG_DSN ?? "postgres://postgres@127.0.0.1:5432/test";
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

/** Runs `fn(client, index)` on every client at once; resolves with the elapsed ms. */
async function timed(conns, fn) {
  const started = performance.now();
  await Promise.all(conns.map((client, index) => fn(client, index)));
  return performance.now() - started;
}

/** A fresh floor schema with the floor table and `conns` connections on it; `done()` closes and drops everything. */
async function floorSchema(label, conns) {
  counter += 1;
  const schema = `${PREFIX}${counter}_${label}`;
  const first = await connect(schema, { create: true });
  for (const ddl of FLOOR_DDL) await first.query(ddl);
  const rest = await clients(schema, conns - 1);
  const all = [first, ...rest];
  return {
    schema,
    conns: all,
    async done() {
      await Promise.all(all.map((client) => client.end()));
      await admin((client) => client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`));
    },
  };
}

/** `n` rows in insertion order (see floorIds), written in chunks before the clock starts. */
async function prefill(client, n) {
  const ids = floorIds(n);
  for (let i = 0; i < n; i += 5_000) {
    const chunk = ids.slice(i, i + 5_000);
    await client.query(INSERT_MANY, [chunk, chunk.map((_, j) => JSON.stringify({ i: i + j })), Date.now()]);
  }
  await client.query("ANALYZE tasks");
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

  /** Raw pg floors; each on its own fresh schema, connections opened before the clock starts; tasks/s. */
  floors: {
    /** INSERT: `perStatement` = 1 (single-row INSERTs) or 64 (one multi-row INSERT), over `conns` connections. */
    async insert({ n, perStatement, conns }) {
      const s = await floorSchema(`insert_${perStatement}_c${conns}`, conns);
      try {
        const ids = floorIds(n);
        let next = 0;
        const ms = await timed(s.conns, async (client) => {
          while (next < n) {
            const from = next;
            next = Math.min(n, next + perStatement);
            if (perStatement === 1) {
              await client.query(INSERT_ONE, [ids[from], JSON.stringify({ i: from }), Date.now()]);
            } else {
              const chunk = ids.slice(from, next);
              await client.query(INSERT_MANY, [chunk, chunk.map((_, j) => JSON.stringify({ i: from + j })), Date.now()]);
            }
          }
        });
        return n / (ms / 1000);
      } finally {
        await s.done();
      }
    },

    /**
     * Drain of `n` queued rows over `conns` connections, each looping: claim
     * (UPDATE … RETURNING of up to `perStatement` rows, SKIP LOCKED) then
     * complete (one UPDATE per task, or one UPDATE … = ANY of the batch).
     */
    async drain({ n, perStatement, conns }) {
      const s = await floorSchema(`drain_${perStatement}_c${conns}`, conns);
      try {
        await prefill(s.conns[0], n);
        let done = 0;
        const ms = await timed(s.conns, async (client, index) => {
          const workerId = `worker_floor_${index}`;
          for (;;) {
            const { rows } = await client.query(CLAIM, [workerId, Date.now(), perStatement]);
            if (rows.length === 0) return;
            if (perStatement === 1) {
              await client.query(COMPLETE_ONE, [Date.now(), rows[0].id, workerId]);
            } else {
              await client.query(COMPLETE_MANY, [Date.now(), rows.map((row) => row.id), workerId]);
            }
            done += rows.length;
          }
        });
        if (done !== n) throw new Error(`the Postgres drain floor drained ${done} of ${n} rows`);
        return n / (ms / 1000);
      } finally {
        await s.done();
      }
    },
  },

  /** The floors in table order, each matched to our figure by id in report.mjs. */
  get floorPlan() {
    return [
      { id: "insert.stmt1.c1", run: (n) => this.floors.insert({ n, perStatement: 1, conns: 1 }) },
      { id: "insert.stmt1.c64", run: (n) => this.floors.insert({ n, perStatement: 1, conns: 64 }) },
      { id: "insert.stmt64", run: (n) => this.floors.insert({ n, perStatement: 64, conns: BATCH_CONNECTIONS }) },
      { id: "drain.stmt1.c1", run: (n) => this.floors.drain({ n, perStatement: 1, conns: 1 }) },
      { id: "drain.stmt1.c64", run: (n) => this.floors.drain({ n, perStatement: 1, conns: 64 }) },
      { id: "drain.stmt64", run: (n) => this.floors.drain({ n, perStatement: 64, conns: BATCH_CONNECTIONS }) },
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
