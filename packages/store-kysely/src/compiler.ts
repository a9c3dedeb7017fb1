/**
 * The compiler from protocol rules (`Expr` trees) to SQL text with numbered
 * positional parameters.
 *
 * Terminology:
 * - **shape**: which parameters of a statement are null and, for list
 *   parameters, whether they hold exactly one element. Statements are
 *   compiled once per (template, shape) and cached, because the SQL differs
 *   by shape: a null optional filter drops its condition, a one-element list
 *   becomes `col = ?`, a null `nullMeansAll` list drops the condition (§2.3:
 *   only plain equality lets SQLite read the claim indexes in order).
 * - **bind**: what fills one placeholder at execution: a named parameter
 *   (converted by the dialect, §2.3), the first element of a one-element
 *   list, or the process clock (`now`, read once per execution, §2.1).
 *
 * Knowing the nullness of every parameter lets the compiler fold constants:
 * `:attempt IS NULL OR attempt = :attempt` becomes `attempt = ?` or nothing,
 * `coalesce(:progress, progress)` with a null parameter becomes `progress`.
 * The folding follows SQL's three-valued logic exactly, so the compiled
 * statement decides what `evaluate` decides for the same row and parameters.
 */
import type { Clock, Expr, ParamExpr, Params, ParamType } from "@cairnq/protocol/adapter";
import { paramsOf } from "@cairnq/protocol/adapter";
import { CompiledQuery } from "kysely";
import type { StoreClock } from "./clock.js";
import type { Row } from "./executor.js";
import type { SqlSyntax } from "./sql-syntax.js";
import { TASKS_TABLE } from "./tables.js";

/** What fills one placeholder when a compiled statement runs. */
export type Bind =
  | { readonly kind: "param"; readonly name: string; readonly type: ParamType }
  | { readonly kind: "first"; readonly name: string }
  | { readonly kind: "now" }
  /** A multi-row statement's rows: the values of `params` of every row, as the dialect binds a row set. */
  | { readonly kind: "rows"; readonly params: readonly ParamExpr[] }
  /** One parameter of every row of a multi-row statement, as one array (one placeholder per parameter). */
  | { readonly kind: "column"; readonly name: string; readonly type: ParamType };

/**
 * One character per parameter: `n` null, `v` a value, `1` a one-element list, `*` any other list,
 * `r` a per-row value of a multi-row statement (null or not, decided per row in the database).
 */
type ShapeChar = "n" | "v" | "1" | "*" | "r";

/**
 * The parameter under which a multi-row statement receives its rows: `{ [BATCH_ROWS]: rows }`,
 * each row a `Params` of the single-row operation.
 */
export const BATCH_ROWS = "#rows";

/**
 * A statement compiled for one shape: fixed SQL text plus the recipe for its
 * parameters. Running it only materializes parameters; the SQL is never
 * rebuilt.
 */
export class CompiledStatement {
  /**
   * @param sql - The statement text, with the dialect's numbered placeholders.
   * @param binds - What fills placeholder `i + 1`.
   */
  constructor(
    readonly sql: string,
    readonly binds: readonly Bind[],
    private readonly syntax: SqlSyntax,
    private readonly clock: StoreClock,
  ) {}

  /**
   * The parameter values for `params`, reading the process clock at most once.
   *
   * @param nowMs - The process clock's reading to bind as `now` instead of reading it here (a caller
   *   that needs to know the `now` the statement ran with reads it once and passes it).
   */
  parameters(params: Params, nowMs?: number): unknown[] {
    const out: unknown[] = new Array(this.binds.length);
    let now: number | undefined = nowMs;
    for (let i = 0; i < this.binds.length; i++) {
      const bind = this.binds[i] as Bind;
      switch (bind.kind) {
        case "now":
          now ??= this.clock.nowMs();
          out[i] = now;
          break;
        case "first":
          out[i] = (param(params, bind.name) as readonly unknown[])[0];
          break;
        case "param":
          out[i] = this.syntax.bindValue(param(params, bind.name), bind.type);
          break;
        case "rows":
          out[i] = this.syntax.batchRows(batchRows(params), bind.params);
          break;
        case "column":
          out[i] = this.syntax.batchColumn(batchRows(params), bind.name, bind.type);
          break;
      }
    }
    return out;
  }

  /** A Kysely query for `params`, ready for `executeQuery`; call it when the statement runs. */
  query(params: Params, nowMs?: number): CompiledQuery<Row> {
    return CompiledQuery.raw(this.sql, this.parameters(params, nowMs));
  }
}

function batchRows(params: Params): readonly Params[] {
  const rows = params[BATCH_ROWS];
  if (!Array.isArray(rows)) throw new Error("a multi-row statement runs with { [BATCH_ROWS]: rows }");
  return rows as readonly Params[];
}

function param(params: Params, name: string): unknown {
  if (!(name in params)) {
    throw new Error(`the statement reads parameter '${name}', which the operation did not supply`);
  }
  return params[name];
}

/** The parent row's alias in a parent condition's subquery. */
const PARENT_ALIAS = "cq_parent";

/** Operator precedence of a fragment, loosest first; a child looser than its slot is parenthesized. */
const Prec = { Or: 1, And: 2, Not: 3, Compare: 4, Add: 5, Atom: 6 } as const;
type Prec = (typeof Prec)[keyof typeof Prec];

/** A compiled sub-expression. `known` is set when its value is a compile-time constant. */
export interface Fragment {
  readonly sql: string;
  readonly prec: Prec;
  readonly known?: true | false | null;
  /** True when the value is known to be non-null (a bound value, a non-null literal, `now`). */
  readonly nonNull?: boolean;
}

/**
 * Compiles expressions for one statement and one shape, collecting binds.
 * Create one per statement compilation; {@link StatementCompiler} does.
 */
export class ExprCompiler {
  readonly binds: Bind[] = [];
  /** The alias columns are read through while compiling a parent condition; `null` for the row itself. */
  #qualifier: string | null = null;
  readonly #slots = new Map<string, number>();
  readonly #TRUE: Fragment;
  readonly #FALSE: Fragment;
  readonly #NULL: Fragment;

  /**
   * @param syntax - The dialect's SQL bits.
   * @param shape - Parameter name → its shape character.
   * @param nowSql - The SQL of `now` for this statement's clock, or `null` to bind the process clock.
   */
  constructor(
    private readonly syntax: SqlSyntax,
    private readonly shape: ReadonlyMap<string, ShapeChar>,
    private readonly nowSql: string | null,
  ) {
    this.#TRUE = { sql: syntax.literal(true), prec: Prec.Atom, known: true, nonNull: true };
    this.#FALSE = { sql: syntax.literal(false), prec: Prec.Atom, known: false, nonNull: true };
    this.#NULL = { sql: "NULL", prec: Prec.Atom, known: null };
  }

  /** The SQL of a boolean condition, or `null` when it is constantly true (no WHERE needed). */
  condition(expr: Expr): string | null {
    const f = this.expr(expr);
    return f.known === true ? null : f.sql;
  }

  /** The SQL of a value expression. */
  value(expr: Expr): string {
    return this.expr(expr).sql;
  }

  /** True when `param` holds a value (is not null) in this shape. */
  has(param: ParamExpr): boolean {
    return this.#shapeOf(param) !== "n";
  }

  /**
   * True when the list parameter `param` is bound, in this shape, to a list that is not compiled as
   * plain equality: any list but a one-element one (`inList` then reads it through {@link SqlSyntax.inList}).
   */
  isList(param: ParamExpr): boolean {
    return this.#shapeOf(param) === "*";
  }

  /** A placeholder for `param`, which must be non-null in this shape (used for LIMIT/OFFSET). */
  slot(param: ParamExpr): string {
    if (this.#shapeOf(param) === "r") return this.syntax.batchRef(param);
    return this.#slot(param.name, { kind: "param", name: param.name, type: param.type }, param.type);
  }

  /**
   * The FROM item of a multi-row statement: one row per element of the bound row set, a column per
   * per-row parameter (see {@link SqlSyntax.batchSource}). Call it before compiling any expression, so
   * the row set takes the first placeholders.
   */
  batchSource(params: readonly ParamExpr[]): string {
    return this.syntax.batchSource(params, (key, bind) => this.#index(key, bind));
  }

  /** A placeholder for `now` (or its SQL when the clock is the database's). */
  now(): string {
    return this.nowSql ?? this.#slot("#now", { kind: "now" }, "int");
  }

  #slot(key: string, bind: Bind, type: ParamType): string {
    return this.syntax.placeholder(this.#index(key, bind), type);
  }

  #index(key: string, bind: Bind): number {
    let index = this.#slots.get(key);
    if (index === undefined) {
      this.binds.push(bind);
      index = this.binds.length;
      this.#slots.set(key, index);
    }
    return index;
  }

  #shapeOf(param: ParamExpr): ShapeChar {
    const shape = this.shape.get(param.name);
    if (shape === undefined) throw new Error(`parameter '${param.name}' is missing from the statement's shape`);
    return shape;
  }

  #paramFragment(param: ParamExpr): Fragment {
    const shape = this.#shapeOf(param);
    if (shape === "n") return this.#NULL;
    // A per-row value: its nullness is the row's, so nothing folds.
    if (shape === "r") return { sql: this.syntax.batchRef(param), prec: Prec.Atom };
    return { sql: this.slot(param), prec: Prec.Atom, nonNull: true };
  }

  #wrap(f: Fragment, min: Prec): string {
    return f.prec < min ? `(${f.sql})` : f.sql;
  }

  #bool(value: boolean | null): Fragment {
    return value === null ? this.#NULL : value ? this.#TRUE : this.#FALSE;
  }

  /** Compiles one expression, folding what the shape makes constant. */
  expr(expr: Expr): Fragment {
    switch (expr.kind) {
      case "column":
        return { sql: this.#column(expr.column), prec: Prec.Atom };
      case "param":
        return this.#paramFragment(expr);
      case "literal": {
        const value = expr.value;
        if (value === null) return this.#NULL;
        if (typeof value === "boolean") return this.#bool(value);
        const sql = expr.json === true ? this.syntax.jsonLiteral(String(value)) : this.syntax.literal(value);
        return { sql, prec: Prec.Atom, nonNull: true };
      }
      case "now":
        return { sql: this.now(), prec: this.nowSql === null ? Prec.Atom : Prec.Add, nonNull: true };
      case "arith": {
        const left = this.expr(expr.left);
        const right = this.expr(expr.right);
        if (left.known === null || right.known === null) return this.#NULL;
        return {
          sql: `${this.#wrap(left, Prec.Add)} ${expr.op} ${this.#wrap(right, Prec.Atom)}`,
          prec: Prec.Add,
          nonNull: left.nonNull === true && right.nonNull === true,
        };
      }
      case "compare": {
        const left = this.expr(expr.left);
        const right = this.expr(expr.right);
        if (left.known === null || right.known === null) return this.#NULL;
        if (left.known !== undefined && right.known !== undefined && (expr.op === "=" || expr.op === "<>")) {
          return this.#bool(expr.op === "=" ? left.known === right.known : left.known !== right.known);
        }
        return {
          sql: `${this.#wrap(left, Prec.Add)} ${expr.op} ${this.#wrap(right, Prec.Add)}`,
          prec: Prec.Compare,
          nonNull: left.nonNull === true && right.nonNull === true,
        };
      }
      case "and":
      case "or": {
        const and = expr.kind === "and";
        const absorbing = !and; // AND: a false argument decides; OR: a true one.
        const parts: Fragment[] = [];
        for (const arg of expr.args) {
          const f = this.expr(arg);
          if (f.known === absorbing) return this.#bool(absorbing);
          if (f.known === !absorbing) continue;
          parts.push(f);
        }
        if (parts.length === 0) return this.#bool(!absorbing);
        if (parts.every((p) => p.known === null)) return this.#NULL;
        if (parts.length === 1) return parts[0] as Fragment;
        const prec = and ? Prec.And : Prec.Or;
        return {
          sql: parts.map((p) => this.#wrap(p, prec)).join(and ? " AND " : " OR "),
          prec,
          nonNull: parts.every((p) => p.nonNull === true),
        };
      }
      case "not": {
        const arg = this.expr(expr.arg);
        if (arg.known !== undefined) return this.#bool(arg.known === null ? null : !arg.known);
        return { sql: `NOT ${this.#wrap(arg, Prec.Not)}`, prec: Prec.Not, nonNull: arg.nonNull };
      }
      case "isNull": {
        const arg = this.expr(expr.arg);
        if (arg.known === null) return this.#bool(!expr.negated);
        if (arg.nonNull === true) return this.#bool(expr.negated);
        return { sql: `${this.#wrap(arg, Prec.Add)} IS ${expr.negated ? "NOT " : ""}NULL`, prec: Prec.Compare, nonNull: true };
      }
      case "in": {
        const arg = this.expr(expr.arg);
        if (arg.known === null) return this.#NULL;
        if (expr.values.length === 0) return this.#FALSE;
        const values = expr.values.map((v) => this.syntax.literal(v)).join(", ");
        return { sql: `${this.#wrap(arg, Prec.Add)} IN (${values})`, prec: Prec.Compare, nonNull: arg.nonNull };
      }
      case "inList": {
        const shape = this.#shapeOf(expr.param);
        if (shape === "n") return expr.nullMeansAll ? this.#TRUE : this.#NULL;
        if (shape === "r") throw new Error(`list parameter '${expr.param.name}' cannot vary per row of a multi-row statement`);
        const arg = this.expr(expr.arg);
        if (arg.known === null) return this.#NULL;
        const left = this.#wrap(arg, Prec.Add);
        if (shape === "1") {
          const element = this.#slot(`${expr.param.name}#first`, { kind: "first", name: expr.param.name }, "text");
          return { sql: `${left} = ${element}`, prec: Prec.Compare, nonNull: arg.nonNull };
        }
        return { sql: this.syntax.inList(left, this.slot(expr.param)), prec: Prec.Compare, nonNull: arg.nonNull };
      }
      case "optionalEq": {
        const shape = this.#shapeOf(expr.param);
        if (shape === "n") return this.#TRUE;
        if (shape === "r") {
          const ref = this.syntax.batchRef(expr.param);
          return { sql: `(${ref} IS NULL OR ${this.#column(expr.column)} = ${ref})`, prec: Prec.Atom };
        }
        return { sql: `${this.#column(expr.column)} = ${this.slot(expr.param)}`, prec: Prec.Compare };
      }
      case "coalesce": {
        const parts: Fragment[] = [];
        for (const arg of expr.args) {
          const f = this.expr(arg);
          if (f.known === null) continue;
          parts.push(f);
          if (f.nonNull === true) break; // later arguments can never be reached
        }
        if (parts.length === 0) return this.#NULL;
        if (parts.length === 1) return parts[0] as Fragment;
        return {
          sql: `coalesce(${parts.map((p) => p.sql).join(", ")})`,
          prec: Prec.Atom,
          nonNull: parts.some((p) => p.nonNull === true),
        };
      }
      case "case": {
        const whens: { when: Fragment; then: Fragment }[] = [];
        let otherwise: Fragment | null = null;
        for (const branch of expr.whens) {
          const when = this.expr(branch.when);
          if (when.known === false || when.known === null) continue;
          const then = this.expr(branch.then);
          if (when.known === true) {
            otherwise = then;
            break;
          }
          whens.push({ when, then });
        }
        otherwise ??= this.expr(expr.otherwise);
        if (whens.length === 0) return otherwise;
        const body = whens.map((w) => `WHEN ${w.when.sql} THEN ${w.then.sql}`).join(" ");
        return {
          sql: `CASE ${body} ELSE ${otherwise.sql} END`,
          prec: Prec.Atom,
          nonNull: otherwise.nonNull === true && whens.every((w) => w.then.nonNull === true),
        };
      }
      case "parent":
        return this.#parent(expr.where);
    }
  }

  /**
   * `coalesce((SELECT 1 FROM cairnq_tasks cq_parent WHERE cq_parent.id = cairnq_tasks.parent_id AND
   * …), 0) = 1`: the parent found by primary key, the condition's columns read from it; true or
   * false, never null, as `EXISTS` would be. Not written as `EXISTS`: MariaDB 10.11 turns a
   * correlated `NOT EXISTS` into `parent_id NOT IN (…)` and materializes every queued and running
   * id first (12,000 queued rows: 6.2 ms per 1,000-row purge pick against 3.0 ms without the
   * condition), where a scalar subquery stays one primary-key probe per row (`eq_ref PRIMARY`);
   * SQLite and Postgres probe the key either way (`EXPLAIN` of the purge pick over 100,000 rows).
   * The outer row is named by the table, which every statement over tasks selects from unaliased.
   */
  /** A column as the expression being compiled reads it: the row's own, or inside a parent condition the parent's. */
  #column(column: string): string {
    return this.#qualifier === null ? column : `${this.#qualifier}.${column}`;
  }

  #parent(where: Expr): Fragment {
    if (this.#qualifier !== null) throw new Error("a parent condition cannot read its own parent");
    this.#qualifier = PARENT_ALIAS;
    let condition: Fragment;
    try {
      condition = this.expr(where);
    } finally {
      this.#qualifier = null;
    }
    if (condition.known === false || condition.known === null) return this.#FALSE;
    const link = `${PARENT_ALIAS}.id = ${TASKS_TABLE}.parent_id`;
    const body = condition.known === true ? link : `${link} AND ${this.#wrap(condition, Prec.And)}`;
    return { sql: `coalesce((SELECT 1 FROM ${TASKS_TABLE} ${PARENT_ALIAS} WHERE ${body}), 0) = 1`, prec: Prec.Compare, nonNull: true };
  }
}

/**
 * A statement whose SQL depends only on its shape: the parameters it reads
 * and how to write it with an {@link ExprCompiler}.
 */
export interface StatementTemplate {
  /** Every parameter the statement reads; their nullness and list lengths form the shape. */
  readonly params: readonly ParamExpr[];
  /** The rule clock of `now` in this statement (§2.1); `null` when it never reads `now`. */
  readonly clock: Clock | null;
  /**
   * Set for a multi-row statement: every parameter is a per-row value (shape `r`), the statement has
   * one shape, and it runs with `{ [BATCH_ROWS]: rows }`.
   */
  readonly perRow?: true;
  /** Writes the statement's SQL. */
  build(c: ExprCompiler, env: CompileEnv): string;
}

/** The dialect facts a template needs besides expressions. */
export interface CompileEnv {
  readonly syntax: SqlSyntax;
  /** Whether row-picking subqueries take `FOR UPDATE SKIP LOCKED` (the dialect's `skipLocked` capability). */
  readonly skipLocked: boolean;
}

/** Every distinct parameter read by `exprs`, in first-seen order. */
export function paramsOfAll(exprs: readonly (Expr | null | undefined)[], extra: readonly (ParamExpr | null)[] = []): ParamExpr[] {
  const into = new Map<string, ParamExpr>();
  for (const expr of exprs) if (expr !== null && expr !== undefined) paramsOf(expr, into);
  for (const p of extra) if (p !== null) into.set(p.name, p);
  return [...into.values()];
}

/**
 * Compiles templates into {@link CompiledStatement}s, once per (template,
 * shape), for one dialect's syntax and clock. The cache key of a shape is a
 * short string built from the parameters on each call — the only per-call
 * compile cost on the hot path.
 */
export class StatementCompiler {
  readonly #cache = new WeakMap<StatementTemplate, Map<string, CompiledStatement>>();

  readonly #env: CompileEnv;

  /**
   * @param syntax - The dialect's SQL bits.
   * @param clock - How `now` compiles and, for the process clock, its reading.
   * @param skipLocked - Whether row-picking subqueries take `FOR UPDATE SKIP LOCKED`.
   * @param onCompile - Called once with each statement text compiled (e.g. to prepare it by name).
   */
  constructor(
    readonly syntax: SqlSyntax,
    readonly clock: StoreClock,
    skipLocked = false,
    private readonly onCompile: ((sql: string) => void) | null = null,
  ) {
    this.#env = { syntax, skipLocked };
  }

  /** The statement for `template` in the shape of `params` (compiled on first use). */
  statement(template: StatementTemplate, params: Params): CompiledStatement {
    let byShape = this.#cache.get(template);
    if (byShape === undefined) {
      byShape = new Map();
      this.#cache.set(template, byShape);
    }
    let key = "";
    if (template.perRow === true) key = "r".repeat(template.params.length);
    else for (const p of template.params) key += shapeChar(p, params[p.name]);
    let compiled = byShape.get(key);
    if (compiled === undefined) {
      compiled = this.#compile(template, key);
      byShape.set(key, compiled);
    }
    return compiled;
  }

  #compile(template: StatementTemplate, key: string): CompiledStatement {
    const shape = new Map<string, ShapeChar>();
    template.params.forEach((p, i) => shape.set(p.name, key[i] as ShapeChar));
    const nowSql = template.clock === null ? null : this.clock.nowSql(template.clock);
    const c = new ExprCompiler(this.syntax, shape, nowSql);
    const sql = template.build(c, this.#env);
    this.onCompile?.(sql);
    return new CompiledStatement(sql, c.binds, this.syntax, this.clock);
  }
}

function shapeChar(param: ParamExpr, value: unknown): ShapeChar {
  if (value === null || value === undefined) return "n";
  if (param.type === "textList") return Array.isArray(value) && value.length === 1 ? "1" : "*";
  return "v";
}
