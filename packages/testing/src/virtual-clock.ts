/**
 * A clock that moves only when the test says so.
 *
 * Terminology:
 * - **wall time** (`now()`, epoch ms) is what rows and events are stamped
 *   with; **monotonic time** (`monotonicMs()`) is what timers and deadlines
 *   run on. `advance` moves both; `set` moves the wall clock alone, as
 *   setting a machine's clock does.
 * - a **stop** is an instant `advance` halts at on its way: a timer's due
 *   time, or an instant the driver names (a delayed task falling due). At
 *   each stop the due timers fire one by one, what they set off is let run
 *   (**settled**), and the driver is told.
 * - the **driver** is what the clock drives besides its timers: by default
 *   nothing (settling is a few event-loop turns); a test queue
 *   (`createTestQueue`) drives its store and workers through it.
 */
import { InvalidArgument, MAX_DELAY_MS } from "@cairnq/protocol";
import type { RuntimeClock, SleepOptions, TimerHandle, TimerOptions } from "@cairnq/runtime";
import { describeKind, sleepOn } from "@cairnq/runtime";
import { setImmediate as nextImmediate } from "node:timers";

/** Options of {@link VirtualClock}. */
export interface VirtualClockOptions {
  /** The wall time the clock starts at: a `Date` or an integer of epoch milliseconds within a `Date`'s range. @default the system clock's now */
  now?: Date | number | undefined;
}

/**
 * What a {@link VirtualClock} drives besides its timers. @internal
 */
export interface ClockDriver {
  /** Lets what the last step set off run until nothing more happens. */
  settle(): Promise<void>;
  /** The wall time of the next instant something becomes due that no timer marks, or `null`. */
  nextStopAtMs(): Promise<number | null>;
  /** The clock stopped at an instant and fired its timers: wake whatever watches the time. */
  stopped(): void;
}

/**
 * The last instant a JavaScript `Date` holds, in epoch milliseconds (and,
 * negated, the first): the wall clock stays within it, so that every row
 * stamped with its time is a valid `Date`.
 */
const DATE_LIMIT_MS = 8_640_000_000_000_000;

/** Event-loop turns a bare clock lets pass after each timer it fires. */
const BARE_SETTLE_TURNS = 3;

const BARE_DRIVER: ClockDriver = {
  async settle() {
    for (let turn = 0; turn < BARE_SETTLE_TURNS; turn += 1) await new Promise<void>((resolve) => nextImmediate(resolve));
  },
  nextStopAtMs: () => Promise.resolve(null),
  stopped: () => {},
};

/** One timer of a {@link VirtualClock}; its handle is itself. */
class VirtualTimer implements TimerHandle {
  #state: "pending" | "fired" | "cleared" = "pending";
  readonly #onAbort: () => void;

  constructor(
    readonly atMs: number,
    readonly seq: number,
    private readonly callback: () => void,
    private readonly signal: AbortSignal | undefined,
    /** Called once when the timer stops being pending (fired or cleared). */
    private readonly left: () => void,
  ) {
    this.#onAbort = () => this.clear();
    signal?.addEventListener("abort", this.#onAbort, { once: true });
  }

  get fired(): boolean {
    return this.#state === "fired";
  }

  get pending(): boolean {
    return this.#state === "pending";
  }

  clear(): void {
    if (this.#state !== "pending") return;
    this.#state = "cleared";
    this.#leave();
  }

  /** Runs the callback unless the timer was cleared. */
  fire(): void {
    if (this.#state !== "pending") return;
    this.#state = "fired";
    this.#leave();
    this.callback();
  }

  #leave(): void {
    this.signal?.removeEventListener("abort", this.#onAbort);
    this.left();
  }
}

/**
 * A {@link RuntimeClock} for tests: its time stands still until the test moves it
 * with {@link VirtualClock.advance} (firing the timers that fall due, in
 * order, and letting what each sets off run before the next) or
 * {@link VirtualClock.set}. Give it to a worker and a client (`clock`
 * option) and to their store (`MemoryStore` and `SQLiteStore` take
 * `clock: () => clock.now()`), and a one-day delay takes a millisecond.
 * `createTestQueue` does all of that for you.
 *
 * A timer due now (`ms` ≤ 0) fires on the next event-loop turn without
 * waiting for `advance`, as Node's would. Virtual timers hold nothing open:
 * `unref` makes no difference.
 *
 * @example
 * ```ts
 * const clock = new VirtualClock({ now: new Date("2030-01-01T00:00:00Z") });
 * const store = new MemoryStore({ clock: () => clock.now() });
 * const worker = new Worker(store, { clock });
 * const slept = clock.sleep(60_000);
 * await clock.advance(60_000); // the sleep resolves; no real minute passed
 * await slept;
 * ```
 */
export class VirtualClock implements RuntimeClock {
  #monotonicMs = 0;
  /** Wall time minus monotonic time. */
  #offsetMs: number;
  #seq = 0;
  /** A binary min-heap by (atMs, seq); cleared timers leave it when they reach the top. */
  readonly #heap: VirtualTimer[] = [];
  #pending = 0;
  #driver: ClockDriver = BARE_DRIVER;
  /** The advance in progress (advances run one after another). */
  #moving: Promise<unknown> = Promise.resolve();
  #dueNowScheduled = false;

  /** @param options - See {@link VirtualClockOptions}. */
  constructor(options: VirtualClockOptions = {}) {
    this.#offsetMs = options.now === undefined ? Date.now() : wallMs(options.now, "now");
  }

  /** The wall time in epoch milliseconds. */
  now(): number {
    return this.#monotonicMs + this.#offsetMs;
  }

  /** Milliseconds moved by {@link VirtualClock.advance} since the clock was made; `set` leaves it alone. */
  monotonicMs(): number {
    return this.#monotonicMs;
  }

  /** Timers started and neither fired nor cleared. */
  get pendingTimers(): number {
    return this.#pending;
  }

  /** The wall time the next pending timer is due at, or `null` when none is pending. */
  nextTimerAtMs(): number | null {
    const next = this.#peek();
    return next === null ? null : next.atMs + this.#offsetMs;
  }

  /**
   * Calls `callback` once this clock has moved `ms` on (any duration; `ms` ≤ 0
   * or not a number: on the next event-loop turn). An abort of
   * `options.signal` cancels it.
   */
  startTimer(callback: () => void, ms: number, options: TimerOptions = {}): TimerHandle {
    if (options.signal?.aborted === true) return { clear: () => {}, fired: false };
    const delayMs = ms > 0 ? ms : 0;
    const timer = new VirtualTimer(this.#monotonicMs + delayMs, this.#seq++, callback, options.signal, () => {
      this.#pending -= 1;
    });
    this.#push(timer);
    this.#pending += 1;
    if (delayMs === 0) this.#fireDueNowSoon();
    return timer;
  }

  /** Resolves once this clock has moved `ms` on, or on abort (see `@cairnq/runtime`'s `sleep`). */
  sleep(ms: number, options?: SleepOptions): Promise<void> {
    return sleepOn((callback, delayMs, opts) => this.startTimer(callback, delayMs, opts), ms, options);
  }

  /**
   * Moves the wall clock to `dateOrMs`, forward or back, without firing
   * timers or moving monotonic time: what setting a machine's clock does.
   * Rows compare their times with the wall clock, so a delayed task may be
   * due after a `set`; timers (heartbeats, sleeps, deadlines) are not. Use
   * {@link VirtualClock.advance} to let time pass.
   *
   * @throws InvalidArgument unless `dateOrMs` is a valid `Date` or an integer of epoch milliseconds within a `Date`'s range.
   */
  set(dateOrMs: Date | number): void {
    this.#offsetMs = wallMs(dateOrMs, "dateOrMs") - this.#monotonicMs;
  }

  /**
   * Lets `ms` milliseconds pass: the clock moves from stop to stop — each
   * timer's due time (and, in a test queue, each instant a task falls due or
   * a lease runs out) — firing the due timers one at a time in due order and
   * letting the promises and I/O each sets off run before the next, and
   * ends at now + `ms`. Calls made while one runs wait for it.
   *
   * @param ms - An integer from 0 to `MAX_DELAY_MS` (`@cairnq/protocol`, 100
   *   years), the bound of every delay in CairnQ.
   * @throws InvalidArgument (as a rejection) for an `ms` that is not such an
   *   integer, or that would move the wall clock past the last instant a
   *   `Date` holds; rejects with the error a timer callback threw (the
   *   timers after it stay pending).
   */
  async advance(ms: number): Promise<void> {
    requireAdvanceMs(ms, this.now());
    const run = this.#moving.then(() => this.#advance(ms));
    this.#moving = run.catch(() => {});
    await run;
  }

  /** Hands the clock to what it drives (a test queue). @internal */
  drive(driver: ClockDriver): void {
    this.#driver = driver;
  }

  async #advance(ms: number): Promise<void> {
    // Again, from where the advances queued before this one left the clock.
    requireAdvanceMs(ms, this.now());
    const driver = this.#driver;
    const targetMs = this.#monotonicMs + ms;
    await driver.settle();
    for (;;) {
      const timer = this.#peek();
      const stopWallMs = await driver.nextStopAtMs();
      // The driver's stops are instants still to come; one not after now would never be passed.
      const driverMs = stopWallMs === null || stopWallMs <= this.now() ? Number.POSITIVE_INFINITY : stopWallMs - this.#offsetMs;
      const stopMs = Math.min(timer === null ? Number.POSITIVE_INFINITY : timer.atMs, driverMs);
      if (!(stopMs <= targetMs)) break;
      this.#monotonicMs = Math.max(this.#monotonicMs, stopMs);
      await this.#fireDue();
      driver.stopped();
      await driver.settle();
    }
    this.#monotonicMs = targetMs;
    await this.#fireDue();
    driver.stopped();
    await driver.settle();
  }

  /** Fires every timer due by now, one at a time in due order, settling after each. */
  async #fireDue(): Promise<void> {
    for (let timer = this.#peek(); timer !== null && timer.atMs <= this.#monotonicMs; timer = this.#peek()) {
      this.#pop();
      timer.fire();
      await this.#driver.settle();
    }
  }

  /** Timers due now fire on the next turn, as Node's zero-delay timers do, without anyone advancing. */
  #fireDueNowSoon(): void {
    if (this.#dueNowScheduled) return;
    this.#dueNowScheduled = true;
    nextImmediate(() => {
      this.#dueNowScheduled = false;
      for (let timer = this.#peek(); timer !== null && timer.atMs <= this.#monotonicMs; timer = this.#peek()) {
        this.#pop();
        timer.fire();
      }
    });
  }

  /** The first live timer, dropping cleared ones on the way. */
  #peek(): VirtualTimer | null {
    while (this.#heap.length > 0 && !(this.#heap[0] as VirtualTimer).pending) this.#pop();
    return this.#heap[0] ?? null;
  }

  #push(timer: VirtualTimer): void {
    const heap = this.#heap;
    heap.push(timer);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(heap[i] as VirtualTimer, heap[parent] as VirtualTimer)) break;
      [heap[i], heap[parent]] = [heap[parent] as VirtualTimer, heap[i] as VirtualTimer];
      i = parent;
    }
  }

  #pop(): void {
    const heap = this.#heap;
    const last = heap.pop();
    if (last === undefined || heap.length === 0) return;
    heap[0] = last;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let smallest = i;
      if (left < heap.length && before(heap[left] as VirtualTimer, heap[smallest] as VirtualTimer)) smallest = left;
      if (right < heap.length && before(heap[right] as VirtualTimer, heap[smallest] as VirtualTimer)) smallest = right;
      if (smallest === i) return;
      [heap[i], heap[smallest]] = [heap[smallest] as VirtualTimer, heap[i] as VirtualTimer];
      i = smallest;
    }
  }
}

/** Heap order: earlier due time first, then the order the timers were started in. */
function before(a: VirtualTimer, b: VirtualTimer): boolean {
  return a.atMs < b.atMs || (a.atMs === b.atMs && a.seq < b.seq);
}

/** A value as an error message shows it: its type, and the value itself where that is short and safe to print. */
function describe(value: unknown): string {
  if (typeof value === "string") return `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
  if (typeof value === "number") return String(value);
  if (typeof value === "bigint") return `the bigint ${value}n (pass a number)`;
  if (value === null || value === undefined || typeof value === "boolean") return String(value);
  if (value instanceof Date) return "an invalid Date";
  return describeKind(value);
}

/** Checks `advance(ms)`'s argument against the clock's wall time now. @internal */
export function requireAdvanceMs(ms: unknown, nowMs: number): void {
  if (typeof ms !== "number" || !Number.isInteger(ms) || ms < 0 || ms > MAX_DELAY_MS) {
    const over = typeof ms === "number" && ms > MAX_DELAY_MS ? ", which is over that bound" : "";
    throw new InvalidArgument(
      "ms",
      `advance(ms) takes an integer number of milliseconds from 0 to ${MAX_DELAY_MS} (MAX_DELAY_MS, 100 years: the bound of every delay in CairnQ), got ${describe(ms)}${over}`,
    );
  }
  if (nowMs + ms > DATE_LIMIT_MS) {
    throw new InvalidArgument(
      "ms",
      `advance(${ms}) would move the wall clock from ${nowMs} to ${nowMs + ms}, past the last instant a JavaScript Date holds (${DATE_LIMIT_MS}); advance less, or set() the clock back first`,
    );
  }
}

function wallMs(value: Date | number, argument: string): number {
  const ms = value instanceof Date ? value.getTime() : value;
  if (typeof ms !== "number" || !Number.isInteger(ms) || Math.abs(ms) > DATE_LIMIT_MS) {
    throw new InvalidArgument(
      argument,
      `${argument} must be a valid Date or an integer number of epoch milliseconds within a Date's range (±${DATE_LIMIT_MS}), got ${describe(value)}`,
    );
  }
  return ms;
}
