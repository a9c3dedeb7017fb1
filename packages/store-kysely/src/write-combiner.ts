/**
 * Write combining: concurrent single-row writes of one process gathered
 * into multi-row statements, flushed the way group commit works.
 *
 * Terminology:
 * - **entry**: one caller's write (its item, the key it may not share a
 *   statement with, its size) and the caller's promise;
 * - **flush**: one batch of entries handed to the runner, which runs one
 *   multi-row statement (or splits it, see `CombiningWrites`) and settles every
 *   entry itself — each with its own row or its own error, matched by id;
 * - **pending**: entries waiting for a flush.
 *
 * Group commit: the first write schedules a flush for the end of the current
 * event-loop turn (`setImmediate`, no timer) — or, for a combiner made with
 * `flushAt: "tick"`, for the end of the current tick (`process.nextTick`:
 * once the promise chains running now have run, before the loop goes on to
 * I/O, so writes made by every chain of one burst still share it); while that
 * flush runs, writes collect, and the next flush starts the moment the
 * current one returns. So a lone caller pays one loop turn (none through
 * `runAlone` or with `flushAt: "tick"`), and under load each statement
 * carries what arrived during the previous one.
 */

// The modules' own setImmediate and nextTick, not the globals: fake timers (vi.useFakeTimers(), Jest's modern
// timers) replace the global ones, and every combined write of an app's tests would then wait for a tick that never
// comes.
import { nextTick } from "node:process";
import { requireInt } from "@cairnq/protocol/adapter";
import { checkOptions } from "@cairnq/runtime";
import { setImmediate as nextImmediate } from "node:timers";

/**
 * When an idle combiner's first write flushes: `"turn"` at the end of the event-loop turn (`setImmediate`),
 * `"tick"` at the end of the current tick (`process.nextTick`), before any I/O of this turn.
 */
export type FlushAt = "turn" | "tick";

/** Bounds of a {@link WriteCombiner}. */
export interface WriteCombinerOptions {
  /**
   * Most entries in one statement. A larger statement spreads one commit
   * over more rows but makes its first caller wait for all of them; the raw
   * pg floor of `bench/` gains little past 64 rows per statement.
   * @default 128
   */
  readonly maxRows?: number;
  /**
   * Most bytes (the entries' sizes: encoded JSON plus a fixed overhead per
   * row) in one statement; an entry larger than this runs alone.
   * @default 1048576 (1 MiB)
   */
  readonly maxBytes?: number;
  /**
   * Entries waiting for a flush beyond which further callers wait
   * (backpressure) until a flush takes some.
   * @default 4 × maxRows
   */
  readonly maxPendingRows?: number;
  /**
   * Bytes waiting for a flush beyond which further callers wait.
   * @default 4 × maxBytes
   */
  readonly maxPendingBytes?: number;
}

/** Every key of {@link WriteCombinerOptions}: what a store's `combine` option may hold (its unknown-key check). */
export const WRITE_COMBINER_OPTION_KEYS = Object.freeze(["maxRows", "maxBytes", "maxPendingRows", "maxPendingBytes"] as const satisfies readonly (keyof WriteCombinerOptions)[]);

/**
 * A store's `combine` option (an object of {@link WRITE_COMBINER_OPTION_KEYS}), checked when the store is built:
 * `InvalidArgument` naming the option and the value, as every option mistake is, where the combiner's own check
 * (`RangeError`) would reach the caller as an error no `isFatalError` knows, from inside the store's build.
 */
export function checkCombineOption(combine: unknown): void {
  const given = checkOptions(combine, "the combine option", WRITE_COMBINER_OPTION_KEYS);
  for (const key of WRITE_COMBINER_OPTION_KEYS) if (given[key] !== undefined) requireInt(given[key], `combine.${key}`, 1);
}

/** One caller's write inside a flush; the runner settles it exactly once. */
export interface CombinedWrite<I, O> {
  readonly item: I;
  /** Entries with the same non-null key never share a flush (e.g. a task id, a business key). */
  readonly key: string | null;
  readonly bytes: number;
  resolve(value: O): void;
  reject(error: unknown): void;
}

/** Runs one flush: settles every entry (those it leaves unsettled get the error it throws, or a plain error). */
export type FlushRunner<I, O> = (batch: readonly CombinedWrite<I, O>[]) => Promise<void>;

const DEFAULT_MAX_ROWS = 128;
const DEFAULT_MAX_BYTES = 1 << 20;

/**
 * A pending write: settles its caller's promise once, whatever settles it first (the runner, or the
 * flush's own fallback). A class rather than an object with two closures: one object per write.
 */
class Entry<I, O> implements CombinedWrite<I, O> {
  settled = false;
  readonly #resolve: (value: O) => void;
  readonly #reject: (error: unknown) => void;

  constructor(
    readonly item: I,
    readonly key: string | null,
    readonly bytes: number,
    resolve: (value: O) => void,
    reject: (error: unknown) => void,
  ) {
    this.#resolve = resolve;
    this.#reject = reject;
  }

  resolve(value: O): void {
    if (this.settled) return;
    this.settled = true;
    this.#resolve(value);
  }

  reject(error: unknown): void {
    if (this.settled) return;
    this.settled = true;
    // The caller gets exactly what its own statement raised (a driver error, LostLease, …).
    this.#reject(error);
  }
}

/**
 * Gathers writes into bounded batches for a {@link FlushRunner}, one flush in
 * flight at a time.
 *
 * @example
 * const combiner = new WriteCombiner<Params, Task>(async (batch) => { ... each.resolve(row) ... });
 * const task = await combiner.add(params, params.taskId as string, 200);
 */
export class WriteCombiner<I, O> {
  readonly maxRows: number;
  readonly maxBytes: number;
  readonly maxPendingRows: number;
  readonly maxPendingBytes: number;
  readonly #run: FlushRunner<I, O>;
  #pending: Entry<I, O>[] = [];
  #pendingBytes = 0;
  #scheduled = false;
  #flushing = false;
  /** Entries of the last flush (a `runAlone` counts 1): past 1, writes come in bursts and `runAlone` stands aside. */
  #lastFlushRows = 1;
  readonly #flushAt: FlushAt;
  #spaceWaiters: (() => void)[] = [];
  /**
   * The batch of the flush in flight (its keys are what {@link WriteCombiner.takePending} must leave); `null` while
   * none runs, or while a `runAlone` write (key unknown) does. Kept as the batch: the key set is built only by a take.
   */
  #flight: readonly Entry<I, O>[] | null = null;

  /**
   * @param run - Runs one flush.
   * @param options - Bounds; see {@link WriteCombinerOptions}.
   * @param flushAt - When an idle combiner's first write flushes; see {@link FlushAt}.
   */
  constructor(run: FlushRunner<I, O>, options: WriteCombinerOptions = {}, flushAt: FlushAt = "turn") {
    this.#run = run;
    this.#flushAt = flushAt;
    this.maxRows = positive(options.maxRows ?? DEFAULT_MAX_ROWS, "maxRows");
    this.maxBytes = positive(options.maxBytes ?? DEFAULT_MAX_BYTES, "maxBytes");
    this.maxPendingRows = positive(options.maxPendingRows ?? 4 * this.maxRows, "maxPendingRows");
    this.maxPendingBytes = positive(options.maxPendingBytes ?? 4 * this.maxBytes, "maxPendingBytes");
  }

  /** Entries waiting for a flush (not counting the one in flight). */
  get pending(): number {
    return this.#pending.length;
  }

  /** Whether a flush is running. */
  get flushing(): boolean {
    return this.#flushing;
  }

  /**
   * Adds one write; resolves or rejects with what the runner gave this entry.
   * Waits first while the pending bounds are reached (backpressure), in
   * arrival order.
   */
  add(item: I, key: string | null, bytes: number): Promise<O> {
    // Room at once (the usual case): no async frame around the write's own promise.
    if (this.#spaceWaiters.length === 0 && !this.#full(bytes)) return this.#enqueue(item, key, bytes);
    return this.#addWhenRoom(item, key, bytes);
  }

  async #addWhenRoom(item: I, key: string | null, bytes: number): Promise<O> {
    while (this.#spaceWaiters.length > 0 || this.#full(bytes)) {
      await new Promise<void>((resolve) => this.#spaceWaiters.push(resolve));
      if (!this.#full(bytes)) break;
    }
    return this.#enqueue(item, key, bytes);
  }

  #enqueue(item: I, key: string | null, bytes: number): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.#pending.push(new Entry(item, key, bytes, resolve, reject));
      this.#pendingBytes += bytes;
      this.#schedule();
    });
  }

  /**
   * When nothing is pending, scheduled or in flight, and the last flush carried one write, runs
   * `alone` at once as the flush in flight and returns its promise: writes added meanwhile wait for
   * it, then go together, as behind any flush. Otherwise `null` (use {@link WriteCombiner.add}).
   * For a caller whose single-row write is cheaper run directly than as a batch of one: a lone
   * caller then skips the loop turn and the entry bookkeeping (Postgres submit c1: about 25 µs less
   * client CPU per submit, measured with real round trips). After a flush of several writes the
   * callers come in bursts (each resubmits when its batch returns), and the first of every burst
   * running alone would split each batch in two (Postgres submit c64: −20% in alternating runs), so
   * `runAlone` stands aside until a flush carries a single write again.
   */
  runAlone(alone: () => Promise<O>): Promise<O> | null {
    if (this.#flushing || this.#scheduled || this.#pending.length > 0 || this.#lastFlushRows > 1) return null;
    this.#lastFlushRows = 1;
    this.#flushing = true;
    let done: Promise<O>;
    try {
      done = alone();
    } catch (error) {
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- the caller gets exactly what `alone` threw
      done = Promise.reject(error);
    }
    const after = (): void => {
      this.#flushing = false;
      if (this.#pending.length > 0) void this.#flush();
    };
    done.then(after, after);
    return done;
  }

  #full(bytes: number): boolean {
    if (this.#pending.length === 0) return false;
    return this.#pending.length >= this.maxPendingRows || this.#pendingBytes + bytes > this.maxPendingBytes;
  }

  #schedule(): void {
    if (this.#scheduled || this.#flushing) return;
    this.#scheduled = true;
    const flush = (): void => {
      this.#scheduled = false;
      void this.#flush();
    };
    if (this.#flushAt === "tick") nextTick(flush);
    else nextImmediate(flush);
  }

  /**
   * Takes the next batch for a caller that runs it in a transaction of its own (a claim carrying the
   * settlements waiting here, `CombiningWritesOptions.settleWithClaims`), as a flush would take it, and
   * with no key of the flush in flight: the caller must settle every entry, or hand them back with
   * {@link WriteCombiner.requeue}. Empty when nothing waits, or while a `runAlone` write (whose key it
   * cannot tell) is in flight.
   */
  takePending(): CombinedWrite<I, O>[] {
    const flight = this.#flight;
    if (this.#pending.length === 0 || (this.#flushing && flight === null)) return [];
    const batch = this.#take(flight === null ? undefined : new Set(flight.flatMap((entry) => (entry.key === null ? [] : [entry.key]))));
    if (batch.length > 0) this.#wakeSpaceWaiters();
    return batch;
  }

  /** Entries taken with {@link WriteCombiner.takePending} and not settled, back to the front of the queue: the next flush takes them. */
  requeue(entries: readonly CombinedWrite<I, O>[]): void {
    const back = entries.filter((entry): entry is Entry<I, O> => entry instanceof Entry && !entry.settled);
    if (back.length === 0) return;
    this.#pending = [...back, ...this.#pending];
    for (const entry of back) this.#pendingBytes += entry.bytes;
    if (this.#flushing) return;
    this.#schedule();
  }

  #wakeSpaceWaiters(): void {
    const waiters = this.#spaceWaiters;
    this.#spaceWaiters = [];
    for (const wake of waiters) wake();
  }

  /** Takes the next batch: arrival order, at most one entry per key and none of `exclude`, within the row and byte bounds. */
  #take(exclude?: ReadonlySet<string>): Entry<I, O>[] {
    const batch: Entry<I, O>[] = [];
    const keys = new Set<string>(exclude);
    const rest: Entry<I, O>[] = [];
    let bytes = 0;
    for (const entry of this.#pending) {
      const fits = batch.length < this.maxRows && (batch.length === 0 || bytes + entry.bytes <= this.maxBytes);
      if (!fits || (entry.key !== null && keys.has(entry.key))) {
        rest.push(entry);
        continue;
      }
      batch.push(entry);
      bytes += entry.bytes;
      if (entry.key !== null) keys.add(entry.key);
    }
    this.#pending = rest;
    this.#pendingBytes -= bytes;
    return batch;
  }

  async #flush(): Promise<void> {
    if (this.#flushing || this.#pending.length === 0) return;
    this.#flushing = true;
    const batch = this.#take();
    this.#lastFlushRows = batch.length;
    this.#flight = batch;
    this.#wakeSpaceWaiters();
    try {
      await this.#run(batch);
      // Only for entries the runner left unsettled: an Error (and its stack) per row of every flush cost ~3 µs a
      // row of a Postgres c64 drain's worker CPU (profile of `bench/`'s drain).
      for (const entry of batch) if (!entry.settled) entry.reject(new Error("the write combiner's runner left this write unsettled"));
    } catch (error) {
      for (const entry of batch) entry.reject(error);
    } finally {
      this.#flushing = false;
      this.#flight = null;
    }
    // What collected while this flush ran goes at once.
    if (this.#pending.length > 0) void this.#flush();
  }
}

function positive(value: number, name: string): number {
  if (!Number.isSafeInteger(value) || value < 1) throw new RangeError(`write combiner option ${name} must be an integer ≥ 1, got ${String(value)}`);
  return value;
}
