// Types of scripts/mysql-env.mjs for the TypeScript tests that import it.

/** A MySQL/MariaDB database for the test suite (see mysql-env.mjs for the order tried). */
export function ensureMySQL(opts?: { log?: (line: string) => void }): Promise<{ dsn: string; stop: () => Promise<void>; source: string; beside: (suffix: string) => Promise<string> }>;
