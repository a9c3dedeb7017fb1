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
import { loadPgDriver } from "./postgres-driver.js";

/** The text of a pipeline as Kysely sends it; the wrapped client never sends it to the server. */
export const PIPELINE_SQL = "/* cairnq: pipelined statements */";

/** One statement of a pipeline. */
export interface PipelinedStatement {
  readonly sql: string;
  readonly parameters: readonly unknown[];
}

/** What a pipeline answers for each of its statements, in order. */
export interface PipelinedResult {
  readonly command: string | null;
  readonly rowCount: number | null;
  readonly rows: Row[];
}

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

/** The parts of pg's wire connection a pipeline writes to. */
interface WireConnection {
  parse(message: { text: string; name?: string }): void;
  bind(message: { statement?: string; values: readonly unknown[]; valueMapper: (value: unknown) => unknown }): void;
  describe(message: { type: "P"; name: string }): void;
  execute(message: { portal: string }): void;
  sync(): void;
  on(event: "parseComplete", listener: () => void): unknown;
  removeListener(event: "parseComplete", listener: () => void): unknown;
  readonly parsedStatements: Record<string, string | undefined>;
  readonly submittedNamedStatements: Record<string, string | undefined>;
}

/** The `pg.Client` a pipeline runs on: its wire connection (absent on pg-native) and its (wrapped) `query`. */
export interface PipelineClient {
  readonly connection?: unknown;
  query(text: string, values: unknown[]): unknown;
}

type Callback = (error: Error | null, results?: unknown) => void;

/** A pg `Query` subclass: pg's own row parsing and multi-result handling, one Sync for all statements. */
interface PipelinedQuery {
  callback: Callback;
}

type PipelinedQueryClass = new (statements: readonly PipelinedStatement[], nameOf: (sql: string) => string | undefined) => PipelinedQuery;

let queryClass: PipelinedQueryClass | null = null;

/** pg's encoding of one parameter (`pg.utils.prepareValue`): strings, Buffers and nulls, which it leaves as they are. */
function pgPrepareValue(): (value: unknown) => unknown {
  prepareValueOfPg ??= (loadPgDriver() as unknown as { utils: { prepareValue: (value: unknown) => unknown } }).utils.prepareValue;
  return prepareValueOfPg;
}

let prepareValueOfPg: ((value: unknown) => unknown) | null = null;

/** Parameters already encoded by {@link runPipeline}: bound as they are. */
const asEncoded = (value: unknown): unknown => value;

/** Built on first use, from the `pg` the store loads (its `Query`). */
function pipelinedQueryClass(): PipelinedQueryClass {
  if (queryClass !== null) return queryClass;
  const pg = loadPgDriver() as unknown as { Query: new (config: { text: string }) => object };
  // pg's Query is plain JavaScript without types for these members; the subclass overrides exactly
  // what pg calls to send a prepared query (requiresPreparation, prepare) and to finish it.
  const Base = pg.Query as unknown as new (config: { text: string }) => {
    handleError(error: unknown, connection: unknown): void;
    handleReadyForQuery(connection: unknown): void;
  };
  class Pipelined extends Base {
    readonly #statements: readonly PipelinedStatement[];
    readonly #nameOf: (sql: string) => string | undefined;
    /** Statement names (`""` for unnamed) of the Parse messages whose ParseComplete has not arrived, in order. */
    #parsing: string[] = [];
    #connection: WireConnection | null = null;
    declare callback: Callback;

    constructor(statements: readonly PipelinedStatement[], nameOf: (sql: string) => string | undefined) {
      super({ text: PIPELINE_SQL });
      this.#statements = statements;
      this.#nameOf = nameOf;
    }

    requiresPreparation(): boolean {
      return true;
    }

    readonly #parsed = (): void => {
      const name = this.#parsing.shift();
      const connection = this.#connection;
      if (name === undefined || name === "" || connection === null) return;
      connection.parsedStatements[name] = connection.submittedNamedStatements[name];
      delete connection.submittedNamedStatements[name];
    };

    prepare(connection: WireConnection): void {
      this.#connection = connection;
      connection.on("parseComplete", this.#parsed);
      for (const statement of this.#statements) {
        const name = this.#nameOf(statement.sql);
        const known = name !== undefined && (connection.parsedStatements[name] === statement.sql || connection.submittedNamedStatements[name] === statement.sql);
        if (!known) {
          connection.parse({ text: statement.sql, ...(name === undefined ? {} : { name }) });
          this.#parsing.push(name ?? "");
          if (name !== undefined) connection.submittedNamedStatements[name] = statement.sql;
        }
        connection.bind({ ...(name === undefined ? {} : { statement: name }), values: statement.parameters, valueMapper: asEncoded });
        connection.describe({ type: "P", name: "" });
        connection.execute({ portal: "" });
      }
      connection.sync();
    }

    /** Parses the server skipped after an error never happened: forget them, so the next use parses again. */
    #finish(): void {
      const connection = this.#connection;
      if (connection === null) return;
      connection.removeListener("parseComplete", this.#parsed);
      for (const name of this.#parsing) if (name !== "") delete connection.submittedNamedStatements[name];
      this.#parsing = [];
      this.#connection = null;
    }

    override handleError(error: unknown, connection: unknown): void {
      this.#finish();
      super.handleError(error, connection);
    }

    override handleReadyForQuery(connection: unknown): void {
      this.#finish();
      super.handleReadyForQuery(connection);
    }
  }
  queryClass = Pipelined;
  return queryClass;
}

/** pg's answer for a statement (one `Result`), reduced to what Kysely reads. */
interface PgResult {
  readonly command?: string | null;
  readonly rowCount?: number | null;
  readonly rows?: Row[];
}

function reduce(result: PgResult): PipelinedResult {
  return { command: result.command ?? null, rowCount: result.rowCount ?? null, rows: result.rows ?? [] };
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
  const wire = client.connection as Partial<WireConnection> | undefined;
  if (typeof wire?.parse !== "function" || statements.length === 0) return sequentially(client, statements);
  const Pipelined = pipelinedQueryClass();
  return new Promise((resolve, reject) => {
    // Every parameter is encoded before a message is written: an encoding that throws halfway through the
    // messages (before their Sync) would leave the connection waiting for the rest, answering nothing ever again.
    const prepareValue = pgPrepareValue();
    const encoded = statements.map((statement) => ({ sql: statement.sql, parameters: statement.parameters.map((value) => prepareValue(value)) }));
    const query = new Pipelined(encoded, nameOf);
    // pg reads a per-query read timeout from the query object itself (then the client's `query_timeout`).
    if (timeoutMs !== undefined) (query as { query_timeout?: number }).query_timeout = timeoutMs;
    // Set before query(): pg wraps the callback with its read timeout.
    query.callback = (error, results) => {
      if (error !== null && error !== undefined) {
        reject(error);
        return;
      }
      const list = (Array.isArray(results) ? results : [results]) as PgResult[];
      resolve({ command: "PIPELINE", rowCount: list.length, rows: list.map(reduce) });
    };
    send.call(client, query);
  });
}

/** The fallback: the client's own (wrapped, so still prepared by name) `query`, one statement at a time. */
async function sequentially(client: PipelineClient, statements: readonly PipelinedStatement[]): Promise<{ command: string; rowCount: number; rows: PipelinedResult[] }> {
  const rows: PipelinedResult[] = [];
  for (const statement of statements) rows.push(reduce((await client.query(statement.sql, [...statement.parameters])) as PgResult));
  return { command: "PIPELINE", rowCount: rows.length, rows };
}
