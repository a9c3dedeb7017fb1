/** Returns the `pgbouncer` binary to use (installing Debian's package as root when missing), or throws saying how to get one. */
export function ensurePgBouncer(options?: { log?: (line: string) => void }): { binary: string; source: "CAIRNQ_TEST_PGBOUNCER" | "PATH" | "apt-get" };
