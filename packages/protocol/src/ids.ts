/**
 * Task and worker identifiers (§2.4).
 *
 * A task id is `task_` + a 26-character ULID: 48 bits of creation millisecond
 * then 80 random bits, in Crockford base 32. Ids therefore sort by
 * millisecond, and randomly within one — deliberately not monotonic, because
 * the claim order breaks same-millisecond ties on the id and peers generate
 * ids the same way.
 */
import { TIME_MAX, decodeTime, encodeTime, ulid } from "ulid";
import { describe } from "./describe.js";
import { InvalidArgument } from "./errors.js";

/** What every task id matches: `task_`, then a ULID whose first digit keeps it within 128 bits. */
export const TASK_ID_PATTERN: RegExp = /^task_[0-7][0-9A-HJKMNP-TV-Z]{25}$/;

const TASK_PREFIX = "task_";
const WORKER_PREFIX = "worker_";
/** Characters of a ULID that encode time. */
const TIME_LENGTH = 10;

/**
 * Random bytes fetched from the platform CSPRNG in bulk.
 *
 * The `ulid` package's default source makes one `getRandomValues` call per
 * character (16 per id); drawing 4096 bytes at a time makes that one call per
 * 256 ids on the submit path.
 */
const pool = new Uint8Array(4096);
let poolIndex = pool.length;

/**
 * A PRNG for `ulid` backed by `crypto.getRandomValues`.
 *
 * `ulid` maps the result `r` to the digit `floor(r × 32)`; returning
 * `(byte & 31) / 32` makes that digit exactly the low 5 bits of a uniform
 * byte, so each of the 16 digits carries 5 unbiased random bits (80 in all).
 */
function randomDigit(): number {
  if (poolIndex >= pool.length) {
    globalThis.crypto.getRandomValues(pool);
    poolIndex = 0;
  }
  return ((pool[poolIndex++] as number) & 31) / 32;
}

/**
 * A bare 26-character ULID for `nowMs`, with fresh randomness.
 *
 * `ulid()` treats a seed of 0 as "now", so time 0 is encoded directly.
 */
function newUlid(nowMs: number): string {
  if (!Number.isInteger(nowMs) || nowMs < 0 || nowMs > TIME_MAX) {
    throw new InvalidArgument(
      "nowMs",
      `cannot make an id for time ${String(nowMs)}: a ULID holds an integer number of milliseconds from 0 to ${TIME_MAX}; pass Date.now() or omit it`,
    );
  }
  if (nowMs === 0) return encodeTime(0, TIME_LENGTH) + ulid(1, randomDigit).slice(TIME_LENGTH);
  return ulid(nowMs, randomDigit);
}

/**
 * Generates a new task id: `task_` + ULID of `nowMs` with 80 fresh random bits.
 *
 * Generate it before opening any transaction, so a replayed transaction
 * reuses the same id (§2.4).
 *
 * @param nowMs - Creation time in epoch milliseconds. @default Date.now()
 * @example
 * ```ts
 * newTaskId(); // "task_01J9Z8Q0R8V6X4T2M1N3P5S7W9"
 * ```
 */
export function newTaskId(nowMs: number = Date.now()): string {
  return TASK_PREFIX + newUlid(nowMs);
}

/**
 * Generates a new worker id: `worker_` + ULID.
 *
 * Generate one per worker and never share it: the protocol only compares
 * worker ids for equality, so two live workers with one id would pass each
 * other's ownership checks.
 *
 * @example
 * ```ts
 * const workerId = newWorkerId(); // "worker_01J9Z8Q0R8V6X4T2M1N3P5S7W9"
 * ```
 */
export function newWorkerId(): string {
  return WORKER_PREFIX + newUlid(Date.now());
}

/**
 * Whether `value` is a well-formed task id (§2.4 pattern).
 *
 * @example
 * ```ts
 * isTaskId(newTaskId()); // true
 * isTaskId("task_abc"); // false
 * ```
 */
export function isTaskId(value: unknown): value is string {
  return typeof value === "string" && TASK_ID_PATTERN.test(value);
}

/**
 * The creation millisecond encoded in a task id.
 *
 * Throws `InvalidArgument` for anything that is not a task id, rather than
 * returning a meaningless time.
 *
 * @example
 * ```ts
 * taskIdTime(newTaskId(1_700_000_000_000)); // 1700000000000
 * ```
 */
export function taskIdTime(id: string): number {
  if (!isTaskId(id)) {
    throw new InvalidArgument(
      "id",
      `${describe(id)} is not a task id (expected "task_" followed by a 26-character ULID); pass an id returned by submit`,
    );
  }
  return decodeTime(id.slice(TASK_PREFIX.length));
}

