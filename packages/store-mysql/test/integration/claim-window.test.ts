/**
 * The claim draw over several queues on MariaDB (`src/mysql-claim-window.ts`), checked with lock probes:
 * the draw the core compiles (`DRAW`), planned as the store plans it, runs in an open transaction on one
 * connection while a second connection counts the due rows it can still lock (`FOR UPDATE SKIP LOCKED`)
 * or holds rows the draw must pass over. Needs `CAIRNQ_TEST_MYSQL_DSN`; without it the tests fail.
 */
import { DRAW } from "@cairnq/protocol/adapter";
import { setTransitionTemplate, StatementCompiler } from "@cairnq/store-kysely";
import { MySQLAdmin, mysqlDsn } from "@cairnq/test-support";
import { createConnection } from "mysql2/promise";
import type { Connection } from "mysql2/promise";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { MAX_WINDOW, windowOf } from "../../src/mysql-claim-window.ts";
import { MYSQL_CLOCK } from "../../src/mysql-store-dialect.ts";
import { MySQLStore } from "../../src/mysql-store.ts";
import type { MySQLStatementPlan } from "../../src/mysql-statement-plan.ts";
import { choosePlan, planStatement, queriesOf } from "../../src/mysql-statement-plan.ts";
import { MySQLSyntax } from "../../src/mysql-syntax.ts";

const admin = new MySQLAdmin(mysqlDsn());
let dsn: string;
let store: MySQLStore;
let claimer: Connection;
let other: Connection;

const compiler = new StatementCompiler(new MySQLSyntax(), MYSQL_CLOCK, true);
const TEMPLATE = setTransitionTemplate(DRAW, "task");
const DUE = "status = 'queued' AND run_at_ms <= (TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000)";

async function session(): Promise<Connection> {
  const conn = await createConnection({ uri: dsn, charset: "UTF8MB4_BIN" });
  await conn.query("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED");
  return conn;
}

beforeAll(async () => {
  dsn = await admin.createDatabase("claim_window");
  store = new MySQLStore(dsn, { max: 2 });
  await store.connect();
  claimer = await session();
  other = await session();
});
afterAll(async () => {
  await claimer.end();
  await other.end();
  await store.close();
  await admin.dropDatabase("claim_window");
  await admin.close();
});
beforeEach(async () => {
  await claimer.query("DELETE FROM cairnq_tasks");
});

/** Submits `count` tasks alternating between q0 and q1, three priorities; their ids in claim order (priority desc, due time, id). */
async function submitted(count: number): Promise<string[]> {
  const tasks = [];
  for (let i = 0; i < count; i++) tasks.push(await store.submit({ name: "job", queue: i % 2 === 0 ? "q0" : "q1", priority: i % 3, payload: null }));
  tasks.sort((a, b) => b.priority - a.priority || a.run_at_ms - b.run_at_ms || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return tasks.map((task) => task.id);
}

/** The draw of `limit` over `queues` as `planned` (the store's choice by default), on the claimer's open transaction: the ids it took, in order. */
async function draw(queues: string[], limit: number, planned?: (sql: string, parameters: readonly unknown[]) => MySQLStatementPlan): Promise<string[]> {
  const params = { queues, names: null, limit, workerId: "w1", leaseMs: 60_000 };
  const query = compiler.statement(TEMPLATE, params).query(params);
  const plan = (planned ?? ((sql, parameters) => choosePlan(planStatement(sql), parameters)))(query.sql, query.parameters);
  let rows: unknown = [];
  for (const step of queriesOf(plan, query.parameters)) [rows] = await claimer.query(step.sql, [...step.parameters]);
  return (rows as { id: Buffer }[]).map((row) => row.id.toString("utf8"));
}

/** How many due rows `conn` can lock now (in a transaction of its own, rolled back). */
async function freeFor(conn: Connection): Promise<number> {
  await conn.query("START TRANSACTION");
  const [rows] = await conn.query(`SELECT id FROM cairnq_tasks WHERE ${DUE} FOR UPDATE SKIP LOCKED`);
  await conn.query("ROLLBACK");
  return (rows as unknown[]).length;
}

/** How many due rows the other session can lock now. */
function free(): Promise<number> {
  return freeFor(other);
}

describe("a claim draw over two queues", () => {
  it("locks only the rows it takes, in claim order; the sorting pick it replaces locked every due row", async () => {
    const ids = await submitted(20);
    await claimer.query("START TRANSACTION");
    expect(await draw(["q0", "q1"], 3)).toEqual(ids.slice(0, 3));
    expect(await free()).toBe(17);
    await claimer.query("ROLLBACK");
    // The same draw as one sorting pick (the plan for one queue, what every claim ran before): every due row stays locked.
    await claimer.query("START TRANSACTION");
    expect(await draw(["q0", "q1"], 3, (sql) => planStatement(sql))).toEqual(ids.slice(0, 3));
    expect(await free()).toBe(0);
    await claimer.query("ROLLBACK");
    // Over one queue the index gives the order: that pick locks only what it takes.
    await claimer.query("START TRANSACTION");
    expect(await draw(["q0"], 3)).toHaveLength(3);
    expect(await free()).toBe(17);
    await claimer.query("ROLLBACK");
  });

  it("passes over candidates another transaction holds, and takes from past its window when they hold all of it, still in claim order", async () => {
    const ids = await submitted(40);
    const window = windowOf(3);
    expect(window).toBeLessThan(37);
    // The other session holds every candidate but the last, and the first row past the window.
    const held = [...ids.slice(0, window - 1), ids[window] as string];
    await other.query("START TRANSACTION");
    // One by one, by primary key: a read of them all at once may scan an index and lock every row it reads.
    for (const id of held) await other.query("SELECT id FROM cairnq_tasks WHERE id = ? FOR UPDATE", [id]);
    expect(await freeFor(claimer)).toBe(ids.length - held.length);
    await claimer.query("START TRANSACTION");
    // One from the window, two more from past it: the sorting fallback (with the held row skipped).
    expect(await draw(["q0", "q1"], 3)).toEqual([ids[window - 1], ids[window + 1], ids[window + 2]]);
    await claimer.query("ROLLBACK");
    await other.query("ROLLBACK");
  });

  it("takes a limit above the largest window through the fallback, still in claim order", async () => {
    const count = MAX_WINDOW + 100;
    const tasks = Array.from({ length: count }, (_, i) => ({ id: `t${String(i).padStart(6, "0")}`, queue: i % 2 === 0 ? "q0" : "q1", priority: i % 3 }));
    const rows = tasks.map((task) => [task.id, "job", task.queue, "queued", "null", 0, 0, 0, task.priority]);
    await claimer.query("INSERT INTO cairnq_tasks (id, name, queue, status, payload, run_at_ms, created_at_ms, updated_at_ms, priority) VALUES ?", [rows]);
    // Claim order: priority first, then (every run_at_ms 0) id.
    const ids = tasks.sort((a, b) => b.priority - a.priority || (a.id < b.id ? -1 : 1)).map((task) => task.id);
    await claimer.query("START TRANSACTION");
    expect(await draw(["q0", "q1"], MAX_WINDOW + 50)).toEqual(ids.slice(0, MAX_WINDOW + 50));
    await claimer.query("ROLLBACK");
  });

  it("takes nothing more than its limit when the window gives all of it, and nothing at all when nothing is due", async () => {
    await claimer.query("START TRANSACTION");
    expect(await draw(["q0", "q1"], 3)).toEqual([]);
    await claimer.query("ROLLBACK");
    const ids = await submitted(5);
    await claimer.query("START TRANSACTION");
    expect(await draw(["q0", "q1"], 10)).toEqual(ids);
    await claimer.query("COMMIT");
    const [rows] = await claimer.query("SELECT status, worker_id, attempt FROM cairnq_tasks");
    expect((rows as { status: Buffer; worker_id: Buffer; attempt: number }[]).map((r) => [r.status.toString(), r.worker_id.toString(), r.attempt])).toEqual(
      Array.from({ length: 5 }, () => ["running", "w1", 1]),
    );
  });
});

/** Every object under `node` (a MariaDB `ANALYZE FORMAT=JSON` document) that describes a read of `table`. */
function tableReads(node: unknown, table: string): Record<string, unknown>[] {
  if (node === null || typeof node !== "object") return [];
  const own = (node as Record<string, unknown>)["table_name"] === table ? [node as Record<string, unknown>] : [];
  return [...own, ...Object.values(node).flatMap((child) => tableReads(child, table))];
}

describe("the candidate read of a claim draw over several queues", () => {
  it("reads at most its window from each queue, walking the claim index, not every due row of the queues", async () => {
    const count = 5000;
    const tasks = Array.from({ length: count }, (_, i) => ({ id: `t${String(i).padStart(6, "0")}`, queue: `q${i % 5}`, priority: i % 3 }));
    const rows = tasks.map((task) => [task.id, "job", task.queue, "queued", "null", 0, 0, 0, task.priority]);
    await claimer.query("INSERT INTO cairnq_tasks (id, name, queue, status, payload, run_at_ms, created_at_ms, updated_at_ms, priority) VALUES ?", [rows]);
    await claimer.query("ANALYZE TABLE cairnq_tasks");
    const queues = ["q0", "q1", "q2", "q3"];
    const limit = 4;
    const params = { queues, names: null, limit, workerId: "w1", leaseMs: 60_000 };
    const query = compiler.statement(TEMPLATE, params).query(params);
    const read = queriesOf(choosePlan(planStatement(query.sql), query.parameters), query.parameters)[1];
    expect(read?.sql.startsWith("SELECT JSON_ARRAYAGG(")).toBe(true);
    const [analyzed] = await claimer.query(`ANALYZE FORMAT=JSON ${read?.sql ?? ""}`, [...(read?.parameters ?? [])]);
    const plan: unknown = JSON.parse(String(Object.values((analyzed as Record<string, unknown>[])[0] ?? {})[0]));
    const reads = tableReads(plan, "cairnq_tasks");
    // One index walk a queue, stopped at the window (4 × 28 = 112), where one read of the four queues sorted all 4,000 due rows.
    const rowsRead = reads.reduce((sum, r) => sum + Number(r["r_rows"]) * Number(r["r_loops"]), 0);
    expect(rowsRead).toBeLessThanOrEqual(windowOf(limit) * queues.length);
    expect(reads.map((r) => [r["access_type"], r["key"]])).toEqual(queues.map(() => ["ref", "cairnq_tasks_claim_idx"]));
    // And the draw takes the first rows of the claim order over the four queues.
    const ids = tasks.filter((t) => t.queue !== "q4").sort((a, b) => b.priority - a.priority || (a.id < b.id ? -1 : 1)).map((t) => t.id);
    await claimer.query("START TRANSACTION");
    expect(await draw(queues, limit)).toEqual(ids.slice(0, limit));
    await claimer.query("ROLLBACK");
  });
});
