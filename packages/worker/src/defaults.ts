/**
 * The worker's public names for the §8.1 defaults, which live once in
 * `@cairnq/protocol` (`WORKER_DEFAULTS`), plus the one default that is this
 * package's own choice rather than a protocol number.
 */
import { WORKER_DEFAULTS } from "@cairnq/protocol/sdk";

/** Handler calls run at once (§8.1): `WORKER_DEFAULTS.concurrency`. */
export const DEFAULT_CONCURRENCY: number = WORKER_DEFAULTS.concurrency;

/** Idle sleep after an empty claim (§8.1): `WORKER_DEFAULTS.pollIntervalMs`. */
export const DEFAULT_POLL_INTERVAL_MS: number = WORKER_DEFAULTS.pollIntervalMs;

/** Sleep after a failed claim cycle before trying again (§8.1): `WORKER_DEFAULTS.claimErrorSleepMs`. */
export const CLAIM_ERROR_SLEEP_MS: number = WORKER_DEFAULTS.claimErrorSleepMs;

/** How long `stop()` lets handlers finish before abandoning them. Not a protocol number. */
export const DEFAULT_STOP_TIMEOUT_MS = 30_000;

/**
 * The longest sleep between claim attempts while the store keeps failing
 * transiently: `CLAIM_ERROR_SLEEP_MS` doubles per failure up to this. Short
 * enough that a worker resumes within seconds of a restarted server.
 */
export const CLAIM_ERROR_MAX_SLEEP_MS = 5_000;
