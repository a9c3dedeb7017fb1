import { loadDriver } from "@cairnq/runtime";

/**
 * The parts of `mysql2`'s callback pool the store uses (what Kysely's
 * `MysqlDialect` calls, plus the `connection` event for session settings),
 * so the store's types never import the driver.
 */
export interface MySQLPool {
  getConnection(callback: (error: unknown, connection: MySQLPoolConnection) => void): void;
  end(callback: (error: unknown) => void): void;
  /** `connection`: a new connection, before it is handed out; `acquire`: a connection handed out; `release`: one back in the free list. */
  on(event: "connection" | "acquire" | "release", listener: (connection: MySQLPoolConnection) => void): unknown;
}

/** A pooled connection, as Kysely's `MysqlDialect` and the session setup use it. */
export interface MySQLPoolConnection {
  query(sql: string, parameters: readonly unknown[], callback: (error: unknown, result: unknown) => void): unknown;
  query(sql: string, callback?: (error: unknown, result: unknown) => void): unknown;
  release(): void;
}

/** The `mysql2` module's `createPool`, the one function the store calls. */
export interface MySQLDriverModule {
  createPool(options: Record<string, unknown>): MySQLPool;
}

/**
 * Loads `mysql2` when the first store is built from a connection string
 * rather than at import, so importing `cairnq` loads no MySQL driver until a
 * MySQL store is made. Absent, it fails with "npm install mysql2".
 */
export function loadMySQLDriver(): MySQLDriverModule {
  return loadDriver<MySQLDriverModule>({ module: "mysql2", requiredBy: "@cairnq/store-mysql", backend: "MySQL", from: import.meta.url });
}
