/**
 * The executor's direct path: a statement (or a claim's connection) run on
 * a client checked out of the very pool Kysely uses, without Kysely's
 * layers in between.
 *
 * Kysely's `db.executeQuery` reaches `pg` through six async frames (the
 * executor, its connection provider, the driver's checkout, the consumer,
 * the connection's `executeQuery`, the plugins' result transform), and
 * `db.connection().execute` builds a new Kysely instance per connection it
 * lends. On the store's hot statements — a client's submit and read, a
 * worker's claim and complete — that is time and garbage on the latency
 * path of every `call()` and claim for nothing the store uses: its Kysely
 * has no plugins, no logger and no connection hooks. The direct path does
 * what those layers do for it: check a client out of the pool, send the
 * statement through the client's (wrapped) `query`, shape the answer as
 * Kysely's Postgres driver does, release the client.
 *
 * Only where Kysely's pool is the store's own to reach (a connection
 * string, a `pg.Pool`): with a caller's Kysely instance, its plugins and
 * hooks must see every statement, so everything goes through it.
 */
import { statementFailure } from "./postgres-connect-error.js";
import type { CompiledQuery, PostgresPool, QueryResult } from "kysely";
import type { QueryRunner, Row } from "@cairnq/store-kysely";

/** The client a {@link PostgresPool} lends (Kysely's own type of it). */
type PooledClient = Awaited<ReturnType<PostgresPool["connect"]>>;

/** A client a statement can run on: a pooled one, or the LISTEN connection (`postgres-listen-lane.ts`). */
export type DirectClient = Pick<PooledClient, "query">;

/** What `pg` answers for one statement, as far as Kysely reads it. */
interface PgAnswer {
  readonly command?: string | null;
  readonly rowCount?: number | null;
  readonly rows?: Row[] | null;
}

/** Kysely's result of a statement, exactly as its Postgres driver shapes `pg`'s answer. */
function kyselyResult(answer: PgAnswer): QueryResult<Row> {
  const { command, rowCount, rows } = answer;
  if (command === "ROLLBACK" || command === "COMMIT") return { rows: [{ command }] };
  const counted = command === "INSERT" || command === "UPDATE" || command === "DELETE" || command === "MERGE";
  return { numAffectedRows: counted ? BigInt(rowCount ?? 0) : undefined, rows: rows ?? [] };
}

/** Runs `query` on `client` (its wrapped `query`: named prepared statements, pipelines), answering as Kysely's driver does. */
export async function runOnClient(client: DirectClient, query: CompiledQuery<unknown>): Promise<QueryResult<Row>> {
  try {
    return kyselyResult(await client.query<Row>(query.sql, [...query.parameters]));
  } catch (error) {
    throw statementFailure(error);
  }
}

/** One checked-out client as a {@link QueryRunner}: what a claim's transaction body runs its statements on. */
class DirectRunner implements QueryRunner {
  readonly #client: PooledClient;

  constructor(client: PooledClient) {
    this.#client = client;
  }

  executeQuery<R>(query: CompiledQuery<R>): Promise<QueryResult<R>> {
    return runOnClient(this.#client, query) as Promise<QueryResult<R>>;
  }
}

/**
 * Runs one statement on a client of `pool`, released after (as Kysely releases it: with nothing
 * against it; the pool's own wrapper drops a client that proved unusable).
 *
 * @example
 * const { rows } = await runDirect(connection.directPool, CompiledQuery.raw("SELECT 1"));
 */
export async function runDirect(pool: PostgresPool, query: CompiledQuery<unknown>): Promise<QueryResult<Row>> {
  const client = await pool.connect();
  try {
    return await runOnClient(client, query);
  } finally {
    client.release();
  }
}

/**
 * Lends `body` one client of `pool` as a {@link QueryRunner} and releases it after, as
 * `db.connection().execute` does.
 *
 * @example
 * await withDirectConnection(pool, async (conn) => conn.executeQuery(CompiledQuery.raw("SELECT 1")));
 */
export async function withDirectConnection<T>(pool: PostgresPool, body: (conn: QueryRunner) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    return await body(new DirectRunner(client));
  } finally {
    client.release();
  }
}
