import { describe, expect, it } from "vitest";
import { CONFLICTS, isConflict, resolveKeyConflict } from "../src/conflict.js";
import type { Conflict, KeyDecision } from "../src/conflict.js";
import { STATUSES } from "../src/statuses.js";
import type { TaskStatus } from "../src/statuses.js";

describe("CONFLICTS / isConflict", () => {
  it("lists the four strategies of §5.1, reuse first (the default)", () => {
    expect(CONFLICTS).toEqual(["reuse", "reuse-succeeded", "reject", "replace"]);
  });

  it.each(CONFLICTS)("accepts %s", (c) => {
    expect(isConflict(c)).toBe(true);
  });

  it.each([["Reuse"], ["reuse_succeeded"], ["ignore"], [""], [null], [undefined], [0], [{}]])("rejects %j", (value) => {
    expect(isConflict(value)).toBe(false);
  });
});

describe("resolveKeyConflict (§5.1 step 4)", () => {
  const insert: KeyDecision = { kind: "insert", cancelExisting: false };
  const insertAndCancel: KeyDecision = { kind: "insert", cancelExisting: true };
  const reuse: KeyDecision = { kind: "reuse" };
  const reject: KeyDecision = { kind: "reject" };

  /**
   * The full table. A declined live task is canceled (§5.7); a declined
   * terminal one is left untouched; no strategy returns failed/canceled.
   */
  const table: Record<Conflict, Record<TaskStatus, KeyDecision>> = {
    reuse: { queued: reuse, running: reuse, succeeded: insert, failed: insert, canceled: insert },
    "reuse-succeeded": { queued: reuse, running: reuse, succeeded: reuse, failed: insert, canceled: insert },
    reject: { queued: reject, running: reject, succeeded: reject, failed: reject, canceled: reject },
    replace: { queued: insertAndCancel, running: insertAndCancel, succeeded: insert, failed: insert, canceled: insert },
  };

  const cases = CONFLICTS.flatMap((conflict) => STATUSES.map((status) => [conflict, status] as const));

  it.each(cases)("%s over a %s task", (conflict, status) => {
    expect(resolveKeyConflict(conflict, { status })).toEqual(table[conflict][status]);
  });

  it.each(CONFLICTS)("%s with a free key (or a purged task) inserts without cancelling", (conflict) => {
    expect(resolveKeyConflict(conflict, null)).toEqual(insert);
  });

  it("never reuses a failed or canceled task", () => {
    for (const conflict of CONFLICTS) {
      for (const status of ["failed", "canceled"] as const) {
        expect(resolveKeyConflict(conflict, { status }).kind).not.toBe("reuse");
      }
    }
  });

  it("only replace ever cancels, and only a live task", () => {
    for (const [conflict, status] of cases) {
      const decision = resolveKeyConflict(conflict, { status });
      const cancels = decision.kind === "insert" && decision.cancelExisting;
      expect(cancels).toBe(conflict === "replace" && (status === "queued" || status === "running"));
    }
  });

  it("reads only the status of the existing task", () => {
    const row = { status: "running" as const, id: "task_x", name: "other", payload: { different: true } };
    expect(resolveKeyConflict("reuse", row)).toEqual(reuse);
  });
});
