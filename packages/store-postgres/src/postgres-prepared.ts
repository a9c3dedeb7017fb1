/**
 * CairnQ's own statements on a pooled connection: which texts are the
 * store's, which of those are sent as named prepared statements, and how
 * long the store waits for one.
 *
 * Kysely sends every query unnamed, so Postgres parses and plans it on every
 * execution. CairnQ's statements are a small fixed set (compiled templates ×
 * shapes; the combiner's multi-row forms have one text per operation), so
 * each pooled connection prepares each text once, by name, and afterwards
 * sends only Bind/Execute. Measured here on a loaded 2-core machine: an
 * ownership-checked complete went from 0.77 ms to 0.26 ms per statement
 * (`/tmp`-style micro run of 2,000 sequential statements, named vs unnamed).
 * A transaction-mode pooler that cannot keep prepared statements (PgBouncer
 * before 1.21) needs them off (`preparedStatements: false`): the texts are
 * then sent unnamed, everything else below stays.
 *
 * Only texts the store compiled are recognised (a process-wide registry), so
 * an application's own queries on a shared pool are sent exactly as before.
 */

import { hasWire, pipelinedStatements, runOnWire, runPipeline } from "./postgres-pipeline.js";
import type { PipelineClient, PipelinedResult, PipelinedStatement } from "./postgres-pipeline.js";

/** One registered text: its prepared statement name, and whether it may wait on another transaction's lock. */
interface Registered {
  readonly name: string;
  readonly waits: boolean;
}

/** Statement text → how the store sends it, shared by every store of the process. */
const REGISTRY = new Map<string, Registered>();

/**
 * Registers one of CairnQ's statement texts. `waits`: the statement may
 * legitimately block on a lock another transaction holds for as long as
 * that transaction lasts (the key lock's wait, which a caller's
 * `withTransaction` may hold): it keeps the long `queryTimeoutMs`, never the
 * store's short bound.
 */
export function registerPrepared(text: string, options: { readonly waits?: boolean } = {}): void {
  const known = REGISTRY.get(text);
  if (known === undefined) REGISTRY.set(text, { name: `cairnq_${REGISTRY.size + 1}`, waits: options.waits === true });
  else if (options.waits === true && !known.waits) REGISTRY.set(text, { ...known, waits: true });
}

/** How a pooled client sends the store's statements (see {@link prepareRegistered}). */
export interface PooledClientBehaviour {
  /** Registered texts with parameters go as named prepared statements. */
  readonly named: boolean;
  /**
   * Read timeout of the store's own statements (registered texts, the claim's pipelines), in ms;
   * `0` leaves them to the client's own `query_timeout`.
   */
  readonly storeTimeoutMs: number;
  /**
   * A statement run right after every `BEGIN` on this client, in the same round trip (e.g. `SET LOCAL
   * idle_in_transaction_session_timeout = …`), or `null`. Transaction-scoped settings are the only
   * kind a transaction-mode pooler carries: the next transaction may run on another server session.
   */
  readonly transactionSetup: string | null;
}

/** The `pg.Client` method the store wraps. */
interface QueryingClient {
  query: (...args: unknown[]) => unknown;
}

const WRAPPED = Symbol.for("cairnq.preparedStatements");

/** A simple-protocol text that opens a transaction (`begin`, `BEGIN; …`); `START TRANSACTION` is not rewritten. */
const BEGINS = /^\s*begin\b/i;

/**
 * Wraps a pooled `pg.Client`'s `query`: a pipeline (`postgres-pipeline.ts`)
 * runs as one round trip; registered texts are sent as named prepared
 * statements (`{ name, text, values }`, inside pipelines too) when
 * `named`, and with the store's read timeout; `BEGIN` gets the
 * transaction setup appended. Every other call is passed through untouched.
 * Idempotent per client (the first wrap decides).
 *
 * @param behaviour - `true`/`false`: named or not, nothing else (tests); or the whole {@link PooledClientBehaviour}.
 */
export function prepareRegistered(client: unknown, behaviour: boolean | PooledClientBehaviour = true): void {
  const target = client as QueryingClient & { connection?: unknown; [WRAPPED]?: true };
  if (typeof target !== "object" || target === null || typeof target.query !== "function" || target[WRAPPED] === true) return;
  const { named, storeTimeoutMs, transactionSetup } = typeof behaviour === "boolean" ? { named: behaviour, storeTimeoutMs: 0, transactionSetup: null } : behaviour;
  const query = target.query;
  const pipelined = target as unknown as PipelineClient;
  const nameOf = named ? (text: string): string | undefined => REGISTRY.get(text)?.name : (): undefined => undefined;
  const timeoutOf = (text: string): number | undefined => {
    if (storeTimeoutMs <= 0) return undefined;
    const known = REGISTRY.get(text);
    return known === undefined || known.waits ? undefined : storeTimeoutMs;
  };
  target[WRAPPED] = true;
  target.query = function (this: unknown, ...args: unknown[]): unknown {
    const [text, values] = args;
    if (args.length !== 2) return query.apply(this, args);
    const statements = pipelinedStatements(text, values);
    if (statements !== null) {
      const inner = hasWire(pipelined) ? implicitTransaction(statements) : null;
      if (inner !== null) return runPipeline(pipelined, query, inner, nameOf, storeTimeoutMs > 0 ? storeTimeoutMs : undefined).then(asWholeTransaction);
      const setup = transactionSetup === null ? { statements, inserted: [] } : withSetupAfterBegin(statements, transactionSetup);
      const run = runPipeline(pipelined, query, setup.statements, nameOf, storeTimeoutMs > 0 ? storeTimeoutMs : undefined);
      return setup.inserted.length === 0 ? run : run.then((result) => dropInserted(result, setup.inserted));
    }
    if (typeof text !== "string" || !Array.isArray(values)) return query.apply(this, args);
    if (values.length > 0) {
      const registered = REGISTRY.get(text);
      if (registered === undefined) return query.apply(this, args);
      const timeout = timeoutOf(text);
      // pg's JavaScript client: the store's own Query (its row description read once per connection).
      if (hasWire(pipelined)) return runOnWire(pipelined, query, text, [{ sql: text, parameters: values }], nameOf, timeout, firstResult);
      return query.call(this, { ...(named ? { name: registered.name } : {}), text, values, ...(timeout === undefined ? {} : { query_timeout: timeout }) });
    }
    if (BEGINS.test(text)) {
      // `BEGIN; <recovery>` is the claim's: the store's bound applies to it too.
      const rest = text.replace(BEGINS, "").replace(/^\s*;\s*/, "");
      const timeout = rest === "" ? undefined : timeoutOf(rest);
      if (transactionSetup === null && timeout === undefined) return query.apply(this, args);
      const sent = transactionSetup === null ? text : insertAfterFirstStatement(text, transactionSetup);
      const answer = query.call(this, timeout === undefined ? sent : { text: sent, query_timeout: timeout }) as Promise<unknown>;
      return transactionSetup === null ? answer : answer.then(withoutSetupResult);
    }
    const timeout = timeoutOf(text);
    return timeout === undefined ? query.apply(this, args) : query.call(this, { text, query_timeout: timeout });
  };
}

/** A lone statement's answer, as pg answers `client.query`: its one result. */
function firstResult(results: PipelinedResult[]): PipelinedResult | undefined {
  return results[0];
}

/**
 * The statements between a pipeline's `BEGIN` and `COMMIT`, when the pipeline is one whole transaction
 * (`BEGIN`, statements, `COMMIT`, with no other transaction control), else `null`. On the wire they
 * go without either: the extended protocol runs every statement before one Sync in ONE implicit
 * transaction, committed at the Sync, and a failing statement makes the server skip the rest and
 * roll it all back — `BEGIN … COMMIT` in one round trip, for two statements fewer for the server to
 * run (three with the transaction setup, which a transaction that is never idle between round trips
 * does not need). Only where the pipeline reaches the wire as one Sync (pg's JavaScript client):
 * one statement at a time, each would commit on its own.
 */
function implicitTransaction(statements: readonly PipelinedStatement[]): PipelinedStatement[] | null {
  const n = statements.length;
  if (n < 3 || !isControl(statements[0], "begin") || !isControl(statements[n - 1], "commit")) return null;
  const inner = statements.slice(1, -1);
  return inner.some((statement) => statement.parameters.length === 0 && CONTROL.test(statement.sql)) ? null : inner;
}

const CONTROL = /^\s*(begin|start|commit|end|rollback|abort|savepoint|release|prepare\s+transaction)\b/i;

function isControl(statement: PipelinedStatement | undefined, word: "begin" | "commit"): boolean {
  return statement !== undefined && statement.parameters.length === 0 && statement.sql.trim().toLowerCase() === word;
}

/** An implicit transaction's results as the explicit one would have answered: `BEGIN`'s first, `COMMIT`'s last. */
function asWholeTransaction<R extends { rows: PipelinedResult[]; rowCount: number }>(result: R): R {
  const rows: PipelinedResult[] = [{ command: "BEGIN", rowCount: null, rows: [] }, ...result.rows, { command: "COMMIT", rowCount: null, rows: [] }];
  return { ...result, rows, rowCount: rows.length };
}

/** `BEGIN` → `BEGIN; <setup>`; `BEGIN; X` → `BEGIN; <setup>; X` (a BEGIN statement holds no `;` of its own). */
function insertAfterFirstStatement(text: string, setup: string): string {
  const end = text.indexOf(";");
  return end < 0 ? `${text}; ${setup}` : `${text.slice(0, end)}; ${setup}${text.slice(end)}`;
}

/** pg answers a multi-statement simple query with one result per statement: the setup's (the second) is not the caller's. */
function withoutSetupResult(result: unknown): unknown {
  if (!Array.isArray(result)) return result;
  const kept = result.filter((_, index) => index !== 1);
  return kept.length === 1 ? kept[0] : kept;
}

/** The statements with `setup` after each `BEGIN`, and the positions of the inserted ones. */
function withSetupAfterBegin(
  statements: readonly { readonly sql: string; readonly parameters: readonly unknown[] }[],
  setup: string,
): { statements: { sql: string; parameters: readonly unknown[] }[]; inserted: number[] } {
  const out: { sql: string; parameters: readonly unknown[] }[] = [];
  const inserted: number[] = [];
  for (const statement of statements) {
    out.push(statement);
    if (statement.parameters.length === 0 && /^\s*begin\s*$/i.test(statement.sql)) {
      inserted.push(out.length);
      out.push({ sql: setup, parameters: [] });
    }
  }
  return { statements: out, inserted };
}

function dropInserted<R extends { rows: PipelinedResult[]; rowCount: number }>(result: R, inserted: readonly number[]): R {
  const skip = new Set(inserted);
  const rows = result.rows.filter((_, index) => !skip.has(index));
  return { ...result, rows, rowCount: rows.length };
}
