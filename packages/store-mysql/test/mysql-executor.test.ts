import { describe, expect, it } from "vitest";
import { foldResets, reprobeAfterGate } from "../src/mysql-executor.ts";

const step = (sql: string, params: number[] = []) => ({ sql, params });
const GATE = "SELECT EXISTS (SELECT 1 FROM cairnq_tasks WHERE status = 'running' AND lease_until_ms <= ?) INTO @cq_cand";

describe("foldResets", () => {
  it("makes the clock's reset before the recovery gate and the id capture's reset after it values of the gate's read", () => {
    const draw = step("UPDATE cairnq_tasks SET status = 'running', created_at_ms = IF((@cq_ids := CONCAT(@cq_ids, ',', JSON_QUOTE(id))) IS NULL, created_at_ms, created_at_ms) WHERE id = ?", [1]);
    const recover = step("EXECUTE IMMEDIATE IF(@cq_cand, 'UPDATE …', 'DO 0')");
    const steps = [step("START TRANSACTION"), step("SET @cq_tx_now = NULL"), step(GATE, [0]), recover, step("SET @cq_ids = ''"), draw, step("COMMIT")];
    const folded = foldResets(steps);
    expect(folded.map((s) => s.sql)).toEqual([
      "START TRANSACTION",
      "SELECT NULL, EXISTS (SELECT 1 FROM cairnq_tasks WHERE status = 'running' AND lease_until_ms <= ?), '' INTO @cq_tx_now, @cq_cand, @cq_ids",
      recover.sql,
      draw.sql,
      "COMMIT",
    ]);
    expect(folded[1]?.params).toEqual([0]);
    // The steps it keeps are the same objects: the executor finds each statement's last step in the folded list.
    expect(folded.indexOf(draw)).toBe(3);
  });

  it("keeps an id capture's reset that a step between it and the gate reads the variable before", () => {
    const reads = step("SELECT @cq_ids AS cq_rows");
    const steps = [step("SET @cq_tx_now = NULL"), step(GATE), reads, step("SET @cq_ids = ''"), step("UPDATE …")];
    expect(foldResets(steps).map((s) => s.sql)).toEqual([
      "SELECT NULL, EXISTS (SELECT 1 FROM cairnq_tasks WHERE status = 'running' AND lease_until_ms <= ?) INTO @cq_tx_now, @cq_cand",
      reads.sql,
      "SET @cq_ids = ''",
      "UPDATE …",
    ]);
  });

  it("keeps the clock's reset as its own statement when the gate reads the transaction clock (the reset must come first)", () => {
    const gate = "SELECT EXISTS (SELECT 1 FROM cairnq_tasks WHERE lease_until_ms <= COALESCE(@cq_tx_now, @cq_tx_now := 1)) INTO @cq_cand";
    const steps = [step("SET @cq_tx_now = NULL"), step(gate), step("COMMIT")];
    expect(foldResets(steps).map((s) => s.sql)).toEqual(["SET @cq_tx_now = NULL", gate, "COMMIT"]);
  });

  it("leaves steps without a recovery gate as they are", () => {
    const steps = [step("START TRANSACTION"), step("SET @cq_tx_now = NULL"), step("SET @cq_ids = ''"), step("UPDATE …"), step("COMMIT")];
    const folded = foldResets(steps);
    expect(folded).toEqual(steps);
    expect(folded.every((s, i) => s === steps[i])).toBe(true);
  });
});

describe("reprobeAfterGate", () => {
  const expired = "EXISTS (SELECT 1 FROM cairnq_tasks WHERE status = 'running' AND lease_until_ms <= 5)";
  const probe = `SELECT EXISTS (SELECT 1 FROM cairnq_tasks WHERE status = 'queued' AND queue = ?) OR ${expired} AS found`;

  it("reads the probe again's expired-lease half only when the gate's identical read found a lease", () => {
    expect(reprobeAfterGate(probe, expired)).toBe(`SELECT EXISTS (SELECT 1 FROM cairnq_tasks WHERE status = 'queued' AND queue = ?) OR (@cq_cand AND ${expired}) AS found`);
  });

  it("leaves a probe whose expired half is another read, and any other statement, as they are", () => {
    expect(reprobeAfterGate(probe, "EXISTS (SELECT 1 FROM cairnq_tasks WHERE status = 'running' AND lease_until_ms <= 6)")).toBe(probe);
    const draw = `UPDATE cairnq_tasks SET status = 'running' WHERE ${expired}`;
    expect(reprobeAfterGate(draw, expired)).toBe(draw);
  });
});
