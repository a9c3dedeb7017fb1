import { describe, expect, it } from "vitest";
import { AlreadyExists, InvalidArgument, UnsupportedBackend } from "../src/errors.js";
import { hasGroupLimits, normalizeFlowControl } from "../src/flow-control.js";
import {
  compareGroupWalk,
  countsAsGroupRunning,
  GROUP_TASK_STATES,
  GROUP_RUNNING,
  groupAllowance,
  groupClaimsInWindow,
  GROUP_PRUNE_INTERVAL_MS,
  groupPruneDue,
  groupReadDepth,
  hasGroupReads,
  headGroupRowAction,
  rotateGroups,
  sortGroupCounts,
  wakeGroupTask,
} from "../src/groups.js";
import { holds } from "../src/expr.js";
import { requireGroupSupport } from "../src/submit-options.js";
import { normalizeSubmit } from "../src/inputs.js";
import { debounceConflict, debounceReadsJournal, debounceUpdate, resolveDebounce } from "../src/debounce.js";
import { decideRow } from "../src/decide.js";
import { MAX_DELAY_MS } from "../src/delay.js";
import { queuedRow } from "./fixtures.js";

const g = (group: string, n: number, allowance = Number.POSITIVE_INFINITY) => ({
  group,
  taskIds: Array.from({ length: n }, (_, i) => `${group}${i}`),
  allowance,
});

describe("groupReadDepth", () => {
  it("reads of a group as many tasks as the rotation could pick from it: within the limits, the cap less what goes first, at least 1", () => {
    expect(groupReadDepth(16, 0, 0, 3)).toBe(3);
    expect(groupReadDepth(16, 0, 14, 3)).toBe(2);
    expect(groupReadDepth(16, 2, 13, 3)).toBe(1);
    expect(groupReadDepth(16, 8, 20, 3)).toBe(1);
    expect(groupReadDepth(5, 0, 0, Number.POSITIVE_INFINITY)).toBe(5);
  });

  it("is never short of what rotateGroups picks from the last group read, whatever the groups ahead give", () => {
    for (let cap = 1; cap <= 12; cap++) {
      for (let ahead = 0; ahead <= 6; ahead++) {
        for (let each = 1; each <= 4; each++) {
          const groups = [...Array.from({ length: ahead }, (_, i) => g(`a${i}-`, each)), g("z-", 12)];
          for (let ungrouped = 0; ungrouped <= 2; ungrouped++) {
            const picked = rotateGroups(Array.from({ length: ungrouped }, (_, i) => `u${i}`), groups, cap).taskIds.filter((id) => id.startsWith("z-"));
            expect(picked.length).toBeLessThanOrEqual(groupReadDepth(cap, ungrouped, ahead, 12));
          }
        }
      }
    }
  });
});

describe("rotateGroups", () => {
  it("takes one task per group per round, in served order, until the cap", () => {
    const r = rotateGroups([], [g("a", 5), g("b", 1), g("c", 3)], 6);
    expect(r.taskIds).toEqual(["a0", "b0", "c0", "a1", "c1", "a2"]);
    expect(r.served).toEqual(["b", "c", "a"]);
    expect(r.groupOf.get("c1")).toBe("c");
  });

  it("stops a group at its allowance, and the whole draw when no group can give more", () => {
    const r = rotateGroups([], [g("a", 5, 2), g("b", 5, 1)], 10);
    expect(r.taskIds).toEqual(["a0", "b0", "a1"]);
  });

  it("takes tasks without a group first, up to the cap, and never serves them as a group", () => {
    const r = rotateGroups(["x", "y"], [g("a", 2)], 3);
    expect(r.taskIds).toEqual(["x", "y", "a0"]);
    expect(r.groupOf.has("x")).toBe(false);
    expect(r.served).toEqual(["a"]);
    expect(rotateGroups(["x"], [g("a", 2)], 0).taskIds).toEqual([]);
  });

  it("a backlog delays another group by one rotation at most", () => {
    const r = rotateGroups([], [g("big", 100_000), g("small", 1)], 2);
    expect(r.taskIds).toEqual(["big0", "small0"]);
  });

  it("rejects a bad cap", () => {
    expect(() => rotateGroups([], [], -1)).toThrow(InvalidArgument);
  });
});

describe("compareGroupWalk", () => {
  it("orders a group's tasks by priority, higher first, then by id, older first", () => {
    const tasks = [
      { priority: 0, taskId: "task_b" },
      { priority: 5, taskId: "task_c" },
      { priority: 0, taskId: "task_a" },
      { priority: 5, taskId: "task_a" },
    ];
    expect([...tasks].sort(compareGroupWalk)).toEqual([
      { priority: 5, taskId: "task_a" },
      { priority: 5, taskId: "task_c" },
      { priority: 0, taskId: "task_a" },
      { priority: 0, taskId: "task_b" },
    ]);
    expect(compareGroupWalk({ priority: 1, taskId: "task_a" }, { priority: 1, taskId: "task_b" })).toBeLessThan(0);
    expect(compareGroupWalk({ priority: 1, taskId: "task_b" }, { priority: 1, taskId: "task_a" })).toBeGreaterThan(0);
    expect(compareGroupWalk({ priority: 1, taskId: "task_a" }, { priority: 1, taskId: "task_a" })).toBe(0);
  });
});

describe("group limits", () => {
  it("groupAllowance is the smaller of both limits' room, never negative", () => {
    expect(groupAllowance({ groupConcurrency: 2, groupRateLimit: null }, 1, 0)).toBe(1);
    expect(groupAllowance({ groupConcurrency: 2, groupRateLimit: { max: 5, perMs: 100 } }, 0, 4)).toBe(1);
    expect(groupAllowance({ groupConcurrency: 2, groupRateLimit: null }, 3, 0)).toBe(0);
  });

  it("counts recorded claims inside the window (t − perMs, t]", () => {
    expect(groupClaimsInWindow([100, 150, 200], 200, 100)).toBe(2);
  });

  it("a running task takes a group slot unless its settlement is in flight; a requeued row goes back to the walk only while its task waits", () => {
    expect(countsAsGroupRunning(false)).toBe(true);
    expect(countsAsGroupRunning(true)).toBe(false);
    expect(wakeGroupTask("queued")).toBe(GROUP_TASK_STATES.queued);
    expect(wakeGroupTask("running")).toBe(GROUP_TASK_STATES.claimed);
    expect(wakeGroupTask("succeeded")).toBe(GROUP_TASK_STATES.claimed);
  });

  it("a grouped task at the head of the plain order goes back to its walk unless its row is there, and wakes an idle group", () => {
    expect(headGroupRowAction(GROUP_TASK_STATES.claimed, true)).toBe("requeue");
    expect(headGroupRowAction(GROUP_TASK_STATES.requeued, false)).toBe("requeue");
    expect(headGroupRowAction(GROUP_TASK_STATES.done, true)).toBe("requeue");
    expect(headGroupRowAction(GROUP_TASK_STATES.queued, false)).toBe("wake");
    expect(headGroupRowAction(GROUP_TASK_STATES.queued, true)).toBe("none");
  });

  it("a store prunes a name's idle group rows on its first group claim of the name, then once an interval has passed", () => {
    expect(groupPruneDue(undefined, 5)).toBe(true);
    expect(groupPruneDue(1_000, 1_000)).toBe(false);
    expect(groupPruneDue(1_000, 1_000 + GROUP_PRUNE_INTERVAL_MS - 1)).toBe(false);
    expect(groupPruneDue(1_000, 1_000 + GROUP_PRUNE_INTERVAL_MS)).toBe(true);
    // A clock moved back by less than the interval waits on; by more, the wait starts again from now.
    expect(groupPruneDue(1_000_000, 1_000_000 - GROUP_PRUNE_INTERVAL_MS + 1)).toBe(false);
    expect(groupPruneDue(1_000_000, 1_000_000 - GROUP_PRUNE_INTERVAL_MS)).toBe(true);
  });

  it("GROUP_RUNNING holds for the running rows with a lease of the name", () => {
    const running = queuedRow({ status: "running", lease_until_ms: 9_000, worker_id: "w", attempt: 1 } as never);
    const at = (row: object, name = "summarize") => holds(GROUP_RUNNING, { row: row as Record<string, unknown>, params: { name }, nowMs: 0 });
    expect(at(running)).toBe(true);
    expect(at(running, "other")).toBe(false);
    expect(at({ ...running, lease_until_ms: null })).toBe(false);
    expect(at(queuedRow())).toBe(false);
  });

  it("normalizeFlowControl validates the group limits like the name-wide ones", () => {
    expect(normalizeFlowControl({ groupConcurrency: 2 })).toEqual({ globalConcurrency: null, rateLimit: null, groupConcurrency: 2, groupRateLimit: null });
    expect(hasGroupLimits(normalizeFlowControl({ groupRateLimit: { max: 1, perMs: 10 } }))).toBe(true);
    expect(hasGroupLimits(normalizeFlowControl({ globalConcurrency: 1 }))).toBe(false);
    expect(() => normalizeFlowControl({ groupConcurrency: 0 }, "task 'x' options")).toThrow(/task 'x' options.groupConcurrency must be an integer from 1/);
    expect(() => normalizeFlowControl({ groupRateLimit: { max: 1 } })).toThrow(/groupRateLimit needs both max and perMs/);
  });

  it("a submit's group is validated like a key", () => {
    expect(normalizeSubmit({ name: "x", group: "acme" }, "task_0").group).toBe("acme");
    expect(normalizeSubmit({ name: "x" }, "task_0").group).toBeNull();
    expect(() => normalizeSubmit({ name: "x", group: "" }, "task_0")).toThrow(InvalidArgument);
    expect(() => normalizeSubmit({ name: "x", group: "x".repeat(5000) }, "task_0")).toThrow(/group is 5000 bytes long/);
  });
});

describe("debounce", () => {
  it("is validated against the rest of the submit", () => {
    const ok = normalizeSubmit({ name: "x", key: "k", debounce: { delayMs: 200, maxDelayMs: 600 } }, "task_0");
    expect(ok.debounce).toEqual({ delayMs: 200, maxDelayMs: 600 });
    expect(ok.params.runAtDelayMs).toBe(200);
    expect(() => normalizeSubmit({ name: "x", debounce: { delayMs: 1 } }, "task_0")).toThrow(/debounce needs a key/);
    expect(() => normalizeSubmit({ name: "x", key: "k", conflict: "reuse", debounce: { delayMs: 1 } }, "task_0")).toThrow(/drop the conflict option/);
    expect(() => normalizeSubmit({ name: "x", key: "k", runAtDelayMs: 5, debounce: { delayMs: 1 } }, "task_0")).toThrow(/drop runAtDelayMs/);
    expect(() => normalizeSubmit({ name: "x", key: "k", debounce: { delayMs: 10, maxDelayMs: 5 } }, "task_0")).toThrow(/below delayMs/);
    expect(() => normalizeSubmit({ name: "x", key: "k", debounce: { delayMs: -1 } }, "task_0")).toThrow(InvalidArgument);
    // Each is added to the store's clock (delayMs) or to the first submit's time (maxDelayMs): bounded as every delay.
    expect(normalizeSubmit({ name: "x", key: "k", debounce: { delayMs: MAX_DELAY_MS, maxDelayMs: MAX_DELAY_MS } }, "task_0").debounce).toEqual({ delayMs: MAX_DELAY_MS, maxDelayMs: MAX_DELAY_MS });
    expect(() => normalizeSubmit({ name: "x", key: "k", debounce: { delayMs: Number.MAX_SAFE_INTEGER } }, "task_0")).toThrow(/^debounce\.delayMs asks for a delay of 9007199254740991 ms, over MAX_DELAY_MS/);
    expect(() => normalizeSubmit({ name: "x", key: "k", debounce: { delayMs: 1, maxDelayMs: MAX_DELAY_MS + 1 } }, "task_0")).toThrow(/^debounce\.maxDelayMs asks for a delay of 3153600000001 ms, over MAX_DELAY_MS/);
    expect(() => normalizeSubmit({ name: "x", key: "k", debounce: { delay: 1 } as never }, "task_0")).toThrow(/no option 'delay'/);
  });

  it("updates a queued task of its name that has not begun, inserts when the key's task is running, begun, finished or absent, and refuses another name's unfinished task", () => {
    expect(resolveDebounce("d", { id: "t1", name: "d", status: "queued" }, false)).toEqual({ kind: "update", taskId: "t1" });
    expect(resolveDebounce("d", { id: "t1", name: "d", status: "running" }, false)).toEqual({ kind: "insert" });
    expect(resolveDebounce("d", { id: "t1", name: "d", status: "succeeded" }, false)).toEqual({ kind: "insert" });
    expect(resolveDebounce("d", null, false)).toEqual({ kind: "insert" });
    // Another name's task: refused while it is queued or running, replaced as any finished task once it ended.
    expect(resolveDebounce("d", { id: "t1", name: "email", status: "queued" }, false)).toEqual({ kind: "reject" });
    expect(resolveDebounce("d", { id: "t1", name: "email", status: "running" }, false)).toEqual({ kind: "reject" });
    expect(resolveDebounce("d", { id: "t1", name: "email", status: "failed" }, false)).toEqual({ kind: "insert" });
    // A queued task of its name that has begun (parked, or queued for a retry after recording steps) is left alone.
    expect(resolveDebounce("d", { id: "t1", name: "d", status: "queued" }, true)).toEqual({ kind: "insert" });
    expect(debounceReadsJournal("d", { id: "t1", name: "d", status: "queued" })).toBe(true);
    expect(debounceReadsJournal("d", { id: "t1", name: "d", status: "running" })).toBe(false);
    expect(debounceReadsJournal("d", { id: "t1", name: "email", status: "queued" })).toBe(false);
    expect(debounceReadsJournal("d", null)).toBe(false);
    const error = debounceConflict("k", "d", { id: "t1", name: "email", status: "queued" });
    expect(error).toBeInstanceOf(AlreadyExists);
    expect(error.key).toBe("k");
    expect(error.message).toMatch(/names task t1 of task name 'email' \(queued\); a debounced submit of 'd' coalesces only into a queued task of its own name/);
  });

  it("the update moves run_at to now + delay, capped at the first submit + maxDelayMs", () => {
    const row = queuedRow({ created_at_ms: 1000, run_at_ms: 1200 });
    const capped = debounceUpdate({ delayMs: 200, maxDelayMs: 600 }, row.id, '{"n":2}');
    const at = (nowMs: number) => decideRow(capped.rule, row, capped.params, nowMs);
    expect(at(1300)).toMatchObject({ kind: "applied", row: { run_at_ms: 1500 } });
    expect(at(1450)).toMatchObject({ kind: "applied", row: { run_at_ms: 1600 } });
    const free = debounceUpdate({ delayMs: 200, maxDelayMs: null }, row.id, "{}");
    expect(decideRow(free.rule, row, free.params, 5000)).toMatchObject({ kind: "applied", row: { run_at_ms: 5200 } });
    expect(decideRow(free.rule, { ...row, status: "running" }, free.params, 5000).kind).toBe("not-matched");
  });
});

describe("group reads and support checks", () => {
  it("hasGroupReads needs the capability and both methods", () => {
    const reads = { taskGroup: async () => null, groupStats: async () => [] };
    expect(hasGroupReads({ capabilities: { groups: true }, ...reads })).toBe(true);
    expect(hasGroupReads({ capabilities: { groups: false }, ...reads })).toBe(false);
    expect(hasGroupReads({ capabilities: {} })).toBe(false);
    const half = { capabilities: { groups: true }, taskGroup: reads.taskGroup };
    expect(hasGroupReads(half)).toBe(false);
  });

  it("sortGroupCounts: most queued first, then most running, then by group; at most limit", () => {
    const counts = [
      { group: "c", queued: 1, running: 0 },
      { group: "b", queued: 5, running: 1 },
      { group: "a", queued: 1, running: 0 },
      { group: "d", queued: 1, running: 3 },
      { group: "a2", queued: 1, running: 0 },
    ];
    expect(sortGroupCounts(counts, 10).map((g) => g.group)).toEqual(["b", "d", "a", "a2", "c"]);
    expect(sortGroupCounts([counts[0] as never, counts[0] as never], 10)).toHaveLength(2);
    expect(sortGroupCounts(counts, 2).map((g) => g.group)).toEqual(["b", "d"]);
  });

  it("requireGroupSupport refuses a group or a debounce on a store without groups", () => {
    const plain = { capabilities: {} };
    expect(() => requireGroupSupport(plain, { group: "acme" })).toThrow(/submit option group 'acme' needs a store that records groups/);
    expect(() => requireGroupSupport(plain, { debounce: { delayMs: 1 } })).toThrow(UnsupportedBackend);
    expect(() => requireGroupSupport(plain, { group: null, debounce: null })).not.toThrow();
    expect(() => requireGroupSupport({ capabilities: { groups: true } }, { group: "acme", debounce: { delayMs: 1 } })).not.toThrow();
  });

  it("groupAllowance with only a rate limit, and with neither", () => {
    expect(groupAllowance({ groupConcurrency: null, groupRateLimit: { max: 3, perMs: 10 } }, 99, 1)).toBe(2);
    expect(groupAllowance({ groupConcurrency: null, groupRateLimit: null }, 99, 99)).toBe(Number.POSITIVE_INFINITY);
  });

  it("debounce input errors name the problem", () => {
    expect(() => normalizeSubmit({ name: "x", key: "k", debounce: 5 as never }, "task_0")).toThrow(/debounce must be an object/);
    expect(() => normalizeSubmit({ name: "x", key: "k", debounce: [] as never }, "task_0")).toThrow(/debounce must be an object/);
    expect(() => normalizeSubmit({ name: "x", key: "k", debounce: { delayMs: "1" } as never }, "task_0")).toThrow(/got "1"$/);
    expect(normalizeSubmit({ name: "x", key: "k", debounce: null }, "task_0").debounce).toBeNull();
  });
});
