import { describe, expect, it } from "vitest";
import { MAX_WINDOW, windowOf } from "../src/mysql-claim-window.ts";
import { bindStep, choosePlan, plan, planStatement, planStatementWithoutRows } from "../src/mysql-statement-plan.ts";
import { MySQLSyntax } from "../src/mysql-syntax.ts";

const sqlOf = (text: string): string[] => plan(text).steps.map((s) => s.sql);

describe("plan", () => {
  it("turns numbered placeholders into positional ones, repeating a parameter read twice", () => {
    const planned = plan("SELECT * FROM cairnq_tasks WHERE id = ?2 OR parent_id = ?2 OR name = ?1 OR message = '?3'");
    expect(planned.steps).toEqual([{ sql: "SELECT * FROM cairnq_tasks WHERE id = ? OR parent_id = ? OR name = ? OR message = '?3'", params: [1, 1, 0] }]);
  });

  it("runs UPDATE … RETURNING as an update that records ids and a read-back in update order, in one transaction", () => {
    const planned = plan("UPDATE cairnq_tasks SET status = 'canceled' WHERE id = ?1 RETURNING *");
    expect(planned.transactional).toBe(true);
    expect(sqlOf("UPDATE cairnq_tasks SET status = 'canceled' WHERE id = ?1 RETURNING *")).toEqual([
      "SET @cq_ids = _utf8mb4'' COLLATE utf8mb4_bin",
      "UPDATE cairnq_tasks SET status = 'canceled', created_at_ms = IF((@cq_ids := CONCAT(@cq_ids, ',', JSON_QUOTE(id))) IS NULL, created_at_ms, created_at_ms) WHERE id = ?",
      "SELECT STRAIGHT_JOIN cairnq_tasks.* FROM JSON_TABLE(CONCAT('[', SUBSTRING(@cq_ids, 2), ']'), '$[*]' COLUMNS (cq_ord FOR ORDINALITY, cq_id VARCHAR(255) PATH '$')) cq_j JOIN cairnq_tasks ON cairnq_tasks.id = cq_j.cq_id ORDER BY cq_j.cq_ord",
    ]);
  });

  it("reads the old value of a column an earlier assignment changed, as Postgres does", () => {
    const [update] = sqlOf("UPDATE cairnq_tasks SET status = 'canceled', completed_at_ms = CASE WHEN status = 'queued' THEN 1 ELSE NULL END WHERE id = ?1");
    expect(update).toBe(
      "UPDATE cairnq_tasks SET created_at_ms = IF(CONCAT_WS(',', (@cq_o_status := status)) IS NULL, created_at_ms, created_at_ms), status = 'canceled', " +
        "completed_at_ms = CASE WHEN @cq_o_status = 'queued' THEN 1 ELSE NULL END WHERE id = ?",
    );
  });

  it("wraps a picked-ids subquery of the changed table in a derived table", () => {
    const [del] = sqlOf("DELETE FROM cairnq_tasks WHERE id IN (SELECT id FROM cairnq_tasks WHERE status = 'succeeded' LIMIT ?1) AND attempt > 1");
    expect(del).toBe("DELETE FROM cairnq_tasks WHERE id IN (SELECT * FROM (SELECT id FROM cairnq_tasks WHERE status = 'succeeded' LIMIT ?) cq_pick) AND attempt > 1");
  });

  it("runs a purge's DELETE … WHERE id IN (<picks>) RETURNING id as the picks collected, then a delete joined by primary key, in one transaction", () => {
    const planned = plan("DELETE FROM cairnq_tasks WHERE id IN (SELECT id FROM cairnq_tasks WHERE status = 'succeeded' AND completed_at_ms < ?1 ORDER BY completed_at_ms ASC LIMIT ?2 FOR UPDATE SKIP LOCKED) RETURNING id");
    expect(planned.transactional).toBe(true);
    const ids = "JSON_TABLE(CONCAT('[', SUBSTRING(@cq_ids, 2), ']'), '$[*]' COLUMNS (cq_ord FOR ORDINALITY, cq_id VARCHAR(255) PATH '$')) cq_j";
    expect(planned.steps).toEqual([
      { sql: "SET @cq_ids = _utf8mb4'' COLLATE utf8mb4_bin", params: [] },
      {
        sql:
          "SELECT COUNT(@cq_ids := CONCAT(@cq_ids, ',', JSON_QUOTE(cq_id))) INTO @cq_picked FROM (SELECT id AS cq_id FROM cairnq_tasks WHERE status = 'succeeded' AND completed_at_ms < ? " +
          "ORDER BY completed_at_ms ASC LIMIT ? FOR UPDATE SKIP LOCKED) cq_pick",
        params: [0, 1],
      },
      { sql: `DELETE cairnq_tasks FROM ${ids} STRAIGHT_JOIN cairnq_tasks ON cairnq_tasks.id = cq_j.cq_id`, params: [] },
      { sql: `SELECT cq_id AS id FROM ${ids} ORDER BY cq_ord`, params: [] },
    ]);
  });

  it("joins the picked ids of an UPDATE whose whole WHERE picks them, so the picked rows are read by primary key, not the table walked", () => {
    const draw =
      "UPDATE cairnq_tasks SET status = 'running', attempt = attempt + 1 WHERE id IN (SELECT id FROM cairnq_tasks WHERE status = 'queued' AND queue = ?1 " +
      "ORDER BY priority DESC, run_at_ms ASC, id ASC LIMIT ?2 FOR UPDATE SKIP LOCKED) RETURNING *";
    const planned = plan(draw);
    expect(planned.steps[1]).toEqual({
      sql:
        "UPDATE (SELECT id AS cq_id FROM cairnq_tasks WHERE status = 'queued' AND queue = ? ORDER BY priority DESC, run_at_ms ASC, id ASC LIMIT ? FOR UPDATE SKIP LOCKED) cq_pick " +
        "STRAIGHT_JOIN cairnq_tasks ON cairnq_tasks.id = cq_pick.cq_id SET status = 'running', attempt = attempt + 1, " +
        "created_at_ms = IF((@cq_ids := CONCAT(@cq_ids, ',', JSON_QUOTE(id))) IS NULL, created_at_ms, created_at_ms)",
      params: [0, 1],
    });
    // Without RETURNING too.
    expect(sqlOf("UPDATE cairnq_tasks SET worker_id = NULL WHERE id IN (SELECT id FROM cairnq_tasks WHERE status = 'running' LIMIT 5 FOR UPDATE SKIP LOCKED)")).toEqual([
      "UPDATE (SELECT id AS cq_id FROM cairnq_tasks WHERE status = 'running' LIMIT 5 FOR UPDATE SKIP LOCKED) cq_pick STRAIGHT_JOIN cairnq_tasks ON cairnq_tasks.id = cq_pick.cq_id SET worker_id = NULL",
    ]);
  });

  it("re-checks the conditions after the picks on the joined rows (a bulk cancel's filter)", () => {
    const [cancel] = sqlOf("UPDATE cairnq_tasks SET status = 'canceled' WHERE id IN (SELECT id FROM cairnq_tasks WHERE status = ?1 ORDER BY id LIMIT 5) AND status = ?1");
    expect(cancel).toBe(
      "UPDATE (SELECT id AS cq_id FROM cairnq_tasks WHERE status = ? ORDER BY id LIMIT 5) cq_pick STRAIGHT_JOIN cairnq_tasks ON cairnq_tasks.id = cq_pick.cq_id SET status = 'canceled' WHERE status = ?",
    );
  });

  it("runs the write combiner's UPDATE … FROM <rows> AS b as a join from the bound rows, ids recorded for the read-back", () => {
    const planned = plan("UPDATE cairnq_tasks SET status = 'succeeded', result = b.`p_result` FROM JSON_TABLE(?1, '$[*]' COLUMNS (`p_taskId` LONGTEXT PATH '$[0]')) AS b WHERE id = b.`p_taskId` AND worker_id = ?2 RETURNING id, status");
    expect(planned.steps.map((s) => s.sql)).toEqual([
      "SET @cq_ids = _utf8mb4'' COLLATE utf8mb4_bin",
      "UPDATE JSON_TABLE(?, '$[*]' COLUMNS (`p_taskId` LONGTEXT PATH '$[0]')) AS b STRAIGHT_JOIN cairnq_tasks SET status = 'succeeded', result = b.`p_result`, " +
        "created_at_ms = IF((@cq_ids := CONCAT(@cq_ids, ',', JSON_QUOTE(id))) IS NULL, created_at_ms, created_at_ms) WHERE id = b.`p_taskId` AND worker_id = ?",
      "SELECT STRAIGHT_JOIN cairnq_tasks.id, cairnq_tasks.status FROM JSON_TABLE(CONCAT('[', SUBSTRING(@cq_ids, 2), ']'), '$[*]' COLUMNS (cq_ord FOR ORDINALITY, cq_id VARCHAR(255) PATH '$')) cq_j JOIN cairnq_tasks ON cairnq_tasks.id = cq_j.cq_id ORDER BY cq_j.cq_ord",
    ]);
    expect(planned.steps[1]?.params).toEqual([0, 1]);
  });

  it("keeps the IN form where the picks are not the whole WHERE, or an assignment reads an earlier one's old value", () => {
    const [more] = sqlOf("UPDATE cairnq_tasks SET status = 'queued' WHERE attempt < 3 AND id IN (SELECT id FROM cairnq_tasks WHERE status = 'running' LIMIT 5)");
    expect(more).toBe("UPDATE cairnq_tasks SET status = 'queued' WHERE attempt < 3 AND id IN (SELECT * FROM (SELECT id FROM cairnq_tasks WHERE status = 'running' LIMIT 5) cq_pick)");
    const [stash] = sqlOf("UPDATE cairnq_tasks SET status = 'canceled', message = status WHERE id IN (SELECT id FROM cairnq_tasks WHERE status = 'running' LIMIT 5)");
    expect(stash).toMatch(/^UPDATE cairnq_tasks SET .*@cq_o_status.* WHERE id IN \(SELECT \* FROM/);
  });

  it("writes upserts as ON DUPLICATE KEY UPDATE and INSERT IGNORE", () => {
    expect(sqlOf("INSERT INTO t (k, v) VALUES (?1, ?2) ON CONFLICT (k) DO UPDATE SET v = excluded.v")).toEqual([
      "INSERT INTO t (k, v) VALUES (?, ?) ON DUPLICATE KEY UPDATE t.v = VALUES(v)",
    ]);
    expect(sqlOf("INSERT INTO t (k) VALUES (?1) ON CONFLICT (k) DO NOTHING")).toEqual(["INSERT IGNORE INTO t (k) VALUES (?)"]);
  });

  it("guards every assignment of a conditional upsert by its condition on the old row, returning nulls it drops", () => {
    const planned = plan("INSERT INTO s (k, v) SELECT id, ?1 FROM cairnq_tasks WHERE id = ?2 ON CONFLICT (k) DO UPDATE SET v = excluded.v WHERE s.v <> 'done' RETURNING k");
    expect(planned.dropNullRows).toBe(true);
    expect(planned.steps.map((s) => s.sql)).toEqual([
      "SET @cq_cond = 1",
      "INSERT INTO s (k, v) SELECT id, ? FROM cairnq_tasks WHERE id = ? ON DUPLICATE KEY UPDATE s.v = IF((@cq_cond := COALESCE(s.v <> 'done', 0)) IS NULL, s.v, s.v), " +
        "s.v = IF(@cq_cond, VALUES(v), s.v) RETURNING IF(@cq_cond, k, NULL) AS k",
    ]);
  });

  it("concatenates with CONCAT, not ||", () => {
    expect(sqlOf("SELECT 1 FROM g WHERE (group_key || '#' || touched) = ?1")).toEqual(["SELECT 1 FROM g WHERE CONCAT(group_key, '#', touched) = ?"]);
  });

  it("binds a list parameter as one value per element, an empty list as an empty subquery, anything else through JSON_TABLE", () => {
    const list = new MySQLSyntax().inList("id", "?2");
    const [step] = plan(`UPDATE cairnq_tasks SET worker_id = ?1 WHERE ${list} AND queue = ?1`).steps;
    expect(step).toEqual({ sql: "UPDATE cairnq_tasks SET worker_id = ? WHERE id IN (?) AND queue = ?", params: [0, 1, 0], lists: [1] });
    const bound = (value: unknown): { sql: string; values: unknown[] } => bindStep(step!, ["w", value]);
    expect(bound(JSON.stringify(["a", "b?", "c"]))).toEqual({ sql: "UPDATE cairnq_tasks SET worker_id = ? WHERE id IN (?, ?, ?) AND queue = ?", values: ["w", "a", "b?", "c", "w"] });
    expect(bound("[]")).toEqual({ sql: "UPDATE cairnq_tasks SET worker_id = ? WHERE id IN (SELECT NULL FROM DUAL WHERE FALSE) AND queue = ?", values: ["w", "w"] });
    expect(bound("not json")).toEqual({
      sql: "UPDATE cairnq_tasks SET worker_id = ? WHERE id IN (SELECT v FROM JSON_TABLE(?, '$[*]' COLUMNS (v VARCHAR(255) PATH '$')) cq_l) AND queue = ?",
      values: ["w", "not json", "w"],
    });
  });

  it("refuses an upsert it has no form for", () => {
    expect(() => plan("INSERT INTO t (k) VALUES (1) ON CONFLICT (k) DO SOMETHING")).toThrow(/no MySQL form/);
  });
});

describe("planStatementWithoutRows", () => {
  it("plans a returning update whose rows nobody reads (a claim head's lease recovery) without collecting or reading back its ids", () => {
    const recovery = "UPDATE cairnq_tasks SET status = 'queued', lease_until_ms = NULL WHERE id IN (SELECT id FROM cairnq_tasks WHERE status = 'running' FOR UPDATE SKIP LOCKED) RETURNING id";
    const planned = planStatementWithoutRows(recovery);
    expect(planned.steps.map((s) => s.sql)).toEqual([
      "SELECT EXISTS (SELECT 1 FROM cairnq_tasks WHERE status = 'running') INTO @cq_cand",
      "EXECUTE IMMEDIATE IF(@cq_cand, 'UPDATE (SELECT id AS cq_id FROM cairnq_tasks WHERE status = ''running'' FOR UPDATE SKIP LOCKED) cq_pick STRAIGHT_JOIN cairnq_tasks ON cairnq_tasks.id = cq_pick.cq_id SET status = ''queued'', lease_until_ms = NULL', 'DO 0')",
    ]);
    expect(planned.transactional).toBe(true);
    expect(planStatement(recovery).steps).toHaveLength(4);
  });

  it("plans any other statement as planStatement does", () => {
    const read = "SELECT * FROM cairnq_tasks WHERE id = ?1 AND message = 'RETURNING'";
    expect(planStatementWithoutRows(read)).toEqual(planStatement(read));
    const update = "UPDATE cairnq_tasks SET message = 'x' WHERE id = ?1";
    expect(planStatementWithoutRows(update)).toEqual(planStatement(update));
  });
});

describe("picks of every matching row (lease recovery)", () => {
  it("gate the locking update on a plain read of the same condition, so that nothing is locked when nothing matches", () => {
    const recovery =
      "UPDATE cairnq_tasks SET status = 'queued' WHERE id IN (SELECT id FROM cairnq_tasks WHERE status = 'running' AND lease_until_ms <= ?1 FOR UPDATE SKIP LOCKED) AND attempt < 3 OR max_attempts = 1";
    const planned = plan(recovery);
    expect(planned.steps.map((s) => s.sql)).toEqual([
      "SELECT EXISTS (SELECT 1 FROM cairnq_tasks WHERE status = 'running' AND lease_until_ms <= ?) INTO @cq_cand",
      "UPDATE (SELECT id AS cq_id FROM cairnq_tasks WHERE status = 'running' AND lease_until_ms <= ? FOR UPDATE SKIP LOCKED) cq_pick STRAIGHT_JOIN cairnq_tasks ON cairnq_tasks.id = cq_pick.cq_id " +
        "SET status = 'queued' WHERE @cq_cand AND (attempt < 3 OR max_attempts = 1)",
    ]);
    // Both statements read the one parameter.
    expect(planned.steps.map((s) => s.params)).toEqual([[0], [0]]);
    expect(planned.transactional).toBe(true);
  });

  it("run a parameterless update as a string only when the read found a row (its quotes and backslashes escaped), with the ids it changed still recorded", () => {
    const recovery = "UPDATE cairnq_tasks SET error = 'a''b\\c' WHERE id IN (SELECT id FROM cairnq_tasks WHERE status = 'running' FOR UPDATE SKIP LOCKED) RETURNING id, status";
    const planned = plan(recovery);
    expect(planned.steps.map((s) => s.sql)).toEqual([
      "SET @cq_ids = _utf8mb4'' COLLATE utf8mb4_bin",
      "SELECT EXISTS (SELECT 1 FROM cairnq_tasks WHERE status = 'running') INTO @cq_cand",
      "EXECUTE IMMEDIATE IF(@cq_cand, 'UPDATE (SELECT id AS cq_id FROM cairnq_tasks WHERE status = ''running'' FOR UPDATE SKIP LOCKED) cq_pick STRAIGHT_JOIN cairnq_tasks ON cairnq_tasks.id = cq_pick.cq_id " +
        "SET error = ''a''''b\\\\c'', created_at_ms = IF((@cq_ids := CONCAT(@cq_ids, '','', JSON_QUOTE(id))) IS NULL, created_at_ms, created_at_ms)', 'DO 0')",
      "SELECT STRAIGHT_JOIN cairnq_tasks.id, cairnq_tasks.status FROM JSON_TABLE(CONCAT('[', SUBSTRING(@cq_ids, 2), ']'), '$[*]' COLUMNS (cq_ord FOR ORDINALITY, cq_id VARCHAR(255) PATH '$')) cq_j JOIN cairnq_tasks ON cairnq_tasks.id = cq_j.cq_id ORDER BY cq_j.cq_ord",
    ]);
    expect(planned.steps.map((s) => s.params)).toEqual([[], [], [], []]);
  });

  it("leave picks with a LIMIT (a draw, a purge batch) as one statement", () => {
    const draw = "UPDATE cairnq_tasks SET status = 'running' WHERE id IN (SELECT id FROM cairnq_tasks WHERE status = 'queued' ORDER BY id LIMIT 5 FOR UPDATE SKIP LOCKED)";
    expect(plan(draw).steps).toHaveLength(1);
    const unlocked = "UPDATE cairnq_tasks SET status = 'running' WHERE id IN (SELECT id FROM cairnq_tasks WHERE status = 'queued')";
    expect(plan(unlocked).steps.map((s) => s.sql)).not.toContainEqual(expect.stringContaining("@cq_cand"));
  });
});

describe("a single-table update returning listed columns (a complete's id and status)", () => {
  it("records the returned values in its last assignment and reads them from the session: no transaction, no read-back by id", () => {
    const planned = plan("UPDATE cairnq_tasks SET status = 'succeeded', result = ?3 WHERE id = ?1 AND worker_id = ?2 RETURNING id, status");
    expect(planned.steps.map((s) => s.sql)).toEqual([
      "SET @cq_ids = _utf8mb4'' COLLATE utf8mb4_bin",
      "UPDATE cairnq_tasks SET status = 'succeeded', result = ?, created_at_ms = IF((@cq_ids := CONCAT(@cq_ids, ',', JSON_ARRAY(id, status))) IS NULL, created_at_ms, created_at_ms) WHERE id = ? AND worker_id = ?",
      "SELECT CONCAT('[', SUBSTRING(@cq_ids, 2), ']') AS cq_rows",
    ]);
    expect(planned.steps[1]?.params).toEqual([2, 0, 1]);
    expect(planned.capturedColumns).toEqual(["id", "status"]);
    expect(planned.transactional).toBe(false);
  });

  it("reads whole rows, joined or picked updates and updates reading a table back by id, as before", () => {
    for (const sql of [
      "UPDATE cairnq_tasks SET status = 'succeeded' WHERE id = ?1 RETURNING *",
      "UPDATE cairnq_tasks SET status = 'succeeded' WHERE id IN (SELECT id FROM cairnq_tasks WHERE status = 'running' LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id, status",
      "UPDATE cairnq_tasks SET status = 'succeeded' FROM JSON_TABLE(?1, '$[*]' COLUMNS (p_taskId LONGTEXT PATH '$[0]')) AS b WHERE id = b.p_taskId RETURNING id, status",
      "UPDATE cairnq_tasks SET message = (SELECT 'x') WHERE id = ?1 RETURNING id, status",
    ]) {
      const planned = plan(sql);
      expect(planned.capturedColumns).toBeUndefined();
      expect(planned.steps.at(-1)?.sql).toMatch(/^SELECT STRAIGHT_JOIN /);
    }
  });
});

describe("a claim draw over several queues (mysql-claim-window.ts)", () => {
  const queues = new MySQLSyntax().inList("queue", "?2");
  const draw =
    `UPDATE cairnq_tasks SET status = 'running', worker_id = ?1 WHERE id IN (SELECT id FROM cairnq_tasks WHERE status = 'queued' AND ${queues} ` +
    "ORDER BY priority DESC, run_at_ms ASC, id ASC LIMIT ?3 FOR UPDATE SKIP LOCKED) RETURNING *";
  const SET = "SET status = 'running', worker_id = ?, created_at_ms = IF((@cq_ids := CONCAT(@cq_ids, ',', JSON_QUOTE(id))) IS NULL, created_at_ms, created_at_ms)";
  const JOIN = "cq_pick STRAIGHT_JOIN cairnq_tasks ON cairnq_tasks.id = cq_pick.cq_id";

  it("keeps the one sorting pick for one queue, and reads candidates without locks, then locks among them, for several", () => {
    const planned = planStatement(draw);
    const one = choosePlan(planned, ["w", JSON.stringify(["q0"]), 3]);
    expect(one).toBe(planned);
    expect(one.steps.map((s) => s.sql.slice(0, 30))).toEqual(["SET @cq_ids = _utf8mb4'' COLLA", "UPDATE (SELECT id AS cq_id FRO", "SELECT STRAIGHT_JOIN cairnq_ta"]);
    const many = choosePlan(planned, ["w", JSON.stringify(["q0", "q1"]), 3]);
    expect(many).toBe(planned.manyQueues?.plan(2));
    expect(choosePlan(planned, ["w", JSON.stringify(["q0", "q1", "q2"]), 3])).toBe(planned.manyQueues?.plan(3));
    expect(many.transactional).toBe(true);
    const [reset, read, pick, count, fallback, select] = many.steps;
    expect(reset?.sql).toBe(planned.steps[0]?.sql);
    expect(select).toEqual(planned.steps[2]);
    expect(read).toEqual({
      sql:
        "SELECT JSON_ARRAYAGG(CAST(id AS CHAR CHARACTER SET utf8mb4) ORDER BY priority DESC, run_at_ms ASC, id ASC), COUNT(*) INTO @cq_cands, @cq_ncands " +
        "FROM ((SELECT id, priority, run_at_ms FROM cairnq_tasks WHERE status = 'queued' AND queue = ? ORDER BY priority DESC, run_at_ms ASC, id ASC LIMIT ?) UNION ALL " +
        "(SELECT id, priority, run_at_ms FROM cairnq_tasks WHERE status = 'queued' AND queue = ? ORDER BY priority DESC, run_at_ms ASC, id ASC LIMIT ?) " +
        "ORDER BY priority DESC, run_at_ms ASC, id ASC LIMIT ?) cq_c",
      params: [1, 2, 1, 2, 2],
      scaled: [1, 3, 4],
      elements: [
        [0, 0],
        [2, 1],
      ],
    });
    expect(pick).toEqual({
      sql:
        "UPDATE (SELECT cairnq_tasks.id AS cq_id FROM JSON_TABLE(@cq_cands, '$[*]' COLUMNS (cq_ord FOR ORDINALITY, cq_cid VARCHAR(255) PATH '$')) cq_c " +
        "STRAIGHT_JOIN cairnq_tasks ON cairnq_tasks.id = cq_c.cq_cid WHERE (status = 'queued' AND queue IN (?)) ORDER BY cq_c.cq_ord LIMIT ? FOR UPDATE SKIP LOCKED) " +
        `${JOIN} ${SET}`,
      params: [1, 2, 0],
      lists: [0],
    });
    expect(count).toEqual({ sql: "SELECT ? - ROW_COUNT(), @cq_ncands >= ? AND ROW_COUNT() < ? INTO @cq_left, @cq_more", params: [2, 2, 2], scaled: [1] });
    expect(fallback).toEqual({
      sql:
        "UPDATE (SELECT id AS cq_id FROM cairnq_tasks WHERE @cq_more AND (status = 'queued' AND queue IN (?)) ORDER BY priority DESC, run_at_ms ASC, id ASC LIMIT ? FOR UPDATE SKIP LOCKED) " +
        `${JOIN} ${SET} WHERE (@cq_left := @cq_left - 1) >= 0`,
      params: [1, 2, 0],
      lists: [0],
    });
  });

  it("binds the window of candidates as windowOf(limit), every other value as it is", () => {
    const [, read, , count] = planStatement(draw).manyQueues!.plan(2).steps;
    const parameters = ["w", JSON.stringify(["q0", "q1"]), 3];
    expect(windowOf(3)).toBe(28);
    expect(windowOf(5000)).toBe(MAX_WINDOW);
    // Each queue's part reads its own queue (the list's element), the window for each part and for the whole.
    expect(bindStep(read!, parameters).values).toEqual(["q0", 28, "q1", 28, 28]);
    expect(bindStep(count!, parameters)).toEqual({ sql: "SELECT ? - ROW_COUNT(), @cq_ncands >= ? AND ROW_COUNT() < ? INTO @cq_left, @cq_more", values: [3, 28, 3] });
  });

  it("leaves every other pick alone: no queue list, no order or limit, or conditions after the picks", () => {
    for (const sql of [
      "UPDATE cairnq_tasks SET status = 'running' WHERE id IN (SELECT id FROM cairnq_tasks WHERE status = 'queued' AND queue = ?1 ORDER BY priority DESC, id ASC LIMIT ?2 FOR UPDATE SKIP LOCKED) RETURNING *",
      `UPDATE cairnq_tasks SET status = 'running' WHERE id IN (SELECT id FROM cairnq_tasks WHERE ${queues} LIMIT ?3 FOR UPDATE SKIP LOCKED) RETURNING *`,
      `UPDATE cairnq_tasks SET status = 'canceled' WHERE id IN (SELECT id FROM cairnq_tasks WHERE ${queues} ORDER BY id LIMIT ?3 FOR UPDATE SKIP LOCKED) AND status = ?1`,
      `DELETE FROM cairnq_tasks WHERE id IN (SELECT id FROM cairnq_tasks WHERE ${queues} ORDER BY completed_at_ms ASC LIMIT ?3 FOR UPDATE SKIP LOCKED)`,
    ]) {
      expect(plan(sql).manyQueues).toBeUndefined();
    }
  });
});
