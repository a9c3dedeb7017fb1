/**
 * Several statements in one round trip: the extended-protocol messages of
 * every statement (Parse when the connection has not prepared it yet, Bind,
 * Describe, Execute) written at once and closed by ONE Sync, so the server
 * runs them in order and answers them together.
 *
 * Semantics are those of sending the statements one after another and
 * stopping at the first error: the server skips everything after a failing
 * statement up to the Sync. Outside a transaction block the statements
 * before one Sync form one implicit transaction (committed at the Sync):
 * a claim that is one whole transaction (`BEGIN`, statements, `COMMIT`) goes
 * as just its statements (`postgres-prepared.ts`); one whose transaction
 * stays open for statements in later round trips keeps its `BEGIN`, and
 * nothing commits before its `COMMIT`.
 *
 * Kysely only speaks `client.query(text, values)`, so a pipeline travels as
 * one sentinel statement ({@link PIPELINE_SQL}, the statements as its one
 * parameter) that the pooled client's query wrapper (`postgres-prepared.ts`)
 * turns into the messages above; its result has one row per statement
 * (`{ command, rowCount, rows }`). A client without pg's JavaScript
 * connection (pg-native) runs the statements one by one instead, with the
 * same outcome.
 */
import type { QueryResult } from "kysely";
import { CompiledQuery } from "kysely";
import type { Row } from "@cairnq/store-kysely";
import { statementFailure } from "./postgres-connect-error.js";
import { loadPgDriver } from "./postgres-driver.js";
import { wireQueryClass } from "./postgres-wire-query.js";
import type { WireResult } from "./postgres-wire-query.js";

/** The text of a pipeline as Kysely sends it; the wrapped client never sends it to the server. */
export const PIPELINE_SQL = "/* cairnq: pipelined statements */";

/** One statement of a pipeline. */
export interface PipelinedStatement {
  readonly sql: string;
  readonly parameters: readonly unknown[];
}

/** What a pipeline answers for each of its statements, in order. */
export type PipelinedResult = WireResult;

/** The sentinel query carrying `queries`, to run on a connection whose client the store wrapped. */
export function pipeline(queries: readonly CompiledQuery<Row>[]): CompiledQuery<Row> {
  const statements: PipelinedStatement[] = queries.map((query) => ({ sql: query.sql, parameters: query.parameters }));
  return CompiledQuery.raw(PIPELINE_SQL, [statements]);
}

/** Each statement's result of a pipeline's Kysely result, as Kysely would have returned it for that statement alone. */
export function pipelineResults(result: QueryResult<Row>): QueryResult<Row>[] {
  return result.rows.map((row) => {
    const { command, rowCount, rows } = row as unknown as PipelinedResult;
    // As Kysely answers a lone COMMIT or ROLLBACK (a COMMIT of an aborted transaction answers ROLLBACK).
    if (command === "COMMIT" || command === "ROLLBACK") return { rows: [{ command }] };
    const counted = command === "INSERT" || command === "UPDATE" || command === "DELETE" || command === "MERGE";
    return counted && rowCount !== null ? { rows, numAffectedRows: BigInt(rowCount) } : { rows };
  });
}

/** The statements of a sentinel call (`text`, `values`), or `null` when the call is not a pipeline. */
export function pipelinedStatements(text: unknown, values: unknown): readonly PipelinedStatement[] | null {
  if (text !== PIPELINE_SQL || !Array.isArray(values) || values.length !== 1 || !Array.isArray(values[0])) return null;
  return values[0] as PipelinedStatement[];
}

/** The `pg.Client` a pipeline runs on: its wire connection (absent on pg-native) and its (wrapped) `query`. */
export interface PipelineClient {
  readonly connection?: unknown;
  query(text: string, values: unknown[]): unknown;
}

/** pg's encoding of one parameter (`pg.utils.prepareValue`): strings, Buffers and nulls, which it leaves as they are. */
function pgPrepareValue(): (value: unknown) => unknown {
  prepareValueOfPg ??= (loadPgDriver() as unknown as { utils: { prepareValue: (value: unknown) => unknown } }).utils.prepareValue;
  return prepareValueOfPg;
}

let prepareValueOfPg: ((value: unknown) => unknown) | null = null;

/** pg's answer for a statement (one `Result`, on pg-native), reduced to what Kysely reads. */
interface PgResult {
  readonly command?: string | null;
  readonly rowCount?: number | null;
  readonly rows?: Row[];
}

function reduce(result: PgResult): PipelinedResult {
  return { command: result.command ?? null, rowCount: result.rowCount ?? null, rows: result.rows ?? [] };
}

/** Whether `client` has pg's JavaScript wire connection, which {@link runPipeline} writes a pipeline to in one round trip. */
export function hasWire(client: PipelineClient): boolean {
  return typeof (client.connection as { parse?: unknown } | undefined)?.parse === "function";
}

/**
 * Runs `statements` on `client`'s wire connection through `send` (the client's unwrapped `query`) as ONE
 * round trip ({@link wireQueryClass}; `text` is the text it shows), resolving with `answer` of the results (one per statement). Every parameter is encoded
 * before a message is written: an encoding that throws halfway through the messages (before their Sync)
 * would leave the connection waiting for the rest, answering nothing ever again.
 */
export function runOnWire<T>(
  client: PipelineClient,
  send: (...args: unknown[]) => unknown,
  text: string,
  statements: readonly PipelinedStatement[],
  nameOf: (sql: string) => string | undefined,
  timeoutMs: number | undefined,
  answer: (results: PipelinedResult[]) => T,
): Promise<T> {
  const Wire = wireQueryClass();
  return new Promise((resolve, reject) => {
    const prepareValue = pgPrepareValue();
    const encoded = statements.map((statement) => ({ sql: statement.sql, parameters: statement.parameters.map((value) => prepareValue(value)) }));
    // A lone statement's results follow the client's `binary` option, as pg's own Query's do; a pipeline's are text.
    const query = new Wire(text, encoded, nameOf, text !== PIPELINE_SQL);
    // pg reads a per-query read timeout from the query object itself (then the client's `query_timeout`).
    if (timeoutMs !== undefined) query.query_timeout = timeoutMs;
    // Set before query(): pg wraps the callback with its read timeout.
    query.callback = (error, results) => {
      if (error !== null && error !== undefined) reject(statementFailure(error));
      else resolve(answer(results as PipelinedResult[]));
    };
    send.call(client, query);
  });
}

/**
 * Runs a pipeline on `client` through `send` (the client's unwrapped `query`): one round trip on
 * pg's JavaScript client, one statement after another elsewhere. Resolves like `client.query`,
 * with one row per statement.
 */
export function runPipeline(
  client: PipelineClient,
  send: (...args: unknown[]) => unknown,
  statements: readonly PipelinedStatement[],
  nameOf: (sql: string) => string | undefined,
  timeoutMs?: number,
): Promise<{ command: string; rowCount: number; rows: PipelinedResult[] }> {
  if (!hasWire(client) || statements.length === 0) return sequentially(client, statements);
  return runOnWire(client, send, PIPELINE_SQL, statements, nameOf, timeoutMs, asPipelineAnswer);
}

function asPipelineAnswer(rows: PipelinedResult[]): { command: string; rowCount: number; rows: PipelinedResult[] } {
  return { command: "PIPELINE", rowCount: rows.length, rows };
}

/** The fallback: the client's own (wrapped, so still prepared by name) `query`, one statement at a time. */
async function sequentially(client: PipelineClient, statements: readonly PipelinedStatement[]): Promise<{ command: string; rowCount: number; rows: PipelinedResult[] }> {
  const rows: PipelinedResult[] = [];
  for (const statement of statements) rows.push(reduce((await client.query(statement.sql, [...statement.parameters])) as PgResult));
  return { command: "PIPELINE", rowCount: rows.length, rows };
}
