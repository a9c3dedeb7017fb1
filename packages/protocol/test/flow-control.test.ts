import { describe, expect, it } from "vitest";
import { evaluate } from "../src/expr.js";
import {
  claimFlowControl,
  FLOW_LOCK_PREFIX,
  flowAllowance,
  flowLimitedDraws,
  flowLockKey,
  inRateWindow,
  normalizeFlowControl,
  rateWindowStartMs,
  RUNNING_OF_NAME,
} from "../src/flow-control.js";
import type { DrawPlanner } from "../src/flow-control.js";
import { InvalidArgument } from "../src/errors.js";
import type { ClaimDraw } from "../src/store.js";
import type { Task } from "../src/task.js";

const row = (name: string): Task => ({ name }) as Task;

describe("normalizeFlowControl", () => {
  it("accepts either limit or both, frozen; nothing set is null", () => {
    expect(normalizeFlowControl({ globalConcurrency: 2 })).toEqual({ globalConcurrency: 2, rateLimit: null });
    expect(normalizeFlowControl({ rateLimit: { max: 3, perMs: 1000 } })).toEqual({ globalConcurrency: null, rateLimit: { max: 3, perMs: 1000 } });
    expect(Object.isFrozen(normalizeFlowControl({ globalConcurrency: 1, rateLimit: { max: 1, perMs: 1 } }))).toBe(true);
    expect(normalizeFlowControl(undefined)).toBeNull();
    expect(normalizeFlowControl(null)).toBeNull();
    expect(normalizeFlowControl({})).toBeNull();
  });

  it.each([
    [[], "flowControl must be an object"],
    [null as unknown as object, null],
    [{ globalConcurrency: 0 }, "flowControl.globalConcurrency must be an integer from 1"],
    [{ globalConcurrency: 1.5 }, "globalConcurrency must be an integer"],
    [{ globalConcurrency: "2" }, 'got "2"'],
    [{ concurrency: 2 }, "has no option 'concurrency'; valid options are globalConcurrency, rateLimit"],
    [{ rateLimit: 5 }, "rateLimit must be an object { max, perMs }"],
    [{ rateLimit: null }, "got null"],
    [{ rateLimit: { max: 1 } }, "needs both max and perMs"],
    [{ rateLimit: { max: 1, perMs: 10, burst: 2 } }, "has no option 'burst'"],
    [{ rateLimit: { max: 0, perMs: 10 } }, "rateLimit.max must be an integer"],
    [{ rateLimit: { max: 1, perMs: 2 ** 31 } }, "rateLimit.perMs must be an integer from 1 to 2147483647"],
  ])("rejects %j", (input, message) => {
    if (message === null) return expect(normalizeFlowControl(input)).toBeNull();
    expect(() => normalizeFlowControl(input)).toThrow(InvalidArgument);
    expect(() => normalizeFlowControl(input)).toThrow(message);
  });
});

describe("claimFlowControl", () => {
  it("maps names to limits, leaving out names without any", () => {
    const map = claimFlowControl({ flowControl: { a: { globalConcurrency: 1 }, b: {} } });
    expect(map === null ? null : [...map.keys()]).toEqual(["a"]);
    expect(claimFlowControl({})).toBeNull();
    expect(claimFlowControl({ flowControl: null })).toBeNull();
    expect(claimFlowControl({ flowControl: { b: {} } })).toBeNull();
  });

  it("names the offending entry", () => {
    expect(() => claimFlowControl({ flowControl: { a: { globalConcurrency: -1 } } })).toThrow("flowControl['a'].globalConcurrency");
    expect(() => claimFlowControl({ flowControl: { "": { globalConcurrency: 1 } } })).toThrow("non-empty");
    expect(() => claimFlowControl({ flowControl: [] as never })).toThrow(InvalidArgument);
  });
});

describe("the rules", () => {
  it("locks per name under its own prefix", () => {
    expect(flowLockKey("email")).toBe(`${FLOW_LOCK_PREFIX}email`);
  });

  it("counts running rows with a lease of the name only", () => {
    const scope = (r: Partial<Task>) => ({ row: { status: "running", lease_until_ms: 5, name: "a", ...r } as never, params: { name: "a" }, nowMs: 0 });
    expect(evaluate(RUNNING_OF_NAME, scope({}))).toBe(true);
    expect(evaluate(RUNNING_OF_NAME, scope({ name: "b" }))).toBe(false);
    expect(evaluate(RUNNING_OF_NAME, scope({ status: "queued", lease_until_ms: null }))).toBe(false);
  });

  it("the window is (now − perMs, now]", () => {
    expect(inRateWindow(901, 1000, 100)).toBe(true);
    expect(inRateWindow(900, 1000, 100)).toBe(false);
    expect(inRateWindow(1000, 1000, 100)).toBe(true);
    expect(rateWindowStartMs(1000, 100)).toBe(900);
  });

  it("the allowance is the tighter limit, floored at 0", () => {
    expect(flowAllowance({ globalConcurrency: 3, rateLimit: null }, 1, 99)).toBe(2);
    expect(flowAllowance({ globalConcurrency: null, rateLimit: { max: 5, perMs: 1 } }, 99, 4)).toBe(1);
    expect(flowAllowance({ globalConcurrency: 3, rateLimit: { max: 5, perMs: 1 } }, 0, 4)).toBe(1);
    expect(flowAllowance({ globalConcurrency: 1, rateLimit: null }, 4, 0)).toBe(0);
  });
});

/** Runs a wrapped planner the way a store does, drawing `available` rows per name. */
function drive(planner: DrawPlanner, available: Record<string, number>): { draws: ClaimDraw[]; claimed: Task[] } {
  const claimed: Task[] = [];
  const draws: ClaimDraw[] = [];
  for (let index = 0; index < 50; index++) {
    const draw = planner(claimed, index);
    if (draw === null) break;
    draws.push(draw);
    let left = draw.limit;
    for (const name of draw.names ?? []) {
      while (left > 0 && (available[name] ?? 0) > 0) {
        available[name] = (available[name] ?? 0) - 1;
        claimed.push(row(name));
        left--;
      }
    }
  }
  return { draws, claimed };
}

describe("flowLimitedDraws", () => {
  it("splits a draw into its unlimited names, then each limited name capped by its allowance and what is left", () => {
    const inner: DrawPlanner = (_rows, index) => (index === 0 ? { names: ["a", "free", "b"], limit: 5 } : null);
    const allowance = new Map([
      ["a", 1],
      ["b", 10],
    ]);
    const { draws, claimed } = drive(flowLimitedDraws(inner, allowance), { a: 5, free: 2, b: 5 });
    expect(draws).toEqual([
      { names: ["free"], limit: 5 },
      { names: ["a"], limit: 1 },
      { names: ["b"], limit: 2 },
    ]);
    expect(claimed.map((t) => t.name)).toEqual(["free", "free", "a", "b", "b"]);
    expect(allowance.get("a")).toBe(0);
    expect(allowance.get("b")).toBe(8);
  });

  it("consumes the allowance across draws and caps at 0 once it is spent", () => {
    const inner: DrawPlanner = (_rows, index) => (index < 3 ? { names: ["a"], limit: 2 } : null);
    const allowance = new Map([["a", 3]]);
    const { draws, claimed } = drive(flowLimitedDraws(inner, allowance), { a: 10 });
    expect(draws.map((d) => d.limit)).toEqual([2, 1, 0]);
    expect(claimed).toHaveLength(3);
  });

  it("treats a name missing from the allowance map as unlimited, an empty draw as empty, and rejects names: null", () => {
    const empty: DrawPlanner = (_rows, index) => (index === 0 ? { names: [], limit: 3 } : null);
    expect(drive(flowLimitedDraws(empty, new Map([["a", 1]])), {}).draws).toEqual([{ names: [], limit: 0 }]);
    const any: DrawPlanner = () => ({ names: null, limit: 1 });
    expect(() => flowLimitedDraws(any, new Map([["a", 1]]))([], 0)).toThrow("must name the task names");
  });

  it("passes an inner draw's `last` to the last of its parts only", () => {
    const inner: DrawPlanner = (_rows, index) => (index === 0 ? { names: ["a", "free", "b"], limit: 5, last: true } : null);
    const allowance = new Map([
      ["a", 1],
      ["b", 10],
    ]);
    const { draws } = drive(flowLimitedDraws(inner, allowance), { a: 5, free: 2, b: 5 });
    expect(draws).toEqual([
      { names: ["free"], limit: 5 },
      { names: ["a"], limit: 1 },
      { names: ["b"], limit: 2, last: true },
    ]);
    const single: DrawPlanner = (_rows, index) => (index === 0 ? { names: ["a"], limit: 2, last: true } : null);
    expect(drive(flowLimitedDraws(single, new Map([["a", 1]])), { a: 5 }).draws).toEqual([{ names: ["a"], limit: 1, last: true }]);
  });

  it("never caps below 0 when a negative allowance shows up", () => {
    const inner: DrawPlanner = (_rows, index) => (index === 0 ? { names: ["a"], limit: 2 } : null);
    expect(drive(flowLimitedDraws(inner, new Map([["a", -3]])), { a: 3 }).draws).toEqual([{ names: ["a"], limit: 0 }]);
  });
});
