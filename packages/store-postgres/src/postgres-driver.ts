import type pg from "pg";
import { loadDriver } from "@cairnq/runtime";

/**
 * Loads `pg` when the first connection is made rather than at import, so
 * importing `cairnq` (which re-exports this store) loads no driver until a
 * Postgres store actually connects — and an app that installed only
 * better-sqlite3 never needs it. Absent, it fails with "npm install pg".
 */
export function loadPgDriver(): typeof pg {
  return loadDriver<typeof pg>({ module: "pg", requiredBy: "@cairnq/store-postgres", backend: "Postgres", from: import.meta.url });
}
