/**
 * The pg `Query` the store sends its own statements as (a registered
 * statement alone, or a pipeline of several: `postgres-pipeline.ts`), with
 * each statement's row description read once per connection.
 *
 * pg's own `Query` asks the server to describe every execution (a Describe
 * message, answered by a RowDescription) and rebuilds its row parser from
 * that answer each time: it parses the description's fields, then builds a
 * dictionary-mode template object of the column names, a copy of it, and an
 * array of type parsers. The claim returns 23 columns, so that was ~15–20%
 * of the bytes a worker and a client allocate per `call()`
 * (`bench/call-timeline-pg.mjs`, `TIMELINE_HEAP`). A named prepared
 * statement's row description cannot change while it exists (Postgres
 * refuses to run a cached plan whose result type changed), so this `Query`
 * describes a named statement only when the connection parses it, keeps
 * its row shape (names, type parsers, a template row) on the connection
 * and sends just Bind and Execute afterwards. Unnamed statements (prepared
 * statements off, texts the store did not register) are described every
 * time, as pg does.
 *
 * Rows are built as pg builds them (a copy of the template row, each value
 * through pg's type parser for its column), and each statement answers
 * `{ command, rowCount, rows }` as pg's `Result` does, which is all Kysely
 * and the store read of it.
 */
import { createRequire } from "node:module";
import { loadPgDriver } from "./postgres-driver.js";
import type { Row } from "@cairnq/store-kysely";

/** One statement of a query: its text and its parameters, already encoded (pg's `prepareValue`). */
export interface WireStatement {
  readonly sql: string;
  readonly parameters: readonly unknown[];
}

/** What one statement answers. */
export interface WireResult {
  readonly command: string | null;
  readonly rowCount: number | null;
  readonly rows: Row[];
}

/** A field of a RowDescription message, as pg-protocol parses it. */
interface Field {
  readonly name: string;
  readonly dataTypeID: number;
  readonly format?: string;
}

/** The parts of pg's wire connection the query writes to. */
export interface WireConnection {
  parse(message: { text: string; name?: string }): void;
  bind(message: { statement?: string; values: readonly unknown[]; binary?: boolean; valueMapper: (value: unknown) => unknown }): void;
  describe(message: { type: "P"; name: string }): void;
  execute(message: { portal: string }): void;
  sync(): void;
  on(event: "parseComplete", listener: () => void): unknown;
  removeListener(event: "parseComplete", listener: () => void): unknown;
  readonly parsedStatements: Record<string, string | undefined>;
  readonly submittedNamedStatements: Record<string, string | undefined>;
}

/** How a statement's rows are built: column names, their parsers, and the template each row copies. */
interface RowShape {
  readonly names: readonly string[];
  readonly parsers: readonly ((value: string) => unknown)[];
  readonly binary: readonly boolean[];
  readonly template: Row;
}

/** A statement that answers no rows (its Describe answered NoData). */
const NO_ROWS: RowShape = { names: [], parsers: [], binary: [], template: {} };

/** Per wire connection: the row shape of each named statement it has described. */
const SHAPES = new WeakMap<object, Map<string, RowShape>>();

function shapesOf(connection: object): Map<string, RowShape> {
  let shapes = SHAPES.get(connection);
  if (shapes === undefined) {
    shapes = new Map();
    SHAPES.set(connection, shapes);
  }
  return shapes;
}

type TypeParser = (value: string) => unknown;

/** Type parsers by type and format: the client's (its `types` option over pg's global ones), or pg's global ones. */
interface TypeParsers {
  getTypeParser(oid: number, format: string): TypeParser;
}

/**
 * pg-types' own text parser of `bigint` (`parseBigInteger`), or `null` where it cannot be found. It
 * answers the text it is given either way (the digits as they are, anything else unchanged), so a
 * column it would parse is read as the text itself; every `*_ms` column of a claimed task is one, and
 * its regular expression ran on each of them per row.
 */
function defaultBigintParser(): TypeParser | null {
  if (bigintParser !== undefined) return bigintParser;
  bigintParser = null;
  try {
    const fromPg = createRequire(createRequire(import.meta.url).resolve("pg"));
    const textParsers = fromPg("pg-types/lib/textParsers") as { init?: (register: (oid: number, parser: TypeParser) => void) => void };
    textParsers.init?.((oid, parser) => {
      if (oid === BIGINT_OID) bigintParser = parser;
    });
  } catch {
    // Another pg-types layout: pg's parser is used as it is.
  }
  return bigintParser;
}

let bigintParser: TypeParser | null | undefined;

const BIGINT_OID = 20;

/** A text value as it is: the `bigint` parser's answer, without its regular expression. */
const asText = (value: string): unknown => value;

/** The row shape a RowDescription's fields give, with the type parsers pg's `Result` would look up. */
function shapeOf(fields: readonly Field[], types: TypeParsers): RowShape {
  const names: string[] = [];
  const parsers: TypeParser[] = [];
  const binary: boolean[] = [];
  const template: Row = {};
  for (const field of fields) {
    const format = field.format ?? "text";
    names.push(field.name);
    const parser = types.getTypeParser(field.dataTypeID, format);
    parsers.push(format === "text" && field.dataTypeID === BIGINT_OID && parser === defaultBigintParser() ? asText : parser);
    binary.push(format === "binary");
    template[field.name] = null;
  }
  // A copy of the template is a fast-mode object (the template itself, built by keyed stores, is not).
  return { names, parsers, binary, template: { ...template } };
}

/** Command tags the store's statements answer, returned as these constants rather than cut from each message's text. */
const TAGS = ["SELECT", "INSERT", "UPDATE", "DELETE", "BEGIN", "COMMIT", "ROLLBACK", "MERGE"] as const;

/**
 * What pg's `Result` reads from a CommandComplete text (`/^([A-Za-z]+)(?: (\d+))?(?: (\d+))?/`: the
 * leading word as the command, the last of up to two counts after it as the row count), without a
 * regular expression's match, substrings and `parseInt` per statement.
 */
export function commandComplete(text: string | null): { command: string | null; rowCount: number | null } {
  if (text === null) return { command: null, rowCount: null };
  let end = 0;
  while (end < text.length && isLetter(text.charCodeAt(end))) end += 1;
  if (end === 0) return { command: null, rowCount: null };
  let command: string | null = null;
  for (const tag of TAGS) {
    if (tag.length === end && text.startsWith(tag)) {
      command = tag;
      break;
    }
  }
  command ??= text.slice(0, end);
  let rowCount: number | null = null;
  let at = end;
  for (let group = 0; group < 2 && text.charCodeAt(at) === SPACE; group += 1) {
    let next = at + 1;
    let value = 0;
    while (next < text.length && isDigit(text.charCodeAt(next))) {
      value = value * 10 + (text.charCodeAt(next) - ZERO);
      next += 1;
    }
    if (next === at + 1) break;
    rowCount = value;
    at = next;
  }
  return { command, rowCount };
}

const SPACE = 32;
const ZERO = 48;

function isDigit(code: number): boolean {
  return code >= ZERO && code <= ZERO + 9;
}

function isLetter(code: number): boolean {
  return (code >= 65 && code <= 90) || (code >= 97 && code <= 122);
}

type Callback = (error: Error | null, results?: unknown) => void;

/** The store's pg `Query`: statements in order, one Sync; resolves with one {@link WireResult} per statement. */
export interface WireQuery {
  callback: Callback;
  query_timeout?: number;
}

/**
 * `text`: what the query shows as its text (to pg and to anyone watching `client.query`); never sent.
 * `clientBinary`: results in binary when the client has pg's `binary` option, as pg's own Query does (a lone
 * statement); `false`: always text (a pipeline, as it always was). Binary results are described every time.
 */
type WireQueryClass = new (text: string, statements: readonly WireStatement[], nameOf: (sql: string) => string | undefined, clientBinary: boolean) => WireQuery;

let queryClass: WireQueryClass | null = null;

/** Parameters already encoded by the caller: bound as they are. */
const asEncoded = (value: unknown): unknown => value;

/** Built on first use, from the `pg` the store loads (its `Query`). */
export function wireQueryClass(): WireQueryClass {
  if (queryClass !== null) return queryClass;
  const pg = loadPgDriver() as unknown as { Query: new (text: string) => object };
  // pg's Query is plain JavaScript without types for these members; the subclass overrides what pg
  // calls to send a prepared query (requiresPreparation, prepare), to hand it the answer's messages
  // (handleRowDescription, handleDataRow, handleCommandComplete, handleEmptyQuery) and to finish it.
  const Base = pg.Query as unknown as new (text: string) => {
    handleError(error: unknown, connection: unknown): void;
    handleReadyForQuery(connection: unknown): void;
    /** Set by the client before it sends the query: its `binary` option. */
    binary?: boolean;
    /** pg's own result object, whose `_types` the client sets to its type parsers before sending the query. */
    _result: { _types?: TypeParsers };
  };
  const pgTypes = (loadPgDriver() as unknown as { types: TypeParsers }).types;
  class Wire extends Base {
    readonly #statements: readonly WireStatement[];
    readonly #nameOf: (sql: string) => string | undefined;
    /** Statement names (`""` for unnamed) of the Parse messages whose ParseComplete has not arrived, in order. */
    #parsing: string[] | null = null;
    #connection: WireConnection | null = null;
    /** Per statement: the name its shape is kept under once described (`null`: not kept), and its known shape. */
    readonly #keepAs: (string | null)[];
    readonly #shapes: (RowShape | null)[];
    /** The statement whose answer is arriving, its rows so far, the answers of those before it. */
    #index = 0;
    #rows: Row[] = [];
    #results: WireResult[] = [];
    #failure: unknown = null;
    declare callback: Callback;

    readonly #clientBinary: boolean;

    constructor(text: string, statements: readonly WireStatement[], nameOf: (sql: string) => string | undefined, clientBinary: boolean) {
      // The text alone: pg copies a config object property by property (descriptors and all), a string it does not.
      super(text);
      this.#statements = statements;
      this.#nameOf = nameOf;
      this.#clientBinary = clientBinary;
      // Sized once: filled by index as the statements are written.
      this.#keepAs = new Array<string | null>(statements.length).fill(null);
      this.#shapes = new Array<RowShape | null>(statements.length).fill(null);
    }

    requiresPreparation(): boolean {
      return true;
    }

    /** Listens for the connection's ParseComplete messages: only while the query has parses outstanding, and bound once then. */
    #parsed: (() => void) | null = null;

    #onParseComplete(): void {
      const name = this.#parsing?.shift();
      const connection = this.#connection;
      if (name === undefined || name === "" || connection === null) return;
      connection.parsedStatements[name] = connection.submittedNamedStatements[name];
      delete connection.submittedNamedStatements[name];
    }

    prepare(connection: WireConnection): void {
      this.#connection = connection;
      const shapes = shapesOf(connection);
      // Kept shapes are of text results: binary ones are described every time (and not kept).
      const binary = this.#clientBinary && this.binary === true;
      for (let i = 0; i < this.#statements.length; i += 1) {
        const statement = this.#statements[i] as WireStatement;
        const name = this.#nameOf(statement.sql);
        const known = name !== undefined && (connection.parsedStatements[name] === statement.sql || connection.submittedNamedStatements[name] === statement.sql);
        if (!known) {
          if (this.#parsed === null) {
            this.#parsed = () => this.#onParseComplete();
            connection.on("parseComplete", this.#parsed);
          }
          connection.parse({ text: statement.sql, ...(name === undefined ? {} : { name }) });
          (this.#parsing ??= []).push(name ?? "");
          if (name !== undefined) {
            connection.submittedNamedStatements[name] = statement.sql;
            // A new parse of the name: its shape is described again.
            shapes.delete(name);
          }
        }
        // pg's serializer binds the unnamed statement for an empty name.
        connection.bind({ statement: name ?? "", values: statement.parameters, binary, valueMapper: asEncoded });
        const shape = name === undefined || binary ? undefined : shapes.get(name);
        if (shape === undefined) connection.describe({ type: "P", name: "" });
        this.#keepAs[i] = shape === undefined && name !== undefined && !binary ? name : null;
        this.#shapes[i] = shape ?? null;
        connection.execute({ portal: "" });
      }
      connection.sync();
    }

    handleRowDescription(message: { fields: readonly Field[] }): void {
      const shape = message.fields.length === 0 ? NO_ROWS : shapeOf(message.fields, this._result._types ?? pgTypes);
      this.#shapes[this.#index] = shape;
      this.#keep(shape);
    }

    /** Keeps the current statement's shape for its name on the connection, once its description arrived. */
    #keep(shape: RowShape): void {
      const name = this.#keepAs[this.#index];
      if (name === null || name === undefined || this.#connection === null) return;
      shapesOf(this.#connection).set(name, shape);
      this.#keepAs[this.#index] = null;
    }

    handleDataRow(message: { fields: readonly (string | null)[] }): void {
      if (this.#failure !== null) return;
      try {
        const shape = this.#shapes[this.#index];
        if (shape === null || shape === undefined) throw new Error("a data row arrived before its statement's row description");
        const { names, parsers, binary } = shape;
        const row: Row = { ...shape.template };
        const values = message.fields;
        for (let i = 0; i < values.length; i += 1) {
          const raw = values[i];
          const name = names[i] as string;
          if (raw === null || raw === undefined) row[name] = null;
          else row[name] = (parsers[i] as TypeParser)(binary[i] === true ? (Buffer.from(raw) as unknown as string) : raw);
        }
        this.#rows.push(row);
      } catch (error) {
        this.#failure = error;
      }
    }

    /** The statement ended: its answer, and the next statement's answer begins. */
    #end(text: string | null): void {
      // Described and answered without a RowDescription: it returns no rows (NoData).
      if (this.#shapes[this.#index] === null) this.#keep(NO_ROWS);
      const { command, rowCount } = commandComplete(text);
      this.#results.push({ command, rowCount, rows: this.#rows });
      this.#rows = [];
      this.#index += 1;
    }

    handleCommandComplete(message: { text: string }): void {
      this.#end(message.text);
    }

    handleEmptyQuery(): void {
      this.#end(null);
    }

    /** Parses the server skipped after an error never happened: forget them, so the next use parses again. */
    #finish(): void {
      const connection = this.#connection;
      if (connection === null) return;
      if (this.#parsed !== null) connection.removeListener("parseComplete", this.#parsed);
      this.#parsed = null;
      if (this.#parsing !== null) for (const name of this.#parsing) if (name !== "") delete connection.submittedNamedStatements[name];
      this.#parsing = null;
      this.#connection = null;
    }

    override handleError(error: unknown, connection: unknown): void {
      this.#finish();
      super.handleError(error, connection);
    }

    override handleReadyForQuery(connection: unknown): void {
      this.#finish();
      if (this.#failure !== null) {
        const failure = this.#failure;
        this.#failure = null;
        this.handleError(failure, connection);
        return;
      }
      try {
        this.callback(null, this.#results);
      } catch (error) {
        // As pg's Query: an exception of the callback is not the connection's.
        process.nextTick(() => {
          throw error;
        });
      }
    }
  }
  queryClass = Wire;
  return queryClass;
}
