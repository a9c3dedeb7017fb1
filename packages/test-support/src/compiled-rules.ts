/**
 * The compiled-rules equivalence test, shared by the SQL stores: the compiled
 * SQL decides exactly what the protocol's in-memory evaluator decides. For
 * random rows and parameters every rule is run both ways — `decideRow` /
 * `selectRows` / `applyBranches` / `buildInsert` of `@cairnq/protocol`, and
 * the statement `@cairnq/store-kysely` compiles for the store's dialect, run
 * on a real database — and the resulting rows must be identical. This is
 * what makes a store "behave like the reference": both run the same rule
 * definitions. Each store's test file supplies the database
 * ({@link RulesDatabase}) and calls {@link describeCompiledRules}.
 */
import type { Task } from "@cairnq/protocol";
import type { Params, RowTransition } from "@cairnq/protocol/adapter";
import {
  applyBranches,
  buildInsert,
  decideRow,
  DRAW,
  HEARTBEAT_BATCH,
  holds,
  LIST_ROWS,
  PROBE,
  PURGE,
  QUEUE_DEPTH_ROWS,
  RECOVER,
  ROW_TRANSITIONS,
  selectRows,
  STATS_ROWS,
  SUBMIT,
} from "@cairnq/protocol/adapter";
import type { CompiledStatement, StatementCompiler } from "@cairnq/store-kysely";
import {
  BATCH_ROWS,
  batchInsertTemplate,
  batchRowTransitionTemplate,
  decodeTask,
  deleteTemplate,
  insertTemplate,
  LIST_BY_ID_TEMPLATE,
  LIST_TEMPLATE,
  PROBE_TEMPLATE,
  QUEUE_DEPTH_TEMPLATE,
  rowTransitionTemplate,
  setTransitionTemplate,
  STATS_TEMPLATE,
} from "@cairnq/store-kysely";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";

/** The instant every statement and every evaluator call reads as `now`. */
export const NOW = 1_700_000_000_000;

/** One database holding the protocol's tables, whose statements see {@link NOW} as the time. */
export interface RulesDatabase {
  /** The store's own compiler for this dialect (its syntax and clock), reading {@link NOW}. */
  readonly compiler: StatementCompiler;
  /** Empties the tasks table. */
  reset(): Promise<void>;
  /** Inserts rows exactly as given (JSON columns encoded). */
  insert(rows: readonly Task[]): Promise<void>;
  /** Runs a compiled statement with its parameters bound as the store binds them; the rows it returns (none for a plain write). */
  run(statement: CompiledStatement, params: Params): Promise<Record<string, unknown>[]>;
  /** Every row of the tasks table as the driver returns it. */
  rows(): Promise<Record<string, unknown>[]>;
  close(): Promise<void>;
}

/** What a store's test file passes to {@link describeCompiledRules}. */
export interface RulesBackend {
  /** Shown in the test names ("SQLite", "Postgres"). */
  readonly label: string;
  /** Random trials per rule; a networked database affords fewer. */
  readonly trials: number;
  /** Opens the database once for the whole file. */
  open(): Promise<RulesDatabase>;
}

/** mulberry32: a small deterministic PRNG, so a failure reproduces. */
function prng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Rand = () => number;
const pick = <T>(rand: Rand, values: readonly T[]): T => values[Math.floor(rand() * values.length)] as T;
const subset = <T>(rand: Rand, values: readonly T[]): T[] => {
  const out = values.filter(() => rand() < 0.5);
  return out.length > 0 ? out : [pick(rand, values)];
};

/**
 * A random row, biased towards the states rules care about: many running rows
 * owned by `w1` with leases around `NOW`, so that ownership, expiry and every
 * branch are reached often.
 */
function randomRow(rand: Rand, i: number): Task {
  const id = `task_${String(i).padStart(4, "0")}`;
  const status = pick(rand, ["running", "running", "running", "queued", "queued", "succeeded", "failed", "canceled"] as const);
  const running = status === "running";
  return {
    id,
    name: pick(rand, ["a", "b", "c"]),
    queue: pick(rand, ["q1", "q2", "q3"]),
    status,
    payload: { i },
    result: pick(rand, [null, { r: 1 }]),
    error: pick(rand, [null, { e: 1 }]),
    metadata: {},
    progress: pick(rand, [null, 0.25]),
    message: pick(rand, [null, "m"]),
    attempt: pick(rand, [0, 1, 2, 3]),
    max_attempts: pick(rand, [1, 2, 3]),
    priority: pick(rand, [0, 1, 2]),
    worker_id: running ? pick(rand, ["w1", "w1", "w2"]) : pick(rand, [null, "w1"]),
    lease_until_ms: running ? pick(rand, [NOW - 10, NOW, NOW + 10, NOW + 10]) : pick(rand, [null, null, null, NOW + 10]),
    run_at_ms: pick(rand, [NOW - 5, NOW, NOW + 5]),
    cancel_requested_at_ms: pick(rand, [null, null, NOW - 20]),
    // Rows of one trial point at each other (or at a purged parent), so PURGE's parent condition is reached.
    parent_id: pick(rand, [null, null, "task_0000", "task_0001", "task_0002", "task_missing"]),
    root_id: id,
    correlation_id: pick(rand, [null, "c"]),
    created_at_ms: NOW - 100,
    updated_at_ms: NOW - 100,
    completed_at_ms: pick(rand, [null, NOW - 50, NOW - 1]),
  };
}

/** Parameters every rule may read, JSON as the store binds it (encoded text). */
function randomParams(rand: Rand, ids: readonly string[]): Params {
  return {
    taskId: pick(rand, [...ids, "task_missing"]),
    taskIds: [...subset(rand, ids), ...(rand() < 0.3 ? ["task_missing"] : [])],
    workerId: pick(rand, ["w1", "w1", "w2"]),
    attempt: pick(rand, [null, null, null, 0, 1, 2, 3]),
    leaseMs: pick(rand, [1, 100]),
    progress: pick(rand, [null, 0.5]),
    message: pick(rand, [null, "x"]),
    result: pick(rand, [null, '{"ok":true}']),
    error: pick(rand, ['{"code":"boom"}', "{}"]),
    retryable: rand() < 0.5,
    delayMs: pick(rand, [0, 7]),
    resetAttempt: rand() < 0.5,
    queues: subset(rand, ["q1", "q2", "q3"]),
    names: pick(rand, [null, [], ["a"], ["a", "b"], ["c", "b", "a"]]),
    limit: pick(rand, [1, 2, 4, 100]),
    olderThanMs: pick(rand, [0, 1, 10, 50, 100]),
    queue: pick(rand, [null, "q1"]),
    status: pick(rand, [null, "failed", "succeeded", "canceled"]),
    name: pick(rand, [null, "a"]),
  };
}

/** Submit parameters, JSON as the store binds it (encoded text). */
function randomSubmit(rand: Rand, taskId: string): Params {
  return {
    taskId,
    name: pick(rand, ["a", "b"]),
    queue: pick(rand, ["default", "q"]),
    payload: pick(rand, ["{}", '{"a":[1,null,"é"]}', "[]", "null", '"text"']),
    metadata: pick(rand, ["{}", '{"m":1}']),
    maxAttempts: pick(rand, [1, 3, 10]),
    priority: pick(rand, [-3, 0, 7]),
    runAtDelayMs: pick(rand, [0, 5]),
    parentId: pick(rand, [null, "task_p"]),
    rootId: pick(rand, [null, "task_r"]),
    correlationId: pick(rand, [null, "c"]),
  };
}

/** JSON parameters decoded, as the evaluator reads them (the database stores them as JSON). */
function decoded(params: Params): Params {
  const out: Record<string, unknown> = { ...params };
  for (const name of ["payload", "metadata", "result", "error"]) {
    if (typeof out[name] === "string") out[name] = JSON.parse(out[name]);
  }
  return out;
}


const byId = (a: Task, b: Task): number => (a.id < b.id ? -1 : 1);

/**
 * The equivalence test, as `describe` blocks: every row transition on one
 * row, the set transitions (recover, draw, heartbeat_batch) and purge on a
 * selection, the claim probe, submit, and the write combiner's multi-row
 * forms. Call it at the top level of a test file.
 */
export function describeCompiledRules(backend: RulesBackend): void {
  const { trials } = backend;
  let db: RulesDatabase;
  const statement = (template: Parameters<StatementCompiler["statement"]>[0], params: Params): CompiledStatement => db.compiler.statement(template, params);
  const table = async (): Promise<Task[]> => (await db.rows()).map(decodeTask).sort(byId);
  const randomRows = (rand: Rand, min: number, spread: number): Task[] =>
    Array.from({ length: min + Math.floor(rand() * spread) }, (_, i) => randomRow(rand, i));

  beforeAll(async () => {
    db = await backend.open();
  });
  afterAll(async () => {
    await db?.close();
  });
  beforeEach(async () => {
    await db.reset();
  });

  describe(`${backend.label}: compiled rules decide as the protocol evaluator does`, () => {
    it.each(Object.entries(ROW_TRANSITIONS))("%s (one row, %#)", async (_name, rule: RowTransition) => {
      const rand = prng(rule.op.length * 7919);
      for (let trial = 0; trial < trials; trial++) {
        await db.reset();
        const row = randomRow(rand, trial);
        await db.insert([row]);
        const params = {
          ...randomParams(rand, [row.id]),
          taskId: pick(rand, [row.id, row.id, row.id, "task_missing"]),
          attempt: pick(rand, [null, null, row.attempt, row.attempt + 1]),
        };
        const expected = decideRow(rule, params.taskId === row.id ? row : null, decoded(params), NOW);
        const returned = (await db.run(statement(rowTransitionTemplate(rule), params), params)).map(decodeTask);
        const context = { trial, row, params };
        if (expected.kind === "applied") {
          expect({ ...context, returned }).toEqual({ ...context, returned: [expected.row] });
          expect(await table()).toEqual([expected.row]);
        } else {
          expect({ ...context, returned }).toEqual({ ...context, returned: [] });
          expect(await table()).toEqual([row]);
        }
      }
    });

    it.each([
      ["recover", RECOVER, ["id"]],
      ["draw", DRAW, "task"],
      ["heartbeat_batch", HEARTBEAT_BATCH, ["id", "cancel_requested_at_ms"]],
    ] as const)("%s (a selection of rows)", async (_name, rule, returning) => {
      const rand = prng(rule.op.length * 104_729);
      for (let trial = 0; trial < trials; trial++) {
        await db.reset();
        const rows = randomRows(rand, 1, 8);
        await db.insert(rows);
        const params = randomParams(rand, rows.map((r) => r.id));
        const picked = selectRows(rule.selection, rows, decoded(params), NOW);
        const after = new Map(rows.map((r) => [r.id, r]));
        for (const row of picked) after.set(row.id, applyBranches(rule.branches, row, decoded(params), NOW).row);
        const returned = await db.run(statement(setTransitionTemplate(rule, returning), params), params);
        const context = { trial, params };
        expect({ ...context, ids: returned.map((r) => String(r.id)).sort() }).toEqual({ ...context, ids: picked.map((r) => r.id).sort() });
        if (returning === "task") {
          expect(returned.map(decodeTask).sort(byId)).toEqual(picked.map((r) => after.get(r.id)).sort((a, b) => byId(a!, b!)));
        }
        expect({ ...context, table: await table() }).toEqual({ ...context, table: [...after.values()].sort(byId) });
      }
    });

    it("purge (delete a selection)", async () => {
      const rand = prng(31);
      for (let trial = 0; trial < trials; trial++) {
        await db.reset();
        // Distinct completion times: purge's LIMIT keeps the oldest, and a tie would let either row go.
        const rows = randomRows(rand, 1, 8).map((r, i) => (r.completed_at_ms === null ? r : { ...r, completed_at_ms: r.completed_at_ms - i }));
        await db.insert(rows);
        const params = randomParams(rand, rows.map((r) => r.id));
        const doomed = selectRows(PURGE.selection, rows, params, NOW).map((r) => r.id);
        const returned = (await db.run(statement(deleteTemplate(PURGE), params), params)).map((r) => String(r.id));
        expect({ trial, params, ids: returned.sort() }).toEqual({ trial, params, ids: [...doomed].sort() });
        expect(await table()).toEqual(rows.filter((r) => !doomed.includes(r.id)).sort(byId));
      }
    });

    it("the claim probe", async () => {
      const rand = prng(97);
      for (let trial = 0; trial < trials; trial++) {
        await db.reset();
        const rows = randomRows(rand, 0, 5);
        await db.insert(rows);
        const params = randomParams(rand, rows.map((r) => r.id));
        const scope = (row: Task) => ({ row: row as unknown as Record<string, unknown>, params, nowMs: NOW });
        const expected = rows.some((row) => holds(PROBE.claimable, scope(row)) || holds(PROBE.expired, scope(row)));
        const [result] = await db.run(statement(PROBE_TEMPLATE, params), params);
        // SQLite answers 1 or 0, Postgres a boolean.
        const found = result?.found === 1 || result?.found === true;
        expect({ trial, params, found }).toEqual({ trial, params, found: expected });
      }
    });

    it("submit (insert)", async () => {
      const rand = prng(5);
      for (let trial = 0; trial < trials; trial++) {
        const params = randomSubmit(rand, `task_${trial}`);
        const expected = buildInsert(SUBMIT, decoded(params), NOW);
        const returned = (await db.run(statement(insertTemplate(SUBMIT), params), params)).map(decodeTask);
        expect(returned).toEqual([expected]);
      }
    });
  });

  describe(`${backend.label}: the reads pick the rows the protocol's read filters pick`, () => {
    /** Rows with distinct creation times too, so the two list orders differ. */
    const readRows = (rand: Rand): Task[] =>
      randomRows(rand, 0, 9).map((row) => ({ ...row, created_at_ms: pick(rand, [NOW - 300, NOW - 200, NOW - 100]), root_id: pick(rand, [row.id, "task_r"]) }));
    const listParams = (rand: Rand, ids: readonly string[]): Params => ({
      status: pick(rand, [null, null, "queued", "running", "failed"]),
      queue: pick(rand, [null, null, "q1", "q2"]),
      name: pick(rand, [null, null, "a"]),
      rootId: pick(rand, [null, null, "task_r"]),
      correlationId: pick(rand, [null, null, "c"]),
      beforeId: pick(rand, [null, null, ...ids]),
      limit: pick(rand, [1, 2, 100]),
      offset: pick(rand, [0, 0, 1]),
    });
    const newestFirst = (a: Task, b: Task): number => b.created_at_ms - a.created_at_ms || (a.id < b.id ? 1 : -1);

    it.each([
      ["id", LIST_BY_ID_TEMPLATE],
      ["created", LIST_TEMPLATE],
    ] as const)("list, %s order", async (order, template) => {
      const rand = prng(order.length * 7_877);
      for (let trial = 0; trial < trials / 2; trial++) {
        await db.reset();
        const rows = readRows(rand);
        await db.insert(rows);
        // beforeId pages the id order only (normalizeList rejects it otherwise).
        const params: Params = { ...listParams(rand, rows.map((r) => r.id)), ...(order === "created" ? { beforeId: null } : {}) };
        const offset = params.offset as number;
        const expected = rows
          .filter((row) => holds(LIST_ROWS, { row: row as never, params, nowMs: NOW }))
          .sort(order === "id" ? (a, b) => -byId(a, b) : newestFirst)
          .slice(offset, offset + (params.limit as number))
          .map((r) => r.id);
        const returned = (await db.run(statement(template, params), params)).map((r) => String(r.id));
        expect({ trial, params, returned }).toEqual({ trial, params, returned: expected });
      }
    });

    it("stats", async () => {
      const rand = prng(61);
      for (let trial = 0; trial < trials / 2; trial++) {
        await db.reset();
        const rows = readRows(rand);
        await db.insert(rows);
        const params = { queue: pick(rand, [null, "q1", "q2"]) };
        const expected: Record<string, number> = {};
        for (const row of rows) {
          if (!holds(STATS_ROWS, { row: row as never, params, nowMs: NOW })) continue;
          const group = `${row.queue}/${row.status}`;
          expected[group] = (expected[group] ?? 0) + 1;
        }
        const returned: Record<string, number> = {};
        for (const r of await db.run(statement(STATS_TEMPLATE, params), params)) returned[`${String(r.queue)}/${String(r.status)}`] = Number(r.n);
        expect({ trial, params, returned }).toEqual({ trial, params, returned: expected });
      }
    });

    it("queueDepth", async () => {
      const rand = prng(67);
      for (let trial = 0; trial < trials / 2; trial++) {
        await db.reset();
        const rows = readRows(rand);
        await db.insert(rows);
        const params = { queue: pick(rand, ["q1", "q2"]), maxDepth: pick(rand, [1, 2, 100]) };
        const queued = rows.filter((row) => holds(QUEUE_DEPTH_ROWS, { row: row as never, params, nowMs: NOW })).length;
        const [result] = await db.run(statement(QUEUE_DEPTH_TEMPLATE, params), params);
        expect({ trial, params, n: Number(result?.n) }).toEqual({ trial, params, n: Math.min(queued, params.maxDepth) });
      }
    });
  });

  describe(`${backend.label}: the multi-row forms (the write combiner's statements) decide row by row as the evaluator does`, () => {
    it.each(Object.entries(ROW_TRANSITIONS))("%s over several rows in one statement (%#)", async (_name, rule: RowTransition) => {
      const rand = prng(rule.op.length * 15_485_863);
      for (let trial = 0; trial < trials / 2; trial++) {
        await db.reset();
        const rows = randomRows(rand, 1, 8);
        await db.insert(rows);
        const byRowId = new Map(rows.map((r) => [r.id, r]));
        // Distinct ids (the combiner never puts one task twice in a statement), each with its own parameters.
        const ids = [...subset(rand, rows.map((r) => r.id)), ...(rand() < 0.3 ? ["task_missing"] : [])];
        const batch = ids.map((taskId) => {
          const attempt = byRowId.get(taskId)?.attempt ?? 0;
          return { ...randomParams(rand, ids), taskId, attempt: pick(rand, [null, null, attempt, attempt + 1]) };
        });
        const after = new Map(rows.map((r) => [r.id, r]));
        const applied: Task[] = [];
        for (const params of batch) {
          const decision = decideRow(rule, byRowId.get(params.taskId) ?? null, decoded(params), NOW);
          if (decision.kind === "applied") {
            applied.push(decision.row);
            after.set(decision.row.id, decision.row);
          }
        }
        const returned = (await db.run(statement(batchRowTransitionTemplate(rule), {}), { [BATCH_ROWS]: batch })).map(decodeTask);
        const context = { trial, rows, batch };
        expect({ ...context, returned: returned.sort(byId) }).toEqual({ ...context, returned: applied.sort(byId) });
        expect({ ...context, table: await table() }).toEqual({ ...context, table: [...after.values()].sort(byId) });
      }
    });

    it("submit: several inserts in one statement", async () => {
      const rand = prng(11);
      for (let trial = 0; trial < trials / 4; trial++) {
        await db.reset();
        const batch = Array.from({ length: 1 + Math.floor(rand() * 6) }, (_, i) => randomSubmit(rand, `task_${trial}_${i}`));
        const expected = batch.map((params) => buildInsert(SUBMIT, decoded(params), NOW));
        const returned = (await db.run(statement(batchInsertTemplate(SUBMIT), {}), { [BATCH_ROWS]: batch })).map(decodeTask);
        expect({ trial, returned: returned.sort(byId) }).toEqual({ trial, returned: expected.sort(byId) });
        expect(await table()).toEqual(expected.sort(byId));
      }
    });
  });
}
