/**
 * Wake-ups without a push channel: §9's accelerator on MySQL/MariaDB, which
 * has no LISTEN/NOTIFY.
 *
 * Terminology:
 * - **waiter**: one pending `claimWake` or `taskDoneWake`; it resolves at its
 *   timeout at the latest;
 * - **watch**: what a process checks for its waiters: per set of queues, the
 *   claim probe (§5.10 step 2: a task claimable on them, or an expired
 *   lease), and per task id whether the task is terminal. A watch's waiters
 *   share its checks; every task watch due at one moment shares one read;
 * - **stretch**: the time a watch has been waited on without finding what it
 *   waits for. Consecutive waits of one watch (a worker's next idle wait
 *   right after its own probe, the §7 wait loop's next sleep) continue it.
 *
 * A watch is checked at growing intervals: the first {@link MySQLWakeupsOptions.minCheckMs}
 * after its stretch began, then every `max(minCheckMs, backoff × stretch)`,
 * so a change is noticed within a quarter (the default backoff) of the time
 * the waiter had already waited, and a watch costs about `ln(T) / ln(1.25)`
 * reads over a stretch of `T` ms: ~25 in the first half second, then no more
 * than the waiter's own timeout allows (an idle worker's stretch spans its
 * poll intervals, so past a few seconds it is checked once per
 * `pollIntervalMs` by the worker's own probe and not at all here). A done
 * wait that found its task ends it. A claim watch's stretch ends only when a
 * claim on its queues then took a task ({@link MySQLWakeups.claimed}, which
 * the store calls after each claim): a queue holding only tasks no claim
 * here takes (another worker's names) keeps being found by the probe, and
 * its waiter's wake-ups must back off like any other check.
 *
 * What a check finds also reaches `subscribe`'s listeners as the signal
 * Postgres would have pushed (`done` for a task found terminal, `queued` for
 * each queue of a watch whose probe found work), so the §7 wait loop reads
 * the row at once and a woken worker skips its probe. Only what a waiter
 * asked about is ever checked: `capabilities.pushWakeups` stays false.
 */
import type { StoreSignal, StoreSignalReason, Task } from "@cairnq/protocol";
import { sleep, startTimer, WaiterSet } from "@cairnq/runtime";
import type { Wakeups } from "@cairnq/store-kysely";

/** The reads a {@link MySQLWakeups} checks with. */
export interface WakeupChecks {
  /** The claim probe on `queues`: a task claimable there, or an expired lease anywhere. */
  claimable(queues: readonly string[]): Promise<boolean>;
  /**
   * The rows of the tasks among `taskIds` that are terminal (a task that is gone is not: its waiter
   * waits out its timeout). The waiters of each are woken with its row.
   */
  settled(taskIds: readonly string[]): Promise<readonly Task[]>;
}

/** Options of {@link MySQLWakeups}; the defaults are what the store uses. */
export interface MySQLWakeupsOptions {
  /** The first and the least interval between two checks of a watch, in ms. @default 1 */
  minCheckMs?: number;
  /** A check's interval as a fraction of its watch's stretch so far. @default 0.25 */
  backoff?: number;
  /**
   * A wait that begins within this long of the previous wait of its watch ending (by its timeout)
   * continues that stretch; later, it begins a new one.
   * @default 250
   */
  continueMs?: number;
  /** The clock, in ms (monotonic). @default performance.now */
  now?: () => number;
}

/** Per-watch state: the queues or the task it is about, and its stretch. */
interface Watch {
  /** The watch's key in the map and the waiter set. */
  readonly id: string;
  readonly kind: "claim" | "done";
  /** The queues of a claim watch; the task id of a done watch (one element). */
  readonly keys: readonly string[];
  /** Its pending waiters. */
  waiters: number;
  /** When its stretch began. */
  since: number;
  /** When it is next checked. */
  nextAt: number;
  /** When its last waiter left without a find (-∞: never, or the stretch ended with a find). */
  leftAt: number;
  /** A done watch's terminal row, as the check that found it read it (its waiters resolve with it); cleared when a new wait begins on it. */
  found: Task | null;
}

/**
 * The MySQL store's {@link Wakeups}: waits end within a fraction of their
 * own age after the change they wait for commits, in any process, by
 * checking at growing intervals (see the file's notes). An accelerator only:
 * every wait still ends at its timeout, and a check that fails is retried at
 * the next interval without waking anyone.
 *
 * @example
 * ```ts
 * const wakeups = new MySQLWakeups({ claimable: async (queues) => …, settled: async (ids) => … });
 * await wakeups.taskDoneWake("task_01…", 500); // ~1 ms after the task ends elsewhere, 500 at most
 * wakeups.close();
 * ```
 */
export class MySQLWakeups implements Wakeups {
  readonly #checks: WakeupChecks;
  readonly #minCheckMs: number;
  readonly #backoff: number;
  readonly #continueMs: number;
  readonly #now: () => number;
  readonly #waiters = new WaiterSet<Watch>({ keyOf: (watch) => watch.id, onLeave: (waiter) => this.#left(waiter.data) });
  /** Watches by kind and key (`c:` + queues joined by NUL, `d:` + task id). */
  readonly #watches = new Map<string, Watch>();
  readonly #listeners = new Set<{ listener: (signal: StoreSignal) => void; reasons: ReadonlySet<StoreSignalReason> }>();
  #timer: { clear(): void } | null = null;
  #timerAt = Number.POSITIVE_INFINITY;
  #checking = false;
  #closed = false;
  /** Checks run (reads sent), for tests and diagnostics. */
  checks = 0;

  constructor(checks: WakeupChecks, options: MySQLWakeupsOptions = {}) {
    this.#checks = checks;
    this.#minCheckMs = options.minCheckMs ?? 1;
    this.#backoff = options.backoff ?? 0.25;
    this.#continueMs = options.continueMs ?? 250;
    this.#now = options.now ?? (() => performance.now());
  }

  /** Resolves after `timeoutMs`, or soon after a task is claimable on one of `queues` (or a lease expired), or when `signal` aborts. */
  async claimWake(queues: readonly string[], timeoutMs: number, signal?: AbortSignal): Promise<void> {
    await this.#wait("claim", queues, `c:${queues.join("\u0000")}`, timeoutMs, signal);
  }

  /**
   * Resolves after `timeoutMs`, or soon after `taskId` is terminal — then with the terminal row the
   * check read, so the waiter need not read it again — or when `signal` aborts.
   */
  async taskDoneWake(taskId: string, timeoutMs: number, signal?: AbortSignal): Promise<Task | void> {
    const watch = await this.#wait("done", [taskId], `d:${taskId}`, timeoutMs, signal);
    if (watch === null || watch.found === null) return undefined;
    // The first waiter to resume takes the row; any other (two waits on one task) reads its own copy.
    const task = watch.found;
    watch.found = null;
    return task;
  }

  /**
   * A claim on `queues` took tasks (`took`) or none: a claim watch whose check found work keeps its
   * stretch (and its growing interval) until a claim takes something (see the file's notes).
   */
  claimed(queues: readonly string[], took: boolean): void {
    if (!took) return;
    const watch = this.#watches.get(`c:${queues.join("\u0000")}`);
    if (watch === undefined) return;
    const now = this.#now();
    watch.since = now;
    if (watch.waiters === 0) return;
    watch.nextAt = now + this.#minCheckMs;
    this.#schedule();
  }

  /** Hears the signals checks find (see the file's notes); returns the unsubscribe function. */
  subscribe(listener: (signal: StoreSignal) => void, reasons: readonly StoreSignalReason[] = ["queued", "done"]): () => void {
    const entry = { listener, reasons: new Set(reasons) };
    this.#listeners.add(entry);
    return () => {
      this.#listeners.delete(entry);
    };
  }

  /** Wakes every waiter and stops checking; later waits are plain sleeps. Idempotent. */
  close(): void {
    this.#closed = true;
    this.#timer?.clear();
    this.#timer = null;
    this.#waiters.wakeAll();
    this.#watches.clear();
  }

  /** Resolves with the watch waited on (null when there was none: aborted, no time, closed). */
  async #wait(kind: Watch["kind"], keys: readonly string[], id: string, timeoutMs: number, signal: AbortSignal | undefined): Promise<Watch | null> {
    if (signal?.aborted === true || !(timeoutMs > 0)) return null;
    if (this.#closed) {
      await sleep(timeoutMs, { signal, unref: true });
      return null;
    }
    const now = this.#now();
    let watch = this.#watches.get(id);
    if (watch === undefined) {
      watch = { id, kind, keys, waiters: 0, since: now, nextAt: now + this.#minCheckMs, leftAt: Number.NEGATIVE_INFINITY, found: null };
      this.#watches.set(id, watch);
    } else if (watch.waiters === 0) {
      watch.found = null;
      if (now - watch.leftAt > this.#continueMs) watch.since = now;
      watch.nextAt = now + this.#interval(watch, now);
    }
    watch.waiters += 1;
    const waiting = this.#waiters.wait(watch, timeoutMs, signal);
    this.#schedule();
    await waiting;
    return watch;
  }

  #interval(watch: Watch, now: number): number {
    return Math.max(this.#minCheckMs, this.#backoff * (now - watch.since));
  }

  /** A waiter left (woken, timed out or aborted). */
  #left(watch: Watch): void {
    watch.waiters -= 1;
    if (watch.waiters === 0) watch.leftAt = this.#now();
  }

  /** The timer at the earliest next check of a watch with waiters; stale watches are dropped. */
  #schedule(): void {
    if (this.#closed || this.#checking) return;
    const now = this.#now();
    let at = Number.POSITIVE_INFINITY;
    for (const [id, watch] of this.#watches) {
      if (watch.waiters === 0) {
        if (now - watch.leftAt > this.#continueMs) this.#watches.delete(id);
        continue;
      }
      if (watch.nextAt < at) at = watch.nextAt;
    }
    if (at === this.#timerAt && this.#timer !== null) return;
    this.#timer?.clear();
    this.#timer = null;
    this.#timerAt = at;
    if (at === Number.POSITIVE_INFINITY) return;
    this.#timer = startTimer(() => void this.#check(), Math.max(0, at - now), { unref: true });
  }

  /** Checks every watch due (a probe per claim watch, one read for all task watches), wakes what was found, reschedules. */
  async #check(): Promise<void> {
    this.#timer = null;
    this.#timerAt = Number.POSITIVE_INFINITY;
    if (this.#closed) return;
    this.#checking = true;
    try {
      const now = this.#now();
      // A little slack, so watches due within the same millisecond share the read.
      const due = [...this.#watches.values()].filter((w) => w.waiters > 0 && w.nextAt <= now + 0.5);
      const claims = due.filter((w) => w.kind === "claim");
      const dones = due.filter((w) => w.kind === "done");
      const reads: Promise<void>[] = claims.map(async (watch) => {
        this.checks += 1;
        if (await this.#checks.claimable(watch.keys)) this.#found(watch);
      });
      if (dones.length > 0) {
        this.checks += 1;
        reads.push(
          this.#checks.settled(dones.map((w) => w.keys[0] as string)).then((tasks) => {
            const settled = new Map(tasks.map((task) => [task.id, task]));
            for (const watch of dones) {
              const task = settled.get(watch.keys[0] as string);
              if (task === undefined) continue;
              watch.found = task;
              this.#found(watch);
            }
          }),
        );
      }
      // A failed check wakes nobody (an accelerator only: the waits end at their timeouts) and is retried at the next interval.
      await Promise.allSettled(reads);
      // The next check of each is due an interval after this one began, not after it answered: a round trip
      // longer than the interval (the first milliseconds of a wait) is then the interval, rather than adding to it.
      const after = this.#now();
      for (const watch of due) if (watch.waiters > 0) watch.nextAt = Math.max(after, now + this.#interval(watch, now));
    } finally {
      this.#checking = false;
      this.#schedule();
    }
  }

  /** A check found what `watch` waits for: signal, wake its waiters; a done watch's stretch ends (a claim watch's: see `claimed`). */
  #found(watch: Watch): void {
    if (watch.kind === "done") this.#emit({ reason: "done", taskId: watch.keys[0] as string });
    else for (const queue of watch.keys) this.#emit({ reason: "queued", queue });
    this.#waiters.wakeKey(watch.id);
    if (watch.kind === "done") watch.leftAt = Number.NEGATIVE_INFINITY;
  }

  #emit(signal: StoreSignal): void {
    for (const { listener, reasons } of [...this.#listeners]) {
      if (!reasons.has(signal.reason)) continue;
      try {
        listener(signal);
      } catch {
        // A listener's failure is its own; the other listeners still hear the signal.
      }
    }
  }
}
