/**
 * Extension tables: state that features beyond protocol v1 keep beside the
 * v1 tables, never in them (§11: we add no columns, tables or triggers to
 * CairnQ's v1 objects).
 *
 * Each table is created on the first use of its feature, unless the catalog
 * already shows it with its indexes (a read, no lock: see
 * `extension-catalog.ts`) — `CREATE TABLE IF NOT EXISTS`, in a write transaction holding the key lock on
 * `cairnq:extension:<table>` so concurrent first uses (other processes, on
 * Postgres a concurrent `CREATE TABLE` would fail on the type catalog) create
 * it once. A database whose users never schedule or rate-limit has none of
 * them, and a protocol-v1 peer sharing the database never reads them: the v1
 * tables, their rows and every v1 transition stay exactly as specified. The
 * DDL is the same text on SQLite and Postgres (`bigint` has INTEGER affinity
 * on SQLite). They are not in the migration ledger, which belongs to v1.
 *
 * | table | feature | rows |
 * | --- | --- | --- |
 * | `cairnq_ext_schedules` | `worker.schedule` | one per schedule name: the last slot submitted |
 * | `cairnq_ext_rate_claims` | task option `rateLimit` | one per recent claim of a rate-limited name, pruned once outside the window |
 * | `cairnq_ext_steps` | durable steps (`ctx.step`, `ctx.sleep`, …) | one per step occurrence of a task, deleted with the task (foreign key, `ON DELETE CASCADE`) |
 * | `cairnq_ext_messages` | `cairnq.send` / `ctx.waitFor` | one per message sent to a task, deleted with the task |
 * | `cairnq_ext_task_groups` | submit option `group` | one per task submitted with a group (deleted with the task): its name, group, priority and state: in its group's walk (`queued`), taken by a group claim (`claimed`, kept after the task ends), or sent back to `queued` since (`requeued`) |
 * | `cairnq_ext_groups` | submit option `group` | one per name and group: its place in the served order, whether it may have queued work, and the `groupConcurrency` last enforced (for `explain`); kept when its tasks are purged, deleted by a group claim once idle with no waiting or running task (`group-prune.ts`; docs/protocol.md, "Groups") |
 * | `cairnq_ext_group_rate_claims` | task option `groupRateLimit` | one per recent claim of a rate-limited group, pruned once outside the window |
 * | `cairnq_ext_rate_limits` | task options `rateLimit`, `groupRateLimit` | one per name and scope (`name`: its `rateLimit`, `group`: its `groupRateLimit`): a limit a claim that recorded claims of it enforced (for `explain`: `rate-window-reads.ts`) |
 *
 * The three group tables are created together (`ensure(GROUP_TABLES)`), by
 * the first submit with a group or the first claim with group limits;
 * `cairnq_ext_rate_limits` by the first claim with a `rateLimit` or a
 * `groupRateLimit` (a database whose rate-claims tables an earlier store
 * created gets it then, beside them: nothing else changes).
 *
 * In a transaction view (`withTransaction`), whose statements run on the
 * caller's transaction, a first use creates them there where DDL is
 * transactional (SQLite, Postgres: they roll back with the caller); where DDL
 * commits the open transaction (`DialectCapabilities.ddlCommits`: MySQL,
 * MariaDB) the store the view belongs to creates them on its own connections
 * first, so no DDL ever commits the caller's writes.
 */
import { UnsupportedBackend } from "@cairnq/protocol";
import { CompiledQuery } from "kysely";
import type { StatementTemplate } from "./compiler.js";
import { RateLimitRecords } from "./rate-limit-records.js";
import type { StoreDialect } from "./dialect.js";
import { defaultExtensionCatalog, extensionObjects, objectsInPlace } from "./extension-catalog.js";
import type { AnyKysely, QueryRunner, Row } from "./executor.js";
import type { StoreStatements } from "./store-statements.js";
import type { Params } from "@cairnq/protocol/adapter";
import type { QueryResult } from "kysely";

/** Last submitted slot per schedule (`worker.schedule`). */
export const SCHEDULES_TABLE = "cairnq_ext_schedules";
/** Recent claims of rate-limited task names (`rateLimit`). */
export const RATE_CLAIMS_TABLE = "cairnq_ext_rate_claims";

/** The journal of durable steps, one row per step occurrence of a task. */
export const STEPS_TABLE = "cairnq_ext_steps";
/** Messages sent to tasks (`send`), consumed by waits. */
export const MESSAGES_TABLE = "cairnq_ext_messages";

/** The group of each task submitted with one (`group`); rows go with their task (`ON DELETE CASCADE`). */
export const TASK_GROUPS_TABLE = "cairnq_ext_task_groups";
/** Per name and group: served order and whether it may have queued work. */
export const GROUPS_TABLE = "cairnq_ext_groups";
/** Recent claims of rate-limited groups (`groupRateLimit`). */
export const GROUP_RATE_CLAIMS_TABLE = "cairnq_ext_group_rate_claims";
/** The group tables, created as one feature. */
export const GROUP_TABLES = "cairnq_ext_groups*";
/** Per name and scope, a `rateLimit` or `groupRateLimit` a claim that recorded claims under it enforced within about a minute (`rateLimitRowDue`). */
export const RATE_LIMITS_TABLE = "cairnq_ext_rate_limits";

/** The extension tables by feature. */
export type ExtensionTable =
  | typeof SCHEDULES_TABLE
  | typeof RATE_CLAIMS_TABLE
  | typeof STEPS_TABLE
  | typeof MESSAGES_TABLE
  | typeof GROUP_TABLES
  | typeof RATE_LIMITS_TABLE;

/** The DDL of each extension table, re-runnable. */
export const EXTENSION_DDL: Readonly<Record<ExtensionTable, readonly string[]>> = {
  [SCHEDULES_TABLE]: [
    `CREATE TABLE IF NOT EXISTS ${SCHEDULES_TABLE} (name text PRIMARY KEY, last_slot_ms bigint NOT NULL, created_at_ms bigint NOT NULL, updated_at_ms bigint NOT NULL)`,
  ],
  [RATE_CLAIMS_TABLE]: [
    `CREATE TABLE IF NOT EXISTS ${RATE_CLAIMS_TABLE} (name text NOT NULL, claimed_at_ms bigint NOT NULL, task_id text NOT NULL)`,
    `CREATE INDEX IF NOT EXISTS ${RATE_CLAIMS_TABLE}_name_idx ON ${RATE_CLAIMS_TABLE} (name, claimed_at_ms)`,
  ],
  // Its own feature, not a part of the two rate-claims features: each is created under its own key lock, and two
  // features creating one table under two locks could race on Postgres's type catalog.
  [RATE_LIMITS_TABLE]: [
    `CREATE TABLE IF NOT EXISTS ${RATE_LIMITS_TABLE} (name text NOT NULL, scope text NOT NULL, max_claims bigint NOT NULL, per_ms bigint NOT NULL, PRIMARY KEY (name, scope))`,
  ],
  [GROUP_TABLES]: [
    `CREATE TABLE IF NOT EXISTS ${TASK_GROUPS_TABLE} (task_id text PRIMARY KEY REFERENCES cairnq_tasks(id) ON DELETE CASCADE, name text NOT NULL, group_key text NOT NULL, priority integer NOT NULL, state text NOT NULL)`,
    // The one walk index of earlier stores, dropped first: on Postgres its ACCESS EXCLUSIVE lock is then this
    // transaction's first lock on the table, never an upgrade of the SHARE lock a CREATE INDEX below holds (a
    // claim that read the rows and then updates one would wait for that SHARE lock while the DROP waited for
    // the claim: a deadlock). No lock at all when the index is not there.
    `DROP INDEX IF EXISTS ${TASK_GROUPS_TABLE}_walk_idx`,
    // The claim walks one group's queued rows best first, and reads the name's requeued rows: an index
    // over each of the two states, so a claim that takes a task out of its group's walk (queued → claimed)
    // deletes one index entry and writes none.
    `CREATE INDEX IF NOT EXISTS ${TASK_GROUPS_TABLE}_queued_idx ON ${TASK_GROUPS_TABLE} (name, group_key, priority DESC, task_id) WHERE state = 'queued'`,
    `CREATE INDEX IF NOT EXISTS ${TASK_GROUPS_TABLE}_requeued_idx ON ${TASK_GROUPS_TABLE} (name, group_key) WHERE state = 'requeued'`,
    `CREATE TABLE IF NOT EXISTS ${GROUPS_TABLE} (name text NOT NULL, group_key text NOT NULL, served_seq bigint NOT NULL, active integer NOT NULL, touched bigint NOT NULL, concurrency_limit bigint, PRIMARY KEY (name, group_key))`,
    // The claim visits a name's active groups in served order.
    `CREATE INDEX IF NOT EXISTS ${GROUPS_TABLE}_served_idx ON ${GROUPS_TABLE} (name, active, served_seq, group_key)`,
    `CREATE TABLE IF NOT EXISTS ${GROUP_RATE_CLAIMS_TABLE} (name text NOT NULL, group_key text NOT NULL, claimed_at_ms bigint NOT NULL, task_id text NOT NULL)`,
    `CREATE INDEX IF NOT EXISTS ${GROUP_RATE_CLAIMS_TABLE}_group_idx ON ${GROUP_RATE_CLAIMS_TABLE} (name, group_key, claimed_at_ms)`,
    `CREATE INDEX IF NOT EXISTS ${GROUP_RATE_CLAIMS_TABLE}_name_idx ON ${GROUP_RATE_CLAIMS_TABLE} (name, claimed_at_ms)`,
  ],
  // JSON is kept as text on both backends, so the DDL and the binds are one text; the foreign key makes
  // a purge (ours or a v1 peer's) delete the journal with its task.
  [STEPS_TABLE]: [
    `CREATE TABLE IF NOT EXISTS ${STEPS_TABLE} (task_id text NOT NULL REFERENCES cairnq_tasks (id) ON DELETE CASCADE, name text NOT NULL, ` +
      `seq bigint NOT NULL, kind text NOT NULL, status text NOT NULL, result text, error text, attempt bigint NOT NULL, at_ms bigint NOT NULL, ` +
      `wake_at_ms bigint, waiting_for text, PRIMARY KEY (task_id, name))`,
  ],
  [MESSAGES_TABLE]: [
    `CREATE TABLE IF NOT EXISTS ${MESSAGES_TABLE} (task_id text NOT NULL REFERENCES cairnq_tasks (id) ON DELETE CASCADE, name text NOT NULL, ` +
      `seq bigint NOT NULL, payload text NOT NULL, at_ms bigint NOT NULL, consumed_by text, PRIMARY KEY (task_id, name, seq))`,
  ],
};

/** What a transaction view's extensions know of the store the view belongs to. */
export interface TransactionViewOf {
  /** The store's extensions (`null` when the view was built without its store): what it created or found. */
  readonly parent: StoreExtensions | null;
}

/**
 * What the extension modules (flow control, schedule slots) need of a
 * store: its statements, and the tables they use.
 */
export class StoreExtensions {
  readonly #ready = new Map<ExtensionTable, Promise<void>>();
  /** The tables this store created or found (their `ensure` resolved). */
  readonly #present = new Set<ExtensionTable>();
  /** The features a catalog read found (`#exist`, for {@link whenTables} and a view's {@link knows}): positives only. */
  readonly #found = new Set<ExtensionTable>();
  /** The rate limits this store wrote to `cairnq_ext_rate_limits`, so claims write them only when due. */
  readonly rateLimits = new RateLimitRecords();

  /** A transaction view's: what it knows of the store it belongs to (`null` in a store of its own). */
  readonly #view: TransactionViewOf | null;

  /**
   * @param statements - The store's statements (its Kysely instance, dialect and compiler).
   * @param view - When the store is a transaction view (its statements on a caller's transaction): the extensions of
   *   the store it belongs to, when known.
   */
  constructor(
    readonly statements: StoreStatements,
    view: TransactionViewOf | null = null,
  ) {
    this.#view = view;
  }

  /** The store's Kysely instance. */
  get db(): AnyKysely {
    return this.statements.db;
  }

  /** The store's dialect. */
  get dialect(): StoreDialect {
    return this.statements.dialect;
  }

  /**
   * Makes sure `table` (a feature's tables and indexes) is as its DDL leaves it, once per store: first a
   * catalog read outside any transaction (`extensionCatalog`), and only when an object the DDL creates
   * is missing (or one it drops is there, or the read failed) the DDL, in a write transaction holding
   * the key lock on `cairnq:extension:<table>`. A failed attempt is retried on the next call.
   */
  ensure(table: ExtensionTable): Promise<void> {
    let ready = this.#ready.get(table);
    if (ready === undefined) {
      ready = this.#ensure(table);
      this.#ready.set(table, ready);
      ready.then(
        () => this.#present.add(table),
        () => this.#ready.delete(table),
      );
    }
    return ready;
  }

  async #ensure(table: ExtensionTable): Promise<void> {
    const parent = this.#view?.parent ?? null;
    // Created or found by the store on its own connections: committed, and never dropped under a running store.
    if (parent?.isReady(table) === true) return;
    const ddl = this.dialect.extensionDdl?.(table) ?? EXTENSION_DDL[table];
    if (this.#view !== null && this.dialect.capabilities.ddlCommits === true) {
      // DDL here would commit the caller's transaction (and leave the rest of it in autocommit): the store creates
      // the tables on its own connections instead, before the view's statements use them — every feature's at once,
      // because a transaction whose snapshot began before a table was created cannot read it (MariaDB: "insufficient
      // history for index"), so a later first use in this transaction must not create another one.
      if (parent !== null) {
        for (const each of Object.keys(EXTENSION_DDL) as ExtensionTable[]) await parent.ensure(each);
        return;
      }
      if (await this.#inPlace(ddl)) return;
      throw new UnsupportedBackend(`creating the extension table ${table} inside a transaction view`, this.dialect.name, {
        message:
          `a transaction view on ${this.dialect.name} cannot create the extension table ${table}: its DDL would commit the caller's transaction; ` +
          "construct the view with KyselyStoreOptions.parent (its store creates the tables on its own connections), or use the feature once outside a transaction first",
      });
    }
    if (await this.#inPlace(ddl)) return;
    await this.dialect.executor.writeTransaction(this.db, async (tx) => {
      await this.dialect.keyLock.acquire(tx, `cairnq:extension:${table}`);
      for (const statement of ddl) await tx.executeQuery(CompiledQuery.raw(statement));
    });
  }

  /**
   * Whether the catalog shows every object of `ddl` as the DDL leaves it; false when the read fails or
   * `ddl` holds a statement the check does not know (a dialect's own `extensionDdl`): the DDL path decides.
   */
  async #inPlace(ddl: readonly string[]): Promise<boolean> {
    try {
      const objects = extensionObjects(ddl);
      return objectsInPlace(objects, await this.catalogNames([...objects.present, ...objects.absent]));
    } catch {
      return false;
    }
  }

  /**
   * Which of `names` (tables, indexes) the catalog shows, by the dialect's `extensionCatalog` read
   * outside any transaction, no lock: what {@link ensure} reads first, and what a read that must not
   * create the tables (`GroupReads`) checks instead. Rejects when the read fails.
   */
  async catalogNames(names: readonly string[]): Promise<Set<string>> {
    const query = this.dialect.extensionCatalog?.(names) ?? defaultExtensionCatalog(this.dialect.syntax, names);
    const { rows } = await this.dialect.executor.read(this.db, () => query);
    return new Set(rows.map((row) => String(row.name)));
  }

  /** Whether this store created or found `table` (an {@link ensure} of it resolved): it exists. */
  isReady(table: ExtensionTable): boolean {
    return this.#present.has(table);
  }

  /**
   * Whether `feature`'s tables `names` are known to exist, for a write that must not create them (a requeue mark,
   * `group-requeue.ts`): this store created or found them ({@link isReady}, {@link whenTables}). A transaction view,
   * fresh for each transaction, also asks the store it belongs to, which reads its catalog on its own connections
   * when it does not know yet: the check {@link whenTables} makes (`#exist`: no lock; remembered once true, read
   * again while false). False when nothing says so (or that read fails).
   */
  async knows(feature: ExtensionTable, names: readonly string[]): Promise<boolean> {
    if (this.#known(feature)) return true;
    const parent = this.#view?.parent ?? null;
    return parent !== null && (await parent.#exist(feature, names)) === true;
  }

  /** Whether this store created or found `feature`'s tables: its {@link ensure} resolved, or a catalog read showed them. */
  #known(feature: ExtensionTable): boolean {
    return this.isReady(feature) || this.#found.has(feature);
  }

  /**
   * Whether `feature`'s tables `names` exist, as this store knows (`#known`) or else as its catalog shows them
   * ({@link catalogNames}: no lock); `null` when that read fails. Only a true answer is remembered (in `#found`):
   * tables are never dropped under a running store, but another process may create them at any time, so a false
   * answer is read again next time.
   */
  async #exist(feature: ExtensionTable, names: readonly string[]): Promise<boolean | null> {
    if (this.#known(feature)) return true;
    let found: Set<string>;
    try {
      found = await this.catalogNames(names);
    } catch {
      return null;
    }
    if (!names.every((name) => found.has(name))) return false;
    this.#found.add(feature);
    return true;
  }

  /**
   * `read()` when the tables `names` of `feature` exist, else `empty` without a statement on them: what a
   * read that must not create its tables (`GroupReads`, `RateWindowReads`) runs. Whether they exist is this
   * store's `ensure` of the feature or a catalog read ({@link catalogNames}: no lock), cached once true:
   * tables are never dropped under a running store; not when false, since another process may create them
   * (`#exist`, which {@link knows} shares). When the catalog read fails (a dialect whose catalog
   * hook does not answer), `read()` runs with a missing-table error answered as `empty`.
   */
  async whenTables<T>(feature: ExtensionTable, names: readonly string[], empty: T, read: () => Promise<T>): Promise<T> {
    const exist = await this.#exist(feature, names);
    if (exist === false) return empty;
    if (exist === true) return read();
    try {
      return await read();
    } catch (err) {
      if (this.dialect.missingTable?.(err) === true) return empty;
      throw err;
    }
  }

  /** Runs `template` with `params` on the open transaction `tx`. */
  exec(tx: QueryRunner, template: StatementTemplate, params: Params): Promise<QueryResult<Row>> {
    return this.statements.exec(tx, template, params);
  }
}
