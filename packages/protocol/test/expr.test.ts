import { describe, expect, it } from "vitest";
import { evaluate, holds, paramsOf, x } from "../src/expr.js";
import type { CompareOp, EvalScope, Expr, ParamExpr } from "../src/expr.js";

const NOW = 1_000;

function scope(row: Record<string, unknown> = {}, params: Record<string, unknown> = {}): EvalScope {
  return { row, params, nowMs: NOW };
}

function ev(expr: Expr, row: Record<string, unknown> = {}, params: Record<string, unknown> = {}): unknown {
  return evaluate(expr, scope(row, params));
}

/** Three-valued constants. */
const T = x.lit(true);
const F = x.lit(false);
const N = x.lit(null);

describe("builders", () => {
  it("build plain data nodes", () => {
    expect(x.col("status")).toEqual({ kind: "column", column: "status" });
    expect(x.param("leaseMs", "int")).toEqual({ kind: "param", name: "leaseMs", type: "int" });
    expect(x.lit(3)).toEqual({ kind: "literal", value: 3 });
    expect(x.json("{}")).toEqual({ kind: "literal", value: "{}", json: true });
    expect(x.now).toEqual({ kind: "now" });
    expect(x.add(T, F)).toEqual({ kind: "arith", op: "+", left: T, right: F });
    expect(x.sub(T, F)).toEqual({ kind: "arith", op: "-", left: T, right: F });
    expect(x.not(T)).toEqual({ kind: "not", arg: T });
    expect(x.isNull(T)).toEqual({ kind: "isNull", arg: T, negated: false });
    expect(x.notNull(T)).toEqual({ kind: "isNull", arg: T, negated: true });
    expect(x.in(T, ["a"])).toEqual({ kind: "in", arg: T, values: ["a"] });
    const list = x.param("names", "textList");
    expect(x.inList(T, list)).toEqual({ kind: "inList", arg: T, param: list, nullMeansAll: false });
    expect(x.inList(T, list, true)).toEqual({ kind: "inList", arg: T, param: list, nullMeansAll: true });
    const q = x.param("queue", "text");
    expect(x.optionalEq("queue", q)).toEqual({ kind: "optionalEq", column: "queue", param: q });
    expect(x.coalesce(N, T)).toEqual({ kind: "coalesce", args: [N, T] });
    expect(x.case([{ when: T, then: F }], N)).toEqual({ kind: "case", whens: [{ when: T, then: F }], otherwise: N });
  });

  it.each([
    ["eq", "="],
    ["ne", "<>"],
    ["lt", "<"],
    ["le", "<="],
    ["gt", ">"],
    ["ge", ">="],
  ] as const)("x.%s builds a '%s' comparison", (builder, op) => {
    expect(x[builder](T, F)).toEqual({ kind: "compare", op, left: T, right: F });
  });
});

describe("evaluate: leaves", () => {
  it("column reads the row; a missing or undefined column is null", () => {
    expect(ev(x.col("attempt"), { attempt: 2 })).toBe(2);
    expect(ev(x.col("attempt"), { attempt: null })).toBe(null);
    expect(ev(x.col("attempt"), { attempt: undefined })).toBe(null);
    expect(ev(x.col("attempt"), {})).toBe(null);
  });

  it("param reads the parameters; an undefined value is null", () => {
    const p = x.param("leaseMs", "int");
    expect(ev(p, {}, { leaseMs: 500 })).toBe(500);
    expect(ev(p, {}, { leaseMs: null })).toBe(null);
    expect(ev(p, {}, { leaseMs: undefined })).toBe(null);
    expect(ev(p, {}, { leaseMs: false })).toBe(false);
  });

  it("a parameter the operation did not supply throws, naming it", () => {
    expect(() => ev(x.param("leaseMs", "int"), {}, { other: 1 })).toThrow(/'leaseMs'/);
    expect(() => ev(x.inList(x.lit("a"), x.param("names", "textList")))).toThrow(/'names'/);
    expect(() => ev(x.optionalEq("queue", x.param("queue", "text")))).toThrow(/'queue'/);
  });

  it("literal returns its value", () => {
    for (const v of ["a", 0, 1.5, true, false, null]) expect(ev(x.lit(v))).toBe(v);
  });

  it("a JSON literal is parsed into a document (a fresh value each time)", () => {
    const lit = x.json('{"type":"LeaseExpired","details":{},"n":[1,null]}');
    const a = ev(lit);
    expect(a).toEqual({ type: "LeaseExpired", details: {}, n: [1, null] });
    expect(ev(lit)).not.toBe(a);
    expect(ev(x.json('"text"'))).toBe("text");
    expect(ev(x.json("null"))).toBe(null);
  });

  it("a non-JSON string literal is not parsed; a JSON-flagged non-string is returned as is", () => {
    expect(ev(x.lit("{}"))).toBe("{}");
    expect(ev({ kind: "literal", value: "{}", json: false })).toBe("{}");
    expect(ev({ kind: "literal", value: 7, json: true })).toBe(7);
    expect(ev({ kind: "literal", value: null, json: true })).toBe(null);
  });

  it("now is the scope's clock reading", () => {
    expect(ev(x.now)).toBe(NOW);
  });
});

describe("evaluate: arithmetic", () => {
  it("adds and subtracts", () => {
    expect(ev(x.add(x.now, x.lit(250)))).toBe(NOW + 250);
    expect(ev(x.sub(x.now, x.lit(250)))).toBe(NOW - 250);
    expect(ev(x.add(x.col("attempt"), x.lit(1)), { attempt: 2 })).toBe(3);
  });

  it("is null when either side is null", () => {
    expect(ev(x.add(N, x.lit(1)))).toBe(null);
    expect(ev(x.add(x.lit(1), N))).toBe(null);
    expect(ev(x.sub(N, N))).toBe(null);
    expect(ev(x.add(x.now, x.param("leaseMs", "int")), {}, { leaseMs: null })).toBe(null);
  });
});

describe("evaluate: comparisons", () => {
  const cases: [CompareOp, number, number, boolean][] = [
    ["=", 1, 1, true],
    ["=", 1, 2, false],
    ["<>", 1, 2, true],
    ["<>", 1, 1, false],
    ["<", 1, 2, true],
    ["<", 2, 2, false],
    ["<", 3, 2, false],
    ["<=", 1, 2, true],
    ["<=", 2, 2, true],
    ["<=", 3, 2, false],
    [">", 3, 2, true],
    [">", 2, 2, false],
    [">", 1, 2, false],
    [">=", 3, 2, true],
    [">=", 2, 2, true],
    [">=", 1, 2, false],
  ];

  it.each(cases)("%s: %d vs %d → %s", (op, a, b, want) => {
    expect(ev({ kind: "compare", op, left: x.lit(a), right: x.lit(b) })).toBe(want);
  });

  it("compares strings and booleans with = and <>", () => {
    expect(ev(x.eq(x.lit("running"), x.lit("running")))).toBe(true);
    expect(ev(x.eq(x.lit("running"), x.lit("queued")))).toBe(false);
    expect(ev(x.ne(x.lit("a"), x.lit("b")))).toBe(true);
    expect(ev(x.eq(x.lit(true), x.lit(true)))).toBe(true);
    expect(ev(x.eq(x.lit(false), x.lit(true)))).toBe(false);
    expect(ev(x.lt(x.lit("a"), x.lit("b")))).toBe(true);
  });

  it.each(["=", "<>", "<", "<=", ">", ">="] as CompareOp[])("%s with null on either side is null (unknown), never false", (op) => {
    expect(ev({ kind: "compare", op, left: N, right: x.lit(1) })).toBe(null);
    expect(ev({ kind: "compare", op, left: x.lit(1), right: N })).toBe(null);
    expect(ev({ kind: "compare", op, left: N, right: N })).toBe(null);
  });

  it("treats an undefined operand as null", () => {
    const undef = { kind: "literal", value: undefined } as unknown as Expr;
    expect(ev(x.eq(undef, x.lit(1)))).toBe(null);
    expect(ev(x.eq(x.lit(1), undef))).toBe(null);
  });

  it("= null is null even when both sides are null: use isNull", () => {
    expect(holds(x.eq(x.col("worker_id"), N), scope({ worker_id: null }))).toBe(false);
    expect(holds(x.isNull(x.col("worker_id")), scope({ worker_id: null }))).toBe(true);
  });
});

describe("evaluate: three-valued logic", () => {
  const values = [
    ["T", T, true],
    ["F", F, false],
    ["N", N, null],
  ] as const;
  // SQL's truth tables.
  const and = (a: boolean | null, b: boolean | null): boolean | null =>
    a === false || b === false ? false : a === null || b === null ? null : true;
  const or = (a: boolean | null, b: boolean | null): boolean | null =>
    a === true || b === true ? true : a === null || b === null ? null : false;

  for (const [an, ae, av] of values) {
    for (const [bn, be, bv] of values) {
      it(`${an} AND ${bn} = ${String(and(av, bv))}; ${an} OR ${bn} = ${String(or(av, bv))}`, () => {
        expect(ev(x.and(ae, be))).toBe(and(av, bv));
        expect(ev(x.or(ae, be))).toBe(or(av, bv));
      });
    }
  }

  it("NOT: T → F, F → T, N → N", () => {
    expect(ev(x.not(T))).toBe(false);
    expect(ev(x.not(F))).toBe(true);
    expect(ev(x.not(N))).toBe(null);
  });

  it("AND short-circuits on false even after an unknown; OR on true", () => {
    expect(ev(x.and(N, F, N))).toBe(false);
    expect(ev(x.or(N, T, N))).toBe(true);
    // The evaluator stops at the deciding argument: a later missing parameter is never read.
    expect(ev(x.and(F, x.param("missing", "int")))).toBe(false);
    expect(ev(x.or(T, x.param("missing", "int")))).toBe(true);
  });

  it("empty AND is true, empty OR is false", () => {
    expect(ev(x.and())).toBe(true);
    expect(ev(x.or())).toBe(false);
  });

  it("holds only on true: false, null and truthy non-booleans do not hold", () => {
    expect(holds(T, scope())).toBe(true);
    expect(holds(F, scope())).toBe(false);
    expect(holds(N, scope())).toBe(false);
    expect(holds(x.lit(1), scope())).toBe(false);
    expect(holds(x.lit("true"), scope())).toBe(false);
    expect(holds(x.not(N), scope())).toBe(false);
  });

  it("a NOT over an unknown comparison does not hold either (SQL WHERE semantics)", () => {
    const cmp = x.gt(x.col("lease_until_ms"), x.now);
    expect(holds(cmp, scope({ lease_until_ms: null }))).toBe(false);
    expect(holds(x.not(cmp), scope({ lease_until_ms: null }))).toBe(false);
  });
});

describe("evaluate: null tests", () => {
  it("isNull / notNull are two-valued", () => {
    expect(ev(x.isNull(N))).toBe(true);
    expect(ev(x.isNull(x.lit(0)))).toBe(false);
    expect(ev(x.notNull(N))).toBe(false);
    expect(ev(x.notNull(x.lit(0)))).toBe(true);
    expect(ev(x.isNull(x.col("completed_at_ms")), {})).toBe(true);
    expect(ev(x.notNull(x.col("completed_at_ms")), { completed_at_ms: 5 })).toBe(true);
    // isNull over an unknown comparison is true (the comparison's value is NULL).
    expect(ev(x.isNull(x.eq(N, x.lit(1))))).toBe(true);
  });
});

describe("evaluate: IN over literals", () => {
  it("matches a listed value, not an unlisted one; null is unknown", () => {
    const e = x.in(x.col("status"), ["queued", "running"]);
    expect(ev(e, { status: "running" })).toBe(true);
    expect(ev(e, { status: "failed" })).toBe(false);
    expect(ev(e, { status: null })).toBe(null);
    expect(ev(x.in(x.lit(2), [1, 2]))).toBe(true);
    expect(ev(x.in(x.lit("x"), []))).toBe(false);
  });
});

describe("evaluate: IN over a list parameter", () => {
  const names = x.param("names", "textList");
  const filter = x.inList(x.col("name"), names, true);
  const strict = x.inList(x.col("queue"), x.param("queues", "textList"));

  it("a null list means 'no filter' when nullMeansAll (claim names = null, §5.10)", () => {
    expect(ev(filter, { name: "alpha" }, { names: null })).toBe(true);
    expect(ev(filter, { name: null }, { names: null })).toBe(true);
    expect(ev(filter, { name: "alpha" }, { names: undefined })).toBe(true);
  });

  it("a null list is unknown without nullMeansAll", () => {
    expect(ev(strict, { queue: "default" }, { queues: null })).toBe(null);
  });

  it("an empty list never matches (claim names = [] claims nothing)", () => {
    expect(ev(filter, { name: "alpha" }, { names: [] })).toBe(false);
    expect(ev(strict, { queue: "default" }, { queues: [] })).toBe(false);
  });

  it("matches members only", () => {
    expect(ev(filter, { name: "alpha" }, { names: ["alpha", "beta"] })).toBe(true);
    expect(ev(filter, { name: "gamma" }, { names: ["alpha", "beta"] })).toBe(false);
    expect(ev(strict, { queue: "rpc" }, { queues: ["rpc"] })).toBe(true);
  });

  it("a null value with a non-null list is unknown", () => {
    expect(ev(filter, { name: null }, { names: ["alpha"] })).toBe(null);
    expect(ev(filter, {}, { names: [] })).toBe(null);
  });
});

describe("evaluate: optional equality (§2.3 'param IS NULL OR column = param')", () => {
  const e = x.optionalEq("queue", x.param("queue", "text"));

  it("a null or undefined parameter is no filter, whatever the column holds", () => {
    expect(ev(e, { queue: "rpc" }, { queue: null })).toBe(true);
    expect(ev(e, { queue: null }, { queue: null })).toBe(true);
    expect(ev(e, {}, { queue: undefined })).toBe(true);
  });

  it("a supplied parameter is plain equality", () => {
    expect(ev(e, { queue: "rpc" }, { queue: "rpc" })).toBe(true);
    expect(ev(e, { queue: "jobs" }, { queue: "rpc" })).toBe(false);
  });

  it("a null or missing column against a supplied parameter is unknown", () => {
    expect(ev(e, { queue: null }, { queue: "rpc" })).toBe(null);
    expect(ev(e, {}, { queue: "rpc" })).toBe(null);
  });
});

describe("evaluate: coalesce and case", () => {
  it("coalesce returns the first non-null argument, or null", () => {
    expect(ev(x.coalesce(N, x.lit(0), x.lit(5)))).toBe(0);
    expect(ev(x.coalesce(x.lit(false), x.lit(true)))).toBe(false);
    expect(ev(x.coalesce(x.lit("a"), x.param("missing", "text")))).toBe("a");
    expect(ev(x.coalesce(N, N))).toBe(null);
    expect(ev(x.coalesce())).toBe(null);
    expect(ev(x.coalesce(x.param("m", "text"), x.col("message")), { message: "old" }, { m: null })).toBe("old");
  });

  it("case takes the first branch that holds, else otherwise", () => {
    const e = x.case(
      [
        { when: x.eq(x.col("priority"), x.lit(1)), then: x.lit("one") },
        { when: x.eq(x.col("priority"), x.lit(2)), then: x.lit("two") },
        { when: x.gt(x.col("priority"), x.lit(0)), then: x.lit("positive") },
      ],
      x.lit("other"),
    );
    expect(ev(e, { priority: 1 })).toBe("one");
    expect(ev(e, { priority: 2 })).toBe("two");
    expect(ev(e, { priority: 3 })).toBe("positive");
    expect(ev(e, { priority: -1 })).toBe("other");
  });

  it("a case condition that is unknown does not take its branch", () => {
    const e = x.case([{ when: x.eq(x.col("priority"), x.lit(1)), then: x.lit("one") }], x.lit("else"));
    expect(ev(e, { priority: null })).toBe("else");
    expect(ev(x.case([], x.lit(9)))).toBe(9);
  });

  it("only the chosen branch's value is evaluated", () => {
    const e = x.case([{ when: T, then: x.lit("a") }], x.param("missing", "text"));
    expect(ev(e)).toBe("a");
  });
});

describe("paramsOf", () => {
  const a = x.param("a", "int");
  const b = x.param("b", "text");
  const c = x.param("c", "bool");
  const d = x.param("d", "float");
  const list = x.param("list", "textList");
  const opt = x.param("opt", "text");

  function names(expr: Expr): string[] {
    return [...paramsOf(expr).keys()].sort();
  }

  it("finds none in leaves without parameters", () => {
    expect(names(x.col("id"))).toEqual([]);
    expect(names(x.lit(1))).toEqual([]);
    expect(names(x.now)).toEqual([]);
  });

  it("finds a bare parameter with its type", () => {
    expect(paramsOf(a)).toEqual(new Map([["a", a]]));
  });

  it("walks both sides of arithmetic and comparisons", () => {
    expect(names(x.add(a, b))).toEqual(["a", "b"]);
    expect(names(x.sub(x.now, a))).toEqual(["a"]);
    expect(names(x.eq(a, b))).toEqual(["a", "b"]);
  });

  it("walks and/or/coalesce arguments", () => {
    expect(names(x.and(a, x.or(b, c)))).toEqual(["a", "b", "c"]);
    expect(names(x.coalesce(d, x.col("progress")))).toEqual(["d"]);
  });

  it("walks not/isNull/in arguments", () => {
    expect(names(x.not(a))).toEqual(["a"]);
    expect(names(x.isNull(b))).toEqual(["b"]);
    expect(names(x.notNull(b))).toEqual(["b"]);
    expect(names(x.in(c, ["x"]))).toEqual(["c"]);
  });

  it("includes the list parameter of inList and its argument's", () => {
    expect(paramsOf(x.inList(x.col("name"), list, true))).toEqual(new Map([["list", list]]));
    expect(names(x.inList(a, list))).toEqual(["a", "list"]);
  });

  it("includes the parameter of optionalEq", () => {
    expect(paramsOf(x.optionalEq("queue", opt))).toEqual(new Map([["opt", opt]]));
  });

  it("walks every when, then and the otherwise of a case", () => {
    expect(names(x.case([{ when: a, then: b }, { when: c, then: x.lit(1) }], d))).toEqual(["a", "b", "c", "d"]);
  });

  it("walks the condition of a parent", () => {
    expect(names(x.parent(x.eq(x.col("queue"), a)))).toEqual(["a"]);
  });

  it("lists a parameter read twice once, and accumulates into a given map", () => {
    expect(names(x.and(a, a, x.eq(a, x.lit(1))))).toEqual(["a"]);
    const into = new Map<string, ParamExpr>([["z", x.param("z", "json")]]);
    const out = paramsOf(x.eq(a, b), into);
    expect(out).toBe(into);
    expect([...out.keys()].sort()).toEqual(["a", "b", "z"]);
  });
});

describe("parent: EXISTS a parent row on which the condition holds", () => {
  const queued = { id: "p1", status: "queued" };
  const done = { id: "p2", status: "succeeded" };
  const rows = new Map<string, Record<string, unknown>>([
    ["p1", queued],
    ["p2", done],
  ]);
  const live = x.parent(x.in(x.col("status"), ["queued", "running"]));
  const withRows = (row: Record<string, unknown>, where: Expr = live): unknown =>
    evaluate(where, { row, params: {}, nowMs: NOW, rowById: (id) => rows.get(id) });

  it("builds a plain data node", () => {
    expect(x.parent(T)).toEqual({ kind: "parent", where: T });
  });

  it("reads the parent's columns, not the row's", () => {
    expect(withRows({ status: "succeeded", parent_id: "p1" })).toBe(true);
    expect(withRows({ status: "queued", parent_id: "p2" })).toBe(false);
  });

  it("is false, never null, without a parent, for a purged parent, or when the condition is unknown", () => {
    expect(withRows({ parent_id: null })).toBe(false);
    expect(withRows({})).toBe(false);
    expect(withRows({ parent_id: "gone" })).toBe(false);
    expect(withRows({ parent_id: "p1" }, x.parent(N))).toBe(false);
    expect(withRows({ parent_id: "p1" }, x.not(live))).toBe(false);
  });

  it("needs a row lookup in the scope", () => {
    expect(() => ev(live, { parent_id: "p1" })).toThrow(/rowById/);
  });
});
