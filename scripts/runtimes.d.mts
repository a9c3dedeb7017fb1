// Types of scripts/runtimes.mjs for the TypeScript tests that import it.

/** A runtime the SQLite store is tested on, fetched from the npm registry when missing. */
export interface Runtime {
  name: string;
  /** The binary (node or bun). */
  bin: string;
  version: string;
  source: "cache" | "npm";
  /** The SQLite driver tested on it. */
  driver: "node:sqlite" | "bun:sqlite";
  label: string;
}

export const CACHE_DIR: string;
export const RUNTIMES: Readonly<Record<"node22" | "node24" | "bun", { package: string; version: string; bin: string; driver: string; label: string }>>;

/** The runtime's binary; throws, saying why, when it cannot be had. */
export function ensureRuntime(name: "node22" | "node24" | "bun"): Runtime;

/** better-sqlite3 built for the Node runtime `name` (cached); `modulePath` is what `require` takes. */
export function ensureBetterSqlite3For(name: "node22" | "node24"): { modulePath: string; source: "cache" | "built" };
