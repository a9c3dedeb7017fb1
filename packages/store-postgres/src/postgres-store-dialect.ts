import { CompiledQuery } from "kysely";
import { logSafely } from "@cairnq/protocol/sdk";
import type { CombiningWritesOptions, DialectCapabilities, SqlClock, WriteBatching, WriteCombinerOptions } from "@cairnq/store-kysely";
import { BaseStoreDialect, CombiningWrites, POSTGRES_CLOCK, SingleWrites } from "@cairnq/store-kysely";
import type { PostgresConnectionOptions, PostgresTarget } from "./postgres-connection.js";
import { PostgresConnection } from "./postgres-connection.js";
import { PostgresExecutor } from "./postgres-executor.js";
import { KEY_LOCK_SQL, PostgresKeyLock, TRY_KEY_LOCK_SQL } from "./postgres-key-lock.js";
import { ListenLane } from "./postgres-listen-lane.js";
import { registerPrepared } from "./postgres-prepared.js";
import { PostgresSchemaManager } from "./postgres-schema.js";
import { PostgresStoreSyntax } from "./postgres-store-syntax.js";
import { PostgresWakeups } from "./postgres-wakeups.js";

/**
 * Rows per combined statement on Postgres (the combiner's own default is 128). In a c64 drain with
 * `prefetch: 64` the settlements that collect while one complete is in flight are more than 128:
 * at 128, 93 of 95 complete statements were full and the rest waited behind them, holding the
 * worker's in-flight room and so its next claims; at 512 none was (mean 135 rows, most 320) and
 * the same drain ran 1.02–1.27× as fast in 5 of 5 alternating pairs (a loaded machine).
 */
const DEFAULT_MAX_ROWS = 512;

/** The LISTEN check's NOTIFY (§9 check), sent through the work pool like any of the store's statements. */
const CHECK_NOTIFY_SQL = "SELECT pg_notify($1, $2)";

/**
 * The Postgres dialect of the shared core: `$n` placeholders with casts,
 * `text[]` lists, JSON columns returned as text, the database clock
 * (`clock_timestamp()` / `now()`, §2.1), the advisory key lock (§5.0),
 * `FOR UPDATE SKIP LOCKED` row picking, the installation guard and
 * migrations under the ledger lock, LISTEN/NOTIFY wakeups, and write
 * combining (concurrent owned writes and unkeyed submits share `unnest`
 * multi-row statements). Statements run as autocommit statements on the pool and
 * `BEGIN … COMMIT` at the server's default isolation (READ COMMITTED), never
 * raised (§3.9).
 *
 * Named `PostgresStoreDialect` because Kysely's own `PostgresDialect` is the
 * driver-level dialect this one runs on.
 *
 * @example
 * const dialect = new PostgresStoreDialect("postgres://localhost/app", { schema: "jobs" });
 * const store = new KyselyStore(dialect.connection.db, dialect, { destroyOnClose: dialect.connection.owned });
 */
export class PostgresStoreDialect extends BaseStoreDialect {
  readonly name = "postgres";
  readonly syntax = new PostgresStoreSyntax();
  override readonly clock: SqlClock = POSTGRES_CLOCK;
  override readonly keyLock: PostgresKeyLock = new PostgresKeyLock();
  override readonly executor: PostgresExecutor;
  override readonly capabilities: DialectCapabilities;
  override readonly wakeups: PostgresWakeups;
  /** Write combining ({@link CombiningWrites}), or every write its own statement with `combine: false`. */
  override readonly writes: WriteBatching;
  /** The write combining this dialect was made with (the `combine` option's bounds and the split rule), or `null` with `combine: false`. */
  readonly combining: CombiningWritesOptions | null;
  readonly schema: PostgresSchemaManager;
  /** Lends the LISTEN connection to the store's autocommit writes (`postgres-listen-lane.ts`), or `null` where it cannot. */
  readonly lane: ListenLane | null;
  /** The store's connection: its Kysely instance, who owns it, and the LISTEN connector. */
  readonly connection: PostgresConnection;

  /**
   * @param target - A connection string, a `pg.Pool` or a Kysely instance.
   * @param options - The `schema` option, pool size, LISTEN source and error hook; `combine`: the
   *   write combiner's bounds, or `false` for one statement per write.
   */
  constructor(target: PostgresTarget, options: PostgresConnectionOptions & { readonly combine?: false | WriteCombinerOptions }) {
    super();
    this.connection = new PostgresConnection(target, options);
    const connection = this.connection;
    // The lane reads the wakeups' LISTEN connection only when a write runs, long after both exist.
    const lane = connection.listenRunsWrites
      ? new ListenLane(
          () => this.wakeups.lend(),
          () => this.wakeups.listeningClient,
          () => connection.listenFoundDead(),
          (error) => connection.listenFoundReadOnly(error),
        )
      : null;
    this.lane = lane;
    if (lane !== null) connection.onSuspects = () => lane.suspect();
    this.executor = new PostgresExecutor(connection.pipelines, connection.pipelines ? connection : null, lane);
    this.wakeups = new PostgresWakeups(
      connection.listen,
      (error) => connection.report(error, "listen"),
      connection.timeouts.listenPingIntervalMs,
      connection.timeouts.listenCheckTimeoutMs <= 0
        ? null
        : {
            notify: async (channel, payload) => {
              await this.executor.write(connection.db, () => CompiledQuery.raw(CHECK_NOTIFY_SQL, [channel, payload]));
            },
            timeoutMs: connection.timeouts.listenCheckTimeoutMs,
            onDeaf: (error) => logSafely(connection.logger, "warn", error.message, { listenState: "deaf" }),
          },
      {
        connectTimeoutMs: connection.timeouts.connectTimeoutMs,
        // The LISTEN statement is bounded like the check that follows it (or like the ping, with the check off).
        listenTimeoutMs: connection.timeouts.listenCheckTimeoutMs > 0 ? connection.timeouts.listenCheckTimeoutMs : connection.timeouts.listenPingIntervalMs,
        onUnreachable: (message, error) => logSafely(connection.logger, "warn", message, { error, listenState: this.wakeups.state }),
      },
    );
    const wakeups = this.wakeups;
    this.capabilities = Object.freeze({
      skipLocked: true,
      // Only while a LISTEN connection may hear them: none (a Kysely instance needs the `listen` option), refused or deaf is false.
      get pushWakeups(): boolean {
        return wakeups.pushing;
      },
      transactionalComplete: true,
      databaseClock: true,
    });
    this.schema = new PostgresSchemaManager(connection, this.wakeups, this.syntax, this.clock);
    // Registered whether or not they are prepared by name: registration is also what gives them the store's read timeout.
    registerPrepared(KEY_LOCK_SQL, { waits: true });
    registerPrepared(TRY_KEY_LOCK_SQL);
    registerPrepared(CHECK_NOTIFY_SQL);
    this.combining = options.combine === false ? null : Object.freeze({ maxRows: DEFAULT_MAX_ROWS, ...options.combine, splittable: rejectedWhole });
    this.writes = this.combining === null ? new SingleWrites() : new CombiningWrites(this.combining);
  }

  /** Every statement text the store compiles is the store's own: prepared by name on the pool's clients (unless `preparedStatements: false`), bounded by `storeQueryTimeoutMs`. */
  override statementCompiled(sql: string): void {
    registerPrepared(sql);
  }
}

/**
 * SQLSTATE classes after which a multi-row statement certainly applied nothing and may be re-sent in
 * halves: 22 data exception (e.g. a `\u0000` the jsonb parser rejects, 22P05), 23 integrity
 * constraint, 40 transaction rollback (deadlock, serialization), 54 program limit exceeded. The server
 * answered with an error for an autocommit statement, so it rolled back. Connection errors (no
 * SQLSTATE, or class 08/57) leave the outcome unknown and are never re-sent.
 */
const SPLITTABLE = /^(22|23|40|54)[0-9A-Z]{3}$/;

function rejectedWhole(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && SPLITTABLE.test(code);
}
