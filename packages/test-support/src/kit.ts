/**
 * The per-case timeout of the conformance kit's runs on server stores
 * (`runConformance`'s `caseTimeoutMs`), against a hang only. The kit's
 * longest case, `group-paged-walk`, took about 5 s on Postgres and on
 * MariaDB here, and more than vitest's 20 s default (4 runs in 4, both
 * servers; one more passed at 19,993 ms) with six busy loops on the 2
 * cores beside it: a CPU-bound case slows down with the machine.
 */
export const KIT_CASE_TIMEOUT_MS = 60_000;
