// Types of scripts/pg-env.mjs for the TypeScript tests that import it.

/** A Postgres for the test suite (see pg-env.mjs for the order tried). */
export function ensurePostgres(opts?: {
  log?: (line: string) => void;
  localDsn?: string;
  libRoot?: string;
  usePath?: boolean;
  privateDatabase?: boolean;
}): Promise<{ dsn: string; stop: () => Promise<void>; source: string }>;

/** A throwaway cluster a test may stop and restart; `stop()` removes it. */
export interface ThrowawayCluster {
  dsn: string;
  port: number;
  dir: string;
  logFile: string;
  version: string;
  /** Stops and deletes the cluster. */
  stop(): Promise<void>;
  /** `pg_ctl stop -m <mode>` (the data directory stays). @default "fast" */
  shutdown(mode?: "smart" | "fast" | "immediate"): Promise<void>;
  /** Starts the server again on the same port and data directory. */
  start(): Promise<void>;
}

/** Throws, saying what to install, when initdb/pg_ctl/postgres cannot be found. */
export function startThrowawayCluster(opts?: { log?: (line: string) => void; libRoot?: string; usePath?: boolean }): Promise<ThrowawayCluster>;

export function findPgBinDir(opts?: { libRoot?: string; usePath?: boolean }): string | null;

export function redactDsn(dsn: string): string;

/** A database beside `dsn`'s on its server, `<its database>_<suffix>`, for a second lane of `pnpm test`. */
export function createDatabaseBeside(dsn: string, suffix: string): Promise<{ dsn: string; drop: () => Promise<void> }>;
