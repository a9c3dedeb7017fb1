/**
 * Choosing and loading the SQLite driver: the one named by the `driver`
 * option, or the first that loads of better-sqlite3, `node:sqlite` and
 * `bun:sqlite`. Loading happens on the first open, never at import, so
 * importing `cairnq` loads no SQLite binding until a SQLite store opens.
 */
import { createRequire } from "node:module";
import { CairnQError } from "@cairnq/protocol";
import { loadBetterSqlite3 } from "./better-sqlite3-driver.js";
import { loadBunSqlite } from "./bun-sqlite-driver.js";
import { loadNodeSqlite } from "./node-sqlite-driver.js";
import type { SQLiteDriver, SQLiteDriverName } from "./sqlite-driver.js";
import { SQLITE_DRIVER_NAMES } from "./sqlite-driver.js";

const loaded = new Map<SQLiteDriverName, SQLiteDriver>();

/** True under Bun, where native Node addons such as better-sqlite3 do not load. */
function underBun(): boolean {
  return (process.versions as Record<string, string | undefined>).bun !== undefined;
}

function runtime(): string {
  const bun = (process.versions as Record<string, string | undefined>).bun;
  return bun === undefined ? `Node ${process.version}` : `Bun ${bun}`;
}

/** Why `name` cannot load here, as a short clause, or the loaded driver. */
function tryLoad(name: SQLiteDriverName): SQLiteDriver | string {
  const cached = loaded.get(name);
  if (cached !== undefined) return cached;
  try {
    let driver: SQLiteDriver;
    switch (name) {
      case "better-sqlite3": {
        if (underBun()) return "better-sqlite3 is a Node addon, which Bun does not load";
        const require = createRequire(import.meta.url);
        try {
          require.resolve("better-sqlite3");
        } catch {
          return "better-sqlite3 is not installed";
        }
        driver = loadBetterSqlite3(import.meta.url);
        break;
      }
      case "node:sqlite":
        driver = loadNodeSqlite();
        break;
      case "bun:sqlite":
        driver = loadBunSqlite(import.meta.url);
        break;
    }
    loaded.set(name, driver);
    return driver;
  } catch (err) {
    return name === "better-sqlite3"
      ? `better-sqlite3 is installed but does not load (${(err as Error).message}); rebuild it for ${runtime()}: npm rebuild better-sqlite3`
      : (err as Error).message;
  }
}

/**
 * The driver named `name`, or without a name the first of
 * {@link SQLITE_DRIVER_NAMES} that loads in this runtime — under Bun,
 * `bun:sqlite` first.
 *
 * @throws CairnQError (fatal) when the named driver, or every driver, is unavailable, saying why and what to install.
 * @example
 * ```ts
 * const driver = loadSQLiteDriver("node:sqlite");
 * const connection = driver.openConnection("cairnq.db", 5000);
 * ```
 */
export function loadSQLiteDriver(name?: SQLiteDriverName): SQLiteDriver {
  if (name !== undefined) {
    const driver = tryLoad(name);
    if (typeof driver !== "string") return driver;
    const others = SQLITE_DRIVER_NAMES.filter((other) => other !== name);
    throw new CairnQError(
      `@cairnq/store-sqlite cannot use the SQLite driver '${name}' you chose on ${runtime()}: ${driver}. ` +
        `${advice(name)}, or choose another driver (${others.map((other) => `'${other}'`).join(", ")}) or leave the driver option out to take the first available`,
      { fatal: true },
    );
  }
  const reasons: string[] = [];
  // Bun also answers for node:sqlite, but its own module is the one the kit is run against there.
  const order: readonly SQLiteDriverName[] = underBun() ? ["bun:sqlite", "better-sqlite3", "node:sqlite"] : SQLITE_DRIVER_NAMES;
  for (const candidate of order) {
    const driver = tryLoad(candidate);
    if (typeof driver !== "string") return driver;
    reasons.push(`${candidate}: ${driver}`);
  }
  throw new CairnQError(
    `@cairnq/store-sqlite found no SQLite driver on ${runtime()} (${reasons.join("; ")}). ` +
      `Run on Node 22.16 or later (built-in node:sqlite) or on Bun (bun:sqlite), or install the addon next to cairnq: npm install better-sqlite3`,
    { fatal: true },
  );
}

function advice(name: SQLiteDriverName): string {
  switch (name) {
    case "better-sqlite3":
      return "Install it next to cairnq (npm install better-sqlite3) and run under Node";
    case "node:sqlite":
      return "Run on Node 22.16 or later";
    case "bun:sqlite":
      return "Run under Bun";
  }
}
