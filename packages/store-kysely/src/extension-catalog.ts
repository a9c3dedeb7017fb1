/**
 * The catalog check before an extension feature's DDL: which tables and
 * indexes the DDL creates (and which it drops), read from the DDL text itself
 * so the check and the DDL can never disagree, and the catalog reads that
 * answer whether they are there — on SQLite (`sqlite_master`) and Postgres
 * (`pg_catalog`, in the connection's `current_schema()`: CairnQ's SQL never
 * names a schema, so an unqualified `CREATE TABLE` lands there).
 *
 * When every object is as the DDL would leave it, `StoreExtensions.ensure`
 * runs no write transaction, takes no key lock and no table lock: on Postgres
 * a `CREATE INDEX IF NOT EXISTS` takes a SHARE lock on its table even when the
 * index exists, on MySQL/MariaDB every DDL statement commits and takes
 * metadata locks, on SQLite the write transaction takes the write lock.
 */
import { CompiledQuery } from "kysely";
import { PostgresSyntax } from "./postgres-syntax.js";
import type { SqlSyntax } from "./sql-syntax.js";

/** What a feature's DDL leaves behind: the objects it creates, and those it drops. */
export interface ExtensionObjects {
  /** Tables and indexes that exist once the DDL ran (`CREATE … IF NOT EXISTS <name>`). */
  readonly present: readonly string[];
  /** Indexes that do not (`DROP INDEX IF EXISTS <name>`). */
  readonly absent: readonly string[];
}

const STATEMENT = /^\s*(CREATE\s+TABLE\s+IF\s+NOT\s+EXISTS|CREATE\s+(?:UNIQUE\s+)?INDEX\s+IF\s+NOT\s+EXISTS|DROP\s+INDEX\s+IF\s+EXISTS)\s+([A-Za-z_][A-Za-z0-9_]*)[\s(;]/i;

/**
 * The objects `ddl` creates and drops, by name.
 *
 * @throws Error for a statement of another form: a new kind of statement in the DDL must be taught to
 *   the check (or the check would call the feature ready while the statement never ran).
 */
export function extensionObjects(ddl: readonly string[]): ExtensionObjects {
  const present: string[] = [];
  const absent: string[] = [];
  for (const statement of ddl) {
    const m = STATEMENT.exec(`${statement} `);
    if (m === null) throw new Error(`extension DDL statement of a form the catalog check does not know: ${statement.slice(0, 80)}`);
    const name = m[2] as string;
    (/^DROP/i.test(m[1] as string) ? absent : present).push(name);
  }
  return { present, absent };
}

/** Whether `found` (the names a catalog read returned) shows every object of `objects` as its DDL leaves it. */
export function objectsInPlace(objects: ExtensionObjects, found: ReadonlySet<string>): boolean {
  return objects.present.every((name) => found.has(name)) && !objects.absent.some((name) => found.has(name));
}

/** The names as literals of `syntax`, comma-separated (they are identifiers from the DDL: plain words). */
function nameList(syntax: SqlSyntax, names: readonly string[]): string {
  return names.map((name) => syntax.literal(name)).join(", ");
}

/** SQLite's catalog read: the tables and indexes of the main database among `names`, in column `name`. */
export function sqliteCatalogQuery(syntax: SqlSyntax, names: readonly string[]): CompiledQuery {
  return CompiledQuery.raw(`SELECT name FROM sqlite_master WHERE type IN ('table', 'index') AND name IN (${nameList(syntax, names)})`);
}

/**
 * Postgres's catalog read: the relations among `names` in the connection's `current_schema()` (where
 * the DDL's unqualified names create them), in column `name`. No lock on any table.
 */
export function postgresCatalogQuery(syntax: SqlSyntax, names: readonly string[]): CompiledQuery {
  return CompiledQuery.raw(
    `SELECT c.relname::text AS name FROM pg_catalog.pg_class AS c JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace ` +
      `WHERE n.nspname = current_schema() AND c.relname IN (${nameList(syntax, names)})`,
  );
}

/**
 * The default of `StoreDialect.extensionCatalog`, for the first-party backends: with a
 * {@link PostgresSyntax} (or a subclass), the relations among `names` in `current_schema()`
 * (`pg_catalog`; CairnQ's SQL never names a schema, so the DDL creates them there); with any other
 * syntax, SQLite's `sqlite_master`. A dialect of another database overrides the hook (MySQL:
 * `information_schema`, in the current database).
 */
export function defaultExtensionCatalog(syntax: SqlSyntax, names: readonly string[]): CompiledQuery {
  return syntax instanceof PostgresSyntax ? postgresCatalogQuery(syntax, names) : sqliteCatalogQuery(syntax, names);
}
