/**
 * Test fixtures: tasks driven to each status through the store's own calls
 * (submit, claim, complete, fail, cancel), and wrapper stores that count,
 * delay or break `purge`.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { MemoryStore } from "@cairnq/conformance";
import type { PurgeInput, Task, TaskStatus, TaskStore } from "@cairnq/protocol";
import { PostgresStore } from "@cairnq/store-postgres";
import { SQLiteStore } from "@cairnq/store-sqlite";
import { connectAdmin, pgDsn, randomSchemaName } from "@cairnq/test-support";
import type { RetentionStore } from "../src/index.ts";

/** A store opened for one test, and how to release it (after the test's sweepers stopped). */
export interface OpenStore {
  store: TaskStore;
  /** Moves the store's clock forward by `ms` (whatever reads it: a JS clock, or the database's). */
  advance(ms: number): Promise<void>;
  /**
   * Where the store can run calls inside one transaction of its own
   * (Postgres: `withTransaction`): runs `work` on such a view and commits.
   * For building large fixtures fast; calls on one view go one at a time.
   */
  inTransaction?<T>(work: (view: TaskStore) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/** How a test's store keeps time. */
export interface ClockOptions {
  /**
   * The clock starts at this instant and stands still, moving only by
   * `advance`, so cutoffs are exact. Omitted: real time, plus whatever
   * `advance` adds.
   */
  frozenAtMs?: number;
}

/** A backend the behavioural tests run on: a fresh, isolated store per call. */
export interface Backend {
  label: string;
  /**
   * A store call lets the event loop run before it answers (timers and immediates can run inside one purge): a
   * network round trip, or SQLite's write queue, which starts each turn on `setImmediate`. @default false
   */
  yieldsInCall?: boolean;
  open(options?: ClockOptions): Promise<OpenStore>;
}

/** The JS clock the in-process stores take, and its `advance`. */
function jsClock(options: ClockOptions = {}): { clock: () => number; advance: (ms: number) => Promise<void> } {
  let offsetMs = 0;
  const frozen = options.frozenAtMs;
  return {
    clock: () => (frozen ?? Date.now()) + offsetMs,
    advance: async (ms) => {
      offsetMs += ms;
    },
  };
}

/** The in-memory store of the conformance kit: fast, one process. */
export const MEMORY: Backend = {
  label: "memory",
  async open(options) {
    const { clock, advance } = jsClock(options);
    const store = new MemoryStore({ clock });
    return { store, advance, close: () => store.close() };
  },
};

/** SQLite on a temp file per test (not `:memory:`), so WAL and locking behave as in production. */
export const SQLITE: Backend = {
  label: "sqlite",
  yieldsInCall: true,
  async open(options) {
    const { clock, advance } = jsClock(options);
    const dir = await mkdtemp(join(tmpdir(), "cairnq-retention-"));
    const store = new SQLiteStore(join(dir, "tasks.db"), { clock });
    return {
      store,
      advance,
      async close() {
        await store.close();
        await rm(dir, { recursive: true, force: true });
      },
    };
  },
};

/**
 * Postgres in a fresh schema per store, dropped at `close()`.
 *
 * The store reads the database clock (`now()`, `clock_timestamp()`), never a
 * JS one. To move it as the other backends' clocks move, the schema shadows
 * both functions: the pool's `search_path` is `"<schema>", pg_catalog`, and
 * naming pg_catalog after the schema puts the schema's `now()` and
 * `clock_timestamp()` first (pg_catalog comes first only when the path leaves
 * it out). Each returns the frozen instant or the real function's time, plus
 * the offset `advance` has added — constants written into the function body
 * (`advance` replaces it), so the planner inlines it like the real call. The
 * store's SQL is untouched: the same purge statement, cutoff arithmetic and
 * SKIP LOCKED as in production, on a clock the test holds.
 */
export const POSTGRES: Backend = {
  label: "postgres",
  yieldsInCall: true,
  async open(options = {}) {
    const dsn = pgDsn();
    const schema = randomSchemaName("cq_retention");
    const frozenAtMs = options.frozenAtMs ?? null;
    let offsetMs = 0;
    const admin = await connectAdmin();
    let pool: pg.Pool | null = null;
    let store: PostgresStore | null = null;
    const close = async (): Promise<void> => {
      try {
        await store?.close();
        await pool?.end();
        await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      } finally {
        await admin.end();
      }
    };
    /** (Re)defines the schema's clock functions; both at once, so no statement sees one moved and not the other. */
    const setClock = async (): Promise<void> => {
      for (const value of [frozenAtMs ?? 0, offsetMs]) {
        if (!Number.isSafeInteger(value)) throw new Error(`the test clock takes integer milliseconds, got ${value}`);
      }
      await admin.query("BEGIN");
      try {
        for (const [name, volatility] of [
          ["now", "STABLE"],
          ["clock_timestamp", "VOLATILE"],
        ] as const) {
          const base = frozenAtMs === null ? `pg_catalog.${name}()` : `timestamptz 'epoch' + ${frozenAtMs}::float8 * interval '1 millisecond'`;
          await admin.query(
            `CREATE OR REPLACE FUNCTION "${schema}".${name}() RETURNS timestamptz LANGUAGE sql ${volatility} ` +
              `AS $$ SELECT ${base} + ${offsetMs}::float8 * interval '1 millisecond' $$`,
          );
        }
        await admin.query("COMMIT");
      } catch (err) {
        await admin.query("ROLLBACK");
        throw err;
      }
    };
    try {
      await admin.query(`CREATE SCHEMA "${schema}"`);
      await setClock();
      // synchronous_commit off: a test database need not wait for each commit's WAL flush (3-4× faster fixtures here).
      pool = new pg.Pool({ connectionString: dsn, options: `-c search_path="${schema}",pg_catalog -c synchronous_commit=off`, max: 8 });
      pool.on("error", () => {});
      // Given a pool, the store only checks that current_schema() is `schema`, as it is here.
      store = new PostgresStore(pool, { schema });
      await store.connect();
    } catch (err) {
      await close();
      throw err;
    }
    const opened = store;
    return {
      store,
      advance: async (ms) => {
        offsetMs += ms;
        await setClock();
      },
      inTransaction: (work) => opened.db.transaction().execute((trx) => work(opened.withTransaction(trx))),
      close,
    };
  },
};

export const BACKENDS: readonly Backend[] = [MEMORY, SQLITE, POSTGRES];

/** Above any priority a test submits otherwise, so the next claim takes exactly this task. */
const JUMP_THE_QUEUE = 1_000_000;

export interface TaskSpec {
  name?: string;
  queue?: string;
  status: TaskStatus;
}

/**
 * Submits one task and drives it to `status` through the store: `running` is
 * claimed, `succeeded` claimed and completed, `failed` claimed and failed
 * without retry, `canceled` canceled while queued.
 */
export async function taskIn(store: TaskStore, spec: TaskSpec): Promise<Task> {
  const queue = spec.queue ?? "default";
  const name = spec.name ?? "job";
  if (spec.status === "queued") return store.submit({ name, queue });
  if (spec.status === "canceled") {
    const task = await store.submit({ name, queue });
    return (await store.cancel(task.id))!;
  }
  const task = await store.submit({ name, queue, priority: JUMP_THE_QUEUE });
  const [claimed] = await store.claim({ queues: [queue], workerId: "test-worker", limit: 1 });
  if (claimed?.id !== task.id) throw new Error(`expected to claim ${task.id}, got ${claimed?.id}`);
  switch (spec.status) {
    case "running":
      return claimed;
    case "succeeded":
      return store.complete({ taskId: task.id, workerId: "test-worker", result: { ok: true } });
    case "failed":
      return store.fail({ taskId: task.id, workerId: "test-worker", error: { type: "Boom", code: "boom", message: "boom", retryable: false, details: {} }, retryable: false });
  }
}

/** Every task id still in the store, by status. */
export async function idsByStatus(store: TaskStore): Promise<Record<TaskStatus, string[]>> {
  const out: Record<TaskStatus, string[]> = { queued: [], running: [], succeeded: [], failed: [], canceled: [] };
  for (const task of await store.list({ limit: 1_000_000 })) out[task.status].push(task.id);
  for (const list of Object.values(out)) list.sort();
  return out;
}

/** Records every purge call (input and rows deleted) and can delay or fail them. */
export class PurgeProbe implements RetentionStore {
  readonly calls: { input: PurgeInput; deleted: number; durationMs: number }[] = [];
  /** Resolves the next purge early when set; tests use it to hold a purge in flight. */
  gate: Promise<void> | null = null;
  /** Throws this from the next purge calls while set. */
  failWith: Error | undefined = undefined;
  /** Called synchronously at the start of each purge. */
  onPurge: ((input: PurgeInput) => void) | null = null;
  inFlight = 0;

  constructor(readonly inner: RetentionStore) {}

  async purge(input?: PurgeInput): Promise<string[]> {
    this.inFlight += 1;
    try {
      this.onPurge?.(input ?? {});
      if (this.gate !== null) await this.gate;
      if (this.failWith !== undefined) throw this.failWith;
      const started = performance.now();
      const ids = await this.inner.purge(input);
      this.calls.push({ input: input ?? {}, deleted: ids.length, durationMs: performance.now() - started });
      return ids;
    } finally {
      this.inFlight -= 1;
    }
  }
}

/** A promise plus its resolver, for holding a purge in flight. */
export function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}
