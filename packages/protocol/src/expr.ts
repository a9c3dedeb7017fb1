import type { TaskColumn } from "./task.js";

/**
 * A tiny expression language for protocol rules.
 *
 * Each transition of protocol v1 is written once as data built from these
 * nodes. The same definition is evaluated in memory by {@link evaluate} (unit
 * tests, the in-memory store) and compiled by a SQL store into one conditional
 * statement, so the rule a store runs is the rule this package tests. The
 * semantics follow SQL: comparisons with `null` are `null` (unknown), and a
 * guard or branch condition holds only when it is `true`.
 */
export type Expr =
  | ColumnExpr
  | ParamExpr
  | LiteralExpr
  | NowExpr
  | ArithExpr
  | CompareExpr
  | AndExpr
  | OrExpr
  | NotExpr
  | IsNullExpr
  | InExpr
  | InListExpr
  | OptionalEqExpr
  | CoalesceExpr
  | CaseExpr
  | ParentExpr;

/** The current value of a column of the row being decided on. */
export interface ColumnExpr {
  readonly kind: "column";
  readonly column: TaskColumn;
}

/**
 * How a parameter is bound: stores map each type to their dialect (§2.3),
 * e.g. `bool` is 0/1 on SQLite and a native boolean on Postgres, `json` is
 * text (cast to jsonb on Postgres), `textList` a JSON array or `text[]`.
 */
export type ParamType = "text" | "int" | "float" | "bool" | "json" | "textList";

/** A value supplied by the caller of the operation (named, typed). */
export interface ParamExpr {
  readonly kind: "param";
  readonly name: string;
  readonly type: ParamType;
}

/** A constant. */
export interface LiteralExpr {
  readonly kind: "literal";
  readonly value: string | number | boolean | null;
  /** Set when the literal is a JSON document (stored in a JSON column). */
  readonly json?: boolean;
}

/**
 * The operation's clock reading in epoch milliseconds: the SDK clock on
 * SQLite, the database clock on Postgres (§2.1). One reading per statement.
 */
export interface NowExpr {
  readonly kind: "now";
}

/** Integer arithmetic (used for `now + lease_ms`, `now - older_than_ms`). */
export interface ArithExpr {
  readonly kind: "arith";
  readonly op: "+" | "-";
  readonly left: Expr;
  readonly right: Expr;
}

/** The comparison operators rules use. */
export type CompareOp = "=" | "<>" | "<" | "<=" | ">" | ">=";

/** A comparison; `null` on either side yields `null`, as in SQL. */
export interface CompareExpr {
  readonly kind: "compare";
  readonly op: CompareOp;
  readonly left: Expr;
  readonly right: Expr;
}

/** Three-valued AND. */
export interface AndExpr {
  readonly kind: "and";
  readonly args: readonly Expr[];
}

/** Three-valued OR. */
export interface OrExpr {
  readonly kind: "or";
  readonly args: readonly Expr[];
}

/** Three-valued NOT. */
export interface NotExpr {
  readonly kind: "not";
  readonly arg: Expr;
}

/** `arg IS NULL` (or `IS NOT NULL` when `negated`). */
export interface IsNullExpr {
  readonly kind: "isNull";
  readonly arg: Expr;
  readonly negated: boolean;
}

/** `arg IN (literal, …)` over a fixed list of literals. */
export interface InExpr {
  readonly kind: "in";
  readonly arg: Expr;
  readonly values: readonly (string | number)[];
}

/**
 * `arg IN (:list)` over a list parameter. When `nullMeansAll` is set, a null
 * list means "no filter" (the `names` filter of claim, §5.10); an empty list
 * never matches. Stores SHOULD compile a one-element list to plain equality
 * (§2.3) and drop the condition for a null `nullMeansAll` list.
 */
export interface InListExpr {
  readonly kind: "inList";
  readonly arg: Expr;
  readonly param: ParamExpr;
  readonly nullMeansAll: boolean;
}

/**
 * An optional equality filter: `column = :param`, or no filter at all when the
 * parameter is null (the "param IS NULL OR column = param" form of §2.3, which
 * stores SHOULD compile to a plain equality or nothing).
 */
export interface OptionalEqExpr {
  readonly kind: "optionalEq";
  readonly column: TaskColumn;
  readonly param: ParamExpr;
}

/** The first non-null argument. */
export interface CoalesceExpr {
  readonly kind: "coalesce";
  readonly args: readonly Expr[];
}

/** `CASE WHEN … THEN … ELSE … END`. */
export interface CaseExpr {
  readonly kind: "case";
  readonly whens: readonly { readonly when: Expr; readonly then: Expr }[];
  readonly otherwise: Expr;
}

/**
 * `EXISTS` a parent row: true when the row's `parent_id` names a task that
 * exists and `where` holds on that task's row (columns inside `where` read the
 * parent); false otherwise (no parent, parent purged, `where` false or null) —
 * never null, as SQL's `EXISTS`. A SQL store compiles it to a correlated
 * subquery that finds the parent by primary key; the evaluator reads the
 * parent through {@link EvalScope.rowById}. Not nestable.
 */
export interface ParentExpr {
  readonly kind: "parent";
  readonly where: Expr;
}

/** Builders for {@link Expr} nodes, so rules read close to the spec's prose. */
export const x = {
  col: (column: TaskColumn): ColumnExpr => ({ kind: "column", column }),
  param: (name: string, type: ParamType): ParamExpr => ({ kind: "param", name, type }),
  lit: (value: string | number | boolean | null): LiteralExpr => ({ kind: "literal", value }),
  json: (value: string): LiteralExpr => ({ kind: "literal", value, json: true }),
  now: { kind: "now" } as NowExpr,
  add: (left: Expr, right: Expr): ArithExpr => ({ kind: "arith", op: "+", left, right }),
  sub: (left: Expr, right: Expr): ArithExpr => ({ kind: "arith", op: "-", left, right }),
  eq: (left: Expr, right: Expr): CompareExpr => ({ kind: "compare", op: "=", left, right }),
  ne: (left: Expr, right: Expr): CompareExpr => ({ kind: "compare", op: "<>", left, right }),
  lt: (left: Expr, right: Expr): CompareExpr => ({ kind: "compare", op: "<", left, right }),
  le: (left: Expr, right: Expr): CompareExpr => ({ kind: "compare", op: "<=", left, right }),
  gt: (left: Expr, right: Expr): CompareExpr => ({ kind: "compare", op: ">", left, right }),
  ge: (left: Expr, right: Expr): CompareExpr => ({ kind: "compare", op: ">=", left, right }),
  and: (...args: Expr[]): AndExpr => ({ kind: "and", args }),
  or: (...args: Expr[]): OrExpr => ({ kind: "or", args }),
  not: (arg: Expr): NotExpr => ({ kind: "not", arg }),
  isNull: (arg: Expr): IsNullExpr => ({ kind: "isNull", arg, negated: false }),
  notNull: (arg: Expr): IsNullExpr => ({ kind: "isNull", arg, negated: true }),
  in: (arg: Expr, values: readonly (string | number)[]): InExpr => ({ kind: "in", arg, values }),
  inList: (arg: Expr, param: ParamExpr, nullMeansAll = false): InListExpr => ({ kind: "inList", arg, param, nullMeansAll }),
  optionalEq: (column: TaskColumn, param: ParamExpr): OptionalEqExpr => ({ kind: "optionalEq", column, param }),
  coalesce: (...args: Expr[]): CoalesceExpr => ({ kind: "coalesce", args }),
  case: (whens: { when: Expr; then: Expr }[], otherwise: Expr): CaseExpr => ({ kind: "case", whens, otherwise }),
  parent: (where: Expr): ParentExpr => ({ kind: "parent", where }),
} as const;

/** A value an expression evaluates to in memory. */
export type Value = unknown;

/** What {@link evaluate} reads: the row, the parameters and the clock. */
export interface EvalScope {
  readonly row: Readonly<Record<string, unknown>>;
  readonly params: Readonly<Record<string, unknown>>;
  readonly nowMs: number;
  /**
   * The row of the task with this id, or `undefined` when there is none: what a
   * {@link ParentExpr} reads. Only rules that read a parent need it.
   */
  readonly rowById?: (id: string) => Readonly<Record<string, unknown>> | undefined;
}

function compare(op: CompareOp, a: unknown, b: unknown): boolean | null {
  if (a === null || a === undefined || b === null || b === undefined) return null;
  switch (op) {
    case "=":
      return a === b;
    case "<>":
      return a !== b;
    case "<":
      return (a as number) < (b as number);
    case "<=":
      return (a as number) <= (b as number);
    case ">":
      return (a as number) > (b as number);
    case ">=":
      return (a as number) >= (b as number);
  }
}

function param(scope: EvalScope, name: string): unknown {
  if (!(name in scope.params)) {
    throw new Error(`protocol rule reads parameter '${name}', which the operation did not supply`);
  }
  const value = scope.params[name];
  return value === undefined ? null : value;
}

/**
 * Evaluates an expression against one row with SQL's three-valued logic.
 *
 * @example
 * evaluate(x.gt(x.col("lease_until_ms"), x.now), { row, params: {}, nowMs: Date.now() })
 */
export function evaluate(expr: Expr, scope: EvalScope): Value {
  switch (expr.kind) {
    case "column": {
      const value = scope.row[expr.column];
      return value === undefined ? null : value;
    }
    case "param":
      return param(scope, expr.name);
    case "literal":
      return expr.json === true && typeof expr.value === "string" ? JSON.parse(expr.value) : expr.value;
    case "now":
      return scope.nowMs;
    case "arith": {
      const a = evaluate(expr.left, scope);
      const b = evaluate(expr.right, scope);
      if (a === null || b === null) return null;
      return expr.op === "+" ? (a as number) + (b as number) : (a as number) - (b as number);
    }
    case "compare":
      return compare(expr.op, evaluate(expr.left, scope), evaluate(expr.right, scope));
    case "and": {
      let unknown = false;
      for (const arg of expr.args) {
        const v = evaluate(arg, scope);
        if (v === false) return false;
        if (v === null) unknown = true;
      }
      return unknown ? null : true;
    }
    case "or": {
      let unknown = false;
      for (const arg of expr.args) {
        const v = evaluate(arg, scope);
        if (v === true) return true;
        if (v === null) unknown = true;
      }
      return unknown ? null : false;
    }
    case "not": {
      const v = evaluate(expr.arg, scope);
      return v === null ? null : !v;
    }
    case "isNull": {
      const isNull = evaluate(expr.arg, scope) === null;
      return expr.negated ? !isNull : isNull;
    }
    case "in": {
      const v = evaluate(expr.arg, scope);
      if (v === null) return null;
      return expr.values.includes(v as string | number);
    }
    case "inList": {
      const list = param(scope, expr.param.name);
      if (list === null) return expr.nullMeansAll ? true : null;
      const v = evaluate(expr.arg, scope);
      if (v === null) return null;
      return (list as readonly unknown[]).includes(v);
    }
    case "optionalEq": {
      const wanted = param(scope, expr.param.name);
      if (wanted === null) return true;
      return compare("=", scope.row[expr.column] ?? null, wanted);
    }
    case "coalesce": {
      for (const arg of expr.args) {
        const v = evaluate(arg, scope);
        if (v !== null) return v;
      }
      return null;
    }
    case "case": {
      for (const branch of expr.whens) {
        if (evaluate(branch.when, scope) === true) return evaluate(branch.then, scope);
      }
      return evaluate(expr.otherwise, scope);
    }
    case "parent": {
      if (scope.rowById === undefined) throw new Error("protocol rule reads the parent row, and the evaluation scope has no rowById");
      const parentId = scope.row.parent_id;
      const parent = typeof parentId === "string" ? scope.rowById(parentId) : undefined;
      if (parent === undefined) return false;
      return holds(expr.where, { ...scope, row: parent });
    }
  }
}

/** True only when the condition evaluates to `true` (not `false`, not `null`), as a SQL WHERE does. */
export function holds(expr: Expr, scope: EvalScope): boolean {
  return evaluate(expr, scope) === true;
}

/** Every parameter an expression reads, by name (for stores that bind parameters by position). */
export function paramsOf(expr: Expr, into: Map<string, ParamExpr> = new Map()): Map<string, ParamExpr> {
  switch (expr.kind) {
    case "param":
      into.set(expr.name, expr);
      break;
    case "arith":
    case "compare":
      paramsOf(expr.left, into);
      paramsOf(expr.right, into);
      break;
    case "and":
    case "or":
    case "coalesce":
      for (const arg of expr.args) paramsOf(arg, into);
      break;
    case "not":
    case "isNull":
    case "in":
      paramsOf(expr.arg, into);
      break;
    case "inList":
      paramsOf(expr.arg, into);
      into.set(expr.param.name, expr.param);
      break;
    case "optionalEq":
      into.set(expr.param.name, expr.param);
      break;
    case "case":
      for (const branch of expr.whens) {
        paramsOf(branch.when, into);
        paramsOf(branch.then, into);
      }
      paramsOf(expr.otherwise, into);
      break;
    case "parent":
      paramsOf(expr.where, into);
      break;
    case "column":
    case "literal":
    case "now":
      break;
  }
  return into;
}
