/**
 * Round trips of a group claim on MariaDB, counted at the driver (every
 * `query` a connection of the store's own pool sends): with the pool's
 * multiple statements, the claim cycle's head is one query and the group
 * draw's writes after its draw, with the commit, one more
 * (`MySQLExecutor.batchLast`), where each statement was a query of its own.
 * Needs `CAIRNQ_TEST_MYSQL_DSN`; without it the tests fail.
 */
import { createRequire } from "node:module";
import { MySQLStore } from "@cairnq/store-mysql";
import { MySQLAdmin, mysqlDsn } from "@cairnq/test-support";
import { createConnection } from "mysql2/promise";
import { afterAll, beforeAll, expect, it } from "vitest";

const require = createRequire(import.meta.url);
const mysql2 = require("mysql2") as { Connection: { prototype: { query: (...args: unknown[]) => unknown } } };

const admin = new MySQLAdmin(mysqlDsn());
let dsn = "";
beforeAll(async () => {
  dsn = await admin.createDatabase("round_trips");
});
afterAll(async () => {
  await admin.dropDatabase("round_trips");
  await admin.close();
});

/** The texts of the queries the driver sends while `fn` runs. */
async function queriesDuring(fn: () => Promise<unknown>): Promise<string[]> {
  return (await queriesWithValuesDuring(fn)).map((q) => q.sql);
}

/** The queries (text and values) the driver sends while `fn` runs. */
async function queriesWithValuesDuring(fn: () => Promise<unknown>): Promise<{ sql: string; values: unknown }[]> {
  const sent: { sql: string; values: unknown }[] = [];
  const proto = mysql2.Connection.prototype;
  const original = proto.query;
  proto.query = function (this: unknown, ...args: unknown[]) {
    const sql = args[0];
    sent.push({ sql: typeof sql === "string" ? sql : String((sql as { sql?: unknown }).sql), values: typeof args[1] === "function" ? undefined : args[1] });
    return original.apply(this, args);
  };
  try {
    await fn();
  } finally {
    proto.query = original;
  }
  return sent;
}

it("a group claim is the probe, the head, and the draw's writes with the commit: three queries (the store's first of a name reads what it may prune: four)", async () => {
  const store = new MySQLStore(dsn);
  try {
    await store.connect();
    for (let i = 0; i < 20; i++) await store.submit({ name: "job", payload: { i }, group: `g${i % 4}` });
    const input = { queues: ["default"], workerId: "w1", leaseMs: 30_000, names: ["job"], limit: 8, flowControl: { job: { groupConcurrency: 2 } } };
    // The store's first group claim of a name also reads the idle group rows it may prune (none here, so no delete):
    // one query more, once a minute per name (group-prune.ts). The claims after it are the ordinary ones.
    let warm: Awaited<ReturnType<MySQLStore["claim"]>> = [];
    const pruning = await queriesDuring(async () => {
      warm = await store.claim(input);
    });
    expect(warm).toHaveLength(8);
    expect(pruning).toHaveLength(4);
    expect(pruning[2]).toMatch(/^SELECT g\.group_key AS group_key FROM cairnq_ext_groups g WHERE/);
    for (const task of warm) await store.complete({ taskId: task.id, workerId: "w1", attempt: task.attempt, result: null });
    let claimed = 0;
    const sent = await queriesDuring(async () => {
      claimed = (await store.claim(input)).length;
    });
    expect(claimed).toBe(8);
    expect(sent).toHaveLength(3);
    expect(sent[2]).toMatch(/^SET @cq_ids = _utf8mb4'' COLLATE utf8mb4_bin;\nUPDATE cairnq_tasks SET status = 'running'[\s\S]*;\nUPDATE cairnq_ext_task_groups [\s\S]*;\nCOMMIT$/);
  } finally {
    await store.close();
  }
});

it("a done wait on a finished task resolves with the row its one check read: the waiter reads nothing after it", async () => {
  const caller = new MySQLStore(dsn);
  const worker = new MySQLStore(dsn);
  try {
    const task = await caller.submit({ name: "done-wait", payload: { n: 1 } });
    await worker.connect();
    const [claimed] = await worker.claim({ queues: ["default"], workerId: "w1", leaseMs: 30_000, names: ["done-wait"], limit: 1 });
    expect(claimed?.id).toBe(task.id);
    await worker.complete({ taskId: task.id, workerId: "w1", attempt: 1, result: { ok: true } });
    let woke: unknown;
    const sent = await queriesDuring(async () => {
      woke = await caller.taskDoneWake(task.id, 5_000);
    });
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatch(/^SELECT \* FROM cairnq_tasks WHERE id IN \(\?\) AND status IN /);
    expect(woke).toEqual(await caller.get(task.id));
    expect(woke).toMatchObject({ id: task.id, status: "succeeded", result: { ok: true } });
  } finally {
    await caller.close();
    await worker.close();
  }
});

it("a settlement waiting behind the flush in flight rides with the next claim: its statement and the draw share one query and one COMMIT", async () => {
  const store = new MySQLStore(dsn);
  try {
    await store.connect();
    for (let i = 0; i < 3; i++) await store.submit({ name: "ride", payload: { i } });
    const [a, b] = await store.claim({ queues: ["default"], workerId: "w1", leaseMs: 30_000, names: ["ride"], limit: 2 });
    if (a === undefined || b === undefined) throw new Error("expected two claimed tasks");
    // Warm connections for the flush and the claim, so the claim does not wait for a handshake.
    await Promise.all([store.get(a.id), store.get(b.id)]);
    let claimed: { id: string }[] = [];
    let refs: unknown[] = [];
    const sent = await queriesDuring(async () => {
      const first = store.completeRef({ taskId: a.id, workerId: "w1", attempt: a.attempt, result: { n: 1 } });
      await new Promise((resolve) => setImmediate(resolve)); // its flush (at the end of the turn) is in flight
      const second = store.completeRef({ taskId: b.id, workerId: "w1", attempt: b.attempt, result: { n: 2 } });
      const claim = store.claim({ queues: ["default"], workerId: "w1", leaseMs: 30_000, names: ["ride"], limit: 1, probe: false });
      [refs, claimed] = await Promise.all([Promise.all([first, second]), claim]);
    });
    expect(refs).toEqual([
      { id: a.id, status: "succeeded" },
      { id: b.id, status: "succeeded" },
    ]);
    expect(claimed).toHaveLength(1);
    expect(sent).toHaveLength(2);
    // The lone complete in flight: its update records the returned values, read from the session (no transaction, no read-back by id).
    expect(sent[0]).toMatch(/^SET @cq_ids = _utf8mb4'' COLLATE utf8mb4_bin;\nUPDATE cairnq_tasks SET status = CASE WHEN cancel_requested_at_ms[\s\S]*JSON_ARRAY\(id, status\)[\s\S]*;\nSELECT CONCAT\('\[', SUBSTRING\(@cq_ids, 2\), '\]'\) AS cq_rows$/);
    expect(sent[1]).toMatch(/^START TRANSACTION;[\s\S]*UPDATE cairnq_tasks SET status = CASE WHEN cancel_requested_at_ms[\s\S]*SET status = 'running'[\s\S]*;\nCOMMIT$/);
    expect(sent[1]?.match(/COMMIT/g)).toHaveLength(1);
    expect(await store.get(b.id)).toMatchObject({ status: "succeeded", result: { n: 2 } });
  } finally {
    await store.close();
  }
});

it("up to four settlements waiting ride with the next claim as their own single-row statements: one query, one COMMIT, each caller its own answer", async () => {
  const store = new MySQLStore(dsn);
  try {
    await store.connect();
    for (let i = 0; i < 5; i++) await store.submit({ name: "ride-few", payload: { i } });
    const held = await store.claim({ queues: ["default"], workerId: "w1", leaseMs: 30_000, names: ["ride-few"], limit: 4 });
    const [a, b, c, d] = held;
    if (a === undefined || b === undefined || c === undefined || d === undefined) throw new Error("expected four claimed tasks");
    await Promise.all(held.map((t) => store.get(t.id)));
    let claimed: { id: string }[] = [];
    let outcomes: PromiseSettledResult<unknown>[] = [];
    const sent = await queriesDuring(async () => {
      const first = store.completeRef({ taskId: a.id, workerId: "w1", attempt: a.attempt, result: { n: 1 } });
      await new Promise((resolve) => setImmediate(resolve)); // its flush (at the end of the turn) is in flight
      const waiting = [
        store.completeRef({ taskId: b.id, workerId: "w1", attempt: b.attempt, result: { n: 2 } }),
        store.completeRef({ taskId: c.id, workerId: "intruder", attempt: c.attempt, result: { n: 3 } }),
        store.completeRef({ taskId: d.id, workerId: "w1", attempt: d.attempt, result: { n: 4 } }),
      ];
      const claim = store.claim({ queues: ["default"], workerId: "w1", leaseMs: 30_000, names: ["ride-few"], limit: 1, probe: false });
      [outcomes, claimed] = await Promise.all([Promise.allSettled([first, ...waiting]), claim]);
    });
    expect(outcomes.map((o) => (o.status === "fulfilled" ? o.value : (o.reason as Error).name))).toEqual([
      { id: a.id, status: "succeeded" },
      { id: b.id, status: "succeeded" },
      "LostLease",
      { id: d.id, status: "succeeded" },
    ]);
    expect(claimed).toHaveLength(1);
    expect(sent).toHaveLength(2);
    // The three waiting settlements: three single-row updates in the claim's query, no multi-row one over JSON_TABLE.
    expect(sent[1]?.match(/UPDATE cairnq_tasks SET status = CASE WHEN cancel_requested_at_ms/g)).toHaveLength(3);
    expect(sent[1]).not.toMatch(/UPDATE JSON_TABLE/);
    expect(sent[1]?.match(/COMMIT/g)).toHaveLength(1);
    expect(await store.get(c.id)).toMatchObject({ status: "running", worker_id: "w1" });
    expect(await store.get(d.id)).toMatchObject({ status: "succeeded", result: { n: 4 } });
  } finally {
    await store.close();
  }
});

it("a claim's lease recovery collects and reads back no ids (nobody reads them), and still recovers an expired lease", async () => {
  const store = new MySQLStore(dsn);
  try {
    const task = await store.submit({ name: "recover-me", payload: {} });
    const [first] = await store.claim({ queues: ["default"], workerId: "w1", leaseMs: 1, names: ["recover-me"], limit: 1 });
    expect(first?.id).toBe(task.id);
    await new Promise((resolve) => setTimeout(resolve, 20)); // the 1 ms lease expires
    let again: { id: string; attempt: number }[] = [];
    const sent = await queriesDuring(async () => {
      again = await store.claim({ queues: ["default"], workerId: "w2", leaseMs: 30_000, names: ["recover-me"], limit: 1 });
    });
    expect(again.map((t) => [t.id, t.attempt])).toEqual([[task.id, 2]]);
    const head = sent.find((sql) => sql.startsWith("START TRANSACTION")) ?? "";
    // The clock's and the id capture's resets ride in the gate's read (foldResets).
    expect(head).toMatch(/^START TRANSACTION;\nSELECT NULL, EXISTS \(SELECT 1 FROM cairnq_tasks WHERE status = 'running'[^;]*\), _utf8mb4'' COLLATE utf8mb4_bin INTO @cq_tx_now, @cq_cand, @cq_ids;\nEXECUTE IMMEDIATE IF\(@cq_cand, 'UPDATE \(SELECT id AS cq_id FROM cairnq_tasks WHERE status = ''running''[^;]*', 'DO 0'\);\nUPDATE \(SELECT id AS cq_id/);
    expect(head.match(/SELECT STRAIGHT_JOIN/g)).toHaveLength(1); // the draw's rows only
  } finally {
    await store.close();
  }
});

it("a claim with no expired lease locks no running row: the owner's write to the task with the earliest lease does not wait for the claim's transaction", async () => {
  const store = new MySQLStore(dsn);
  const holder = await createConnection({ uri: dsn, multipleStatements: true, charset: "UTF8MB4_BIN" });
  const owner = await createConnection({ uri: dsn, charset: "UTF8MB4_BIN" });
  try {
    for (const c of [holder, owner]) await c.query("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED");
    await owner.query("SET SESSION innodb_lock_wait_timeout = 1");
    const running = await store.submit({ name: "lock-probe-running", payload: {} });
    const [claimed] = await store.claim({ queues: ["default"], workerId: "w1", leaseMs: 60_000, names: ["lock-probe-running"], limit: 1 });
    expect(claimed?.id).toBe(running.id);
    // The head of a claim that finds nothing to take, as the store sends it.
    const sent = await queriesWithValuesDuring(() => store.claim({ queues: ["default"], workerId: "w2", leaseMs: 30_000, names: ["lock-probe-none"], limit: 1, probe: false }));
    const head = sent.find((q) => q.sql.startsWith("START TRANSACTION"));
    if (head === undefined) throw new Error("no claim head sent");
    expect(head.sql).toMatch(/;\nCOMMIT$/);
    // The same statements, held open before their COMMIT (a claim's transaction in flight).
    await holder.query(head.sql.slice(0, -";\nCOMMIT".length), head.values as unknown[]);
    try {
      // The running task with the earliest lease (other tests' tasks run too): the record just past the expired range.
      const [[earliest]] = (await owner.query("SELECT id FROM cairnq_tasks WHERE status = 'running' ORDER BY lease_until_ms LIMIT 1")) as unknown as [{ id: Buffer }[]];
      const [result] = await owner.query("UPDATE cairnq_tasks SET progress = 0.5 WHERE id = ?", [earliest?.id]);
      expect((result as { affectedRows: number }).affectedRows).toBe(1);
    } finally {
      await holder.query("ROLLBACK");
    }
  } finally {
    await holder.end();
    await owner.end();
    await store.close();
  }
});

it("a claim's probe again reads expired leases only when its recovery gate found one, and then still reports one the recovery had to skip", async () => {
  const store = new MySQLStore(dsn);
  const holder = await createConnection({ uri: dsn, charset: "UTF8MB4_BIN" });
  try {
    await holder.query("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED");
    const heard: boolean[] = [];
    const reprobe = (claimable: boolean): void => void heard.push(claimable);
    // Nothing queued under this name and no expired lease: the gate finds none, the probe again skips that half and says false.
    const quiet = await queriesDuring(() => store.claim({ queues: ["default"], workerId: "w1", leaseMs: 30_000, names: ["gated-none"], limit: 1, probe: false, reprobe }));
    const head = quiet.find((sql) => sql.startsWith("START TRANSACTION")) ?? "";
    expect(head).toMatch(/;\nSELECT EXISTS \(SELECT 1 FROM cairnq_tasks WHERE status = 'queued'[^;]* OR \(@cq_cand AND EXISTS \(SELECT 1 FROM cairnq_tasks WHERE status = 'running'[^;]*\)\) AS found;\nCOMMIT$/);
    expect(heard).toEqual([false]);
    // A lease expires while another transaction holds its row: the gate finds it, the recovery skips it (SKIP LOCKED), the probe again reports it.
    const task = await store.submit({ name: "gated-expired", payload: {} });
    const [first] = await store.claim({ queues: ["default"], workerId: "w1", leaseMs: 1, names: ["gated-expired"], limit: 1 });
    expect(first?.id).toBe(task.id);
    await new Promise((resolve) => setTimeout(resolve, 20)); // the 1 ms lease expires
    await holder.query("START TRANSACTION");
    try {
      await holder.query("SELECT id FROM cairnq_tasks WHERE id = ? FOR UPDATE", [task.id]);
      expect(await store.claim({ queues: ["default"], workerId: "w2", leaseMs: 30_000, names: ["gated-none"], limit: 1, probe: false, reprobe })).toEqual([]);
      expect(heard).toEqual([false, true]);
    } finally {
      await holder.query("ROLLBACK");
    }
    // Released, the next claim recovers it.
    await store.claim({ queues: ["default"], workerId: "w2", leaseMs: 30_000, names: ["gated-none"], limit: 1, probe: false });
    expect(await store.get(task.id)).toMatchObject({ status: "queued", attempt: 1 });
  } finally {
    await holder.end();
    await store.close();
  }
});
