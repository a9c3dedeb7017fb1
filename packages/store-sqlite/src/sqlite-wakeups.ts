/**
 * Same-host wake-ups for SQLite: §9's accelerator, without a server to push.
 *
 * Terminology:
 * - **waiter**: one pending `claimWake` or `taskDoneWake`; it resolves at its
 *   timeout at the latest.
 * - **event**: the filesystem says the database file or its `-wal` changed
 *   (inotify on Linux, through `fs.watch` on the file's directory). An event
 *   is only a hint: a transaction writes its WAL frames before it commits,
 *   and a checkpoint writes the main file without committing anything.
 * - **check**: reading `PRAGMA data_version` on the store's reader (a
 *   connection that never writes), which changes exactly when some other
 *   connection — another process, or this process's writer — committed.
 *   A check that sees a change has found a **commit**; only commits wake.
 * - **watch mode / poll mode**: while commits are rare, checks follow
 *   events. While they are frequent, events cost more than they tell (about
 *   6 µs of CPU each, four or more per commit), so the watch is dropped and
 *   a check runs every {@link SQLiteWakeupsOptions.minWakeGapMs} instead,
 *   until commits are rare again.
 *
 * After a commit, claim waiters wake when a task is queued on one of their
 * queues and task-done waiters when their task is terminal (one read for
 * each group), so from the caller's view this behaves like the Postgres
 * channel: an early resolve means "re-read", the timeout bounds every wait,
 * and nothing depends on delivery.
 */
import fs from "node:fs";
import path from "node:path";
import type { StoreSignal } from "@cairnq/protocol";
import type { Wakeups } from "@cairnq/store-kysely";
import { sleep } from "@cairnq/store-kysely";

/**
 * What {@link SQLiteWakeups} reads from the database: only the methods it
 * calls, all synchronous and cheap (a few microseconds with better-sqlite3).
 * `SQLiteConnection` implements it.
 */
export interface WakeupSource {
  /** The main database file as SQLite resolved it; null for an in-memory database or while not open. */
  databaseFile(): string | null;
  /** `PRAGMA data_version` on a connection that never commits; null while not open. May throw. */
  dataVersion(): number | null;
  /** Whether any task is `queued` on one of `queues` (due or not). May throw. */
  queuedIn(queues: readonly string[]): boolean;
  /** The ids among `taskIds` whose task is terminal. May throw. */
  settledAmong(taskIds: readonly string[]): readonly string[];
}

/** Options of {@link SQLiteWakeups}; the defaults are what the store uses. */
export interface SQLiteWakeupsOptions {
  /**
   * The least time between two wakes, and the check interval in poll mode:
   * a burst of commits wakes each waiter at most once per this many
   * milliseconds.
   * @default 1
   */
  minWakeGapMs?: number;
  /**
   * Stop watching this long after the last waiter left. An idle worker
   * waits again within a millisecond, so the watch persists while it idles;
   * a store nobody waits on watches nothing.
   * @default 1000
   */
  idleStopMs?: number;
  /**
   * After watching failed (no inotify watches left, an unsupported
   * filesystem, the directory vanished), waits are plain sleeps for this
   * long before watching is tried again.
   * @default 5000
   */
  retryWatchMs?: number;
  /**
   * How the directory is watched. For tests that simulate a platform where
   * watching fails.
   * @default fs.watch, not persistent
   */
  watch?: (directory: string, listener: (event: string, filename: string | Buffer | null) => void) => fs.FSWatcher;
}

/**
 * After an event whose commit is not visible yet (the writer is between
 * writing its frames and publishing them in the WAL index: microseconds,
 * unless it is descheduled), checks repeat on the next turns of the event
 * loop, then after growing delays; after a check that found a commit, one
 * more look in case a second commit's frames were already written. Without
 * them a commit published after its last event waits out the poll interval:
 * with checks right on the event, 18 of 68 events on the loaded 2-core dev
 * machine came before their commit was visible. A check is one prepared
 * PRAGMA (~2 µs), but a timer wake-up costs ~60 µs of CPU on that machine,
 * so the delayed tail is short. Counted over 600 calls: most late commits
 * were this process's own (seen before their events), 2 were caught by the
 * tail after an unpublished event, 1 tail ran out.
 */
const SPIN_CHECKS = 4;
const AFTER_EVENT_DELAYS_MS: readonly number[] = [1, 4, 16];
const AFTER_COMMIT_DELAYS_MS: readonly number[] = [2];

/**
 * Mode switches, counted over windows of 50 ms. Watching costs ~6 µs per
 * event (a commit makes one to four) plus its checks and timers, ~150 µs per
 * commit in all; polling costs ~50 ms of CPU per second (1,000 timer
 * wake-ups) plus the filter reads after each commit. So more than 100 events
 * in a window (2,000/s) switch to polling, and fewer than 10 commits (200/s)
 * switch back. Measured on the 2-core dev machine with an idle worker beside
 * a process submitting to another queue as fast as it can: watching only,
 * ~250 ms of CPU per second and the submitter slowed to ~3,500/s; with the
 * switch, ~70 ms and ~7,000/s (plain sleeps: ~3 ms and ~8,000/s). At 200
 * commits/s both cost ~32 ms. Re-measure: two processes, one committing in
 * a loop, the other waiting; compare `process.cpuUsage()`.
 */
const WINDOW_MS = 50;
const DENSE_EVENTS = 100;
const SPARSE_COMMITS = 10;

/** setTimeout's ceiling; longer waits would fire at once. */
const MAX_TIMER_MS = 2_147_483_647;

interface Waiter {
  /** The awaited task, or null for a claim waiter. */
  readonly taskId: string | null;
  /** A claim waiter's queues. */
  readonly queues: readonly string[];
  wake(): void;
}

/** What {@link SQLiteWakeups} is doing: nothing, following filesystem events, or checking on a timer. */
export type SQLiteWakeupsMode = "off" | "watch" | "poll";

/**
 * The SQLite store's {@link Wakeups}: resolves `claimWake` and
 * `taskDoneWake` within about a millisecond of a relevant commit by any
 * process on this host, by watching the database's directory and confirming
 * each event with `PRAGMA data_version`. An accelerator only: every wait
 * still ends at its timeout, and when watching is impossible (in-memory
 * databases, filesystems without change notification, no inotify watches
 * left) waits are plain sleeps and no error reaches the caller. Network
 * filesystems may not report other hosts' writes at all; the poll interval
 * covers them.
 *
 * - **Lazy**: the directory is watched only while someone waits (and
 *   {@link SQLiteWakeupsOptions.idleStopMs} after); an idle store costs
 *   nothing. Nothing it holds keeps the process alive (the watch and every
 *   timer are unref'd); a caller that must keep the process up holds its
 *   own handle, as the client's wait does.
 * - **No feedback**: checks and filters only read, and waiters wake only on
 *   commits, so an idle worker whose probe finds nothing sleeps until the
 *   next relevant commit or its poll interval.
 * - **Filtered**: after a commit, claim waiters wake only if a task is
 *   queued on one of their queues, due or not (a queue holding a delayed
 *   task wakes its waiters on every commit, at most once per
 *   {@link SQLiteWakeupsOptions.minWakeGapMs}; lease expiry and delays
 *   falling due are not commits, the poll interval finds them), and
 *   task-done waiters only if their task is terminal.
 * - **Buffered claims**: commits seen while no claim waiter was registered
 *   are checked again for the next `claimWake` (as §9 buffers
 *   notifications), so a submit landing between a worker's probe and its
 *   next wait is not missed.
 * - `subscribe` never calls its listener: the channel knows "something
 *   committed", and the contract's signals name a queue or a task.
 *   `capabilities.pushWakeups` stays false for the same reason; `watch()`
 *   keeps its poll timer.
 *
 * @example
 * ```ts
 * const wakeups = new SQLiteWakeups(connection);
 * await wakeups.claimWake(["default"], 500, signal); // ≤ 500 ms; ~1 ms after a submit elsewhere
 * wakeups.close();
 * ```
 */
export class SQLiteWakeups implements Wakeups {
  readonly #source: WakeupSource;
  readonly #minWakeGapMs: number;
  readonly #idleStopMs: number;
  readonly #retryWatchMs: number;
  readonly #watch: NonNullable<SQLiteWakeupsOptions["watch"]>;

  readonly #claims = new Set<Waiter>();
  readonly #dones = new Set<Waiter>();
  #mode: SQLiteWakeupsMode = "off";
  #watcher: fs.FSWatcher | null = null;
  #directory = "";
  /** The file and its WAL, as named in the directory's events. */
  #names: ReadonlySet<string> = new Set();
  #closed = false;
  /** `performance.now()` before which watching is not tried again after a failure. */
  #retryWatchAt = Number.NEGATIVE_INFINITY;
  #idleTimer: NodeJS.Timeout | null = null;

  /** The last data version seen. */
  #version: number | null = null;
  /** Commits seen since the mode left "off"; claim and done waiters have been checked up to `#claimSeq` / `#doneSeq`. */
  #seq = 0;
  #claimSeq = 0;
  #doneSeq = 0;
  #lastWakeAt = Number.NEGATIVE_INFINITY;
  /** Watch mode: an event is not yet explained by a commit, or its follow-up checks still run. */
  #pending = false;
  #attempt = 0;
  #tail: readonly number[] = AFTER_EVENT_DELAYS_MS;
  #check: NodeJS.Immediate | NodeJS.Timeout | null = null;
  #checkAt = Number.POSITIVE_INFINITY;
  /** Events (watch mode) or commits (poll mode) in the window that started at `#windowStart`. */
  #windowStart = 0;
  #windowCount = 0;

  /**
   * @param source - The database the waits are about (the store's connection).
   * @param options - See {@link SQLiteWakeupsOptions}.
   */
  constructor(source: WakeupSource, options: SQLiteWakeupsOptions = {}) {
    this.#source = source;
    this.#minWakeGapMs = options.minWakeGapMs ?? 1;
    this.#idleStopMs = options.idleStopMs ?? 1000;
    this.#retryWatchMs = options.retryWatchMs ?? 5000;
    this.#watch = options.watch ?? ((directory, listener) => fs.watch(directory, { persistent: false }, listener));
  }

  /**
   * `"watch"` while checks follow filesystem events, `"poll"` while commits
   * are frequent enough that checks run on a timer, `"off"` while nobody
   * waits or watching failed. For diagnostics and tests.
   */
  get mode(): SQLiteWakeupsMode {
    return this.#mode;
  }

  /** Resolves after `timeoutMs`, or about a millisecond after a commit leaves a task queued on one of `queues`, or when `signal` aborts. */
  claimWake(queues: readonly string[], timeoutMs: number, signal?: AbortSignal): Promise<void> {
    return this.#wait(null, queues, timeoutMs, signal);
  }

  /** Resolves after `timeoutMs`, or about a millisecond after a commit that left `taskId` terminal, or when `signal` aborts. */
  taskDoneWake(taskId: string, timeoutMs: number, signal?: AbortSignal): Promise<void> {
    return this.#wait(taskId, [], timeoutMs, signal);
  }

  /** Never calls `listener` (see the class notes); returns a no-op unsubscribe. */
  subscribe(_listener: (signal: StoreSignal) => void): () => void {
    return () => {};
  }

  /** Stops watching and wakes every waiter (they re-read and find the store closed). Later waits are plain sleeps. Idempotent. */
  close(): void {
    this.#closed = true;
    this.#stop();
  }

  #wait(taskId: string | null, queues: readonly string[], timeoutMs: number, signal: AbortSignal | undefined): Promise<void> {
    if (signal?.aborted === true || !(timeoutMs > 0)) return Promise.resolve();
    if (!this.#start()) return sleep(timeoutMs, signal);
    const claim = taskId === null;
    // Commits seen while no claim waiter listened may have landed after this caller's probe.
    if (claim && this.#claimSeq !== this.#seq) {
      this.#claimSeq = this.#seq;
      if (this.#queuedIn(queues)) return Promise.resolve();
    }
    const waiters = claim ? this.#claims : this.#dones;
    return new Promise((resolve) => {
      const timer = setTimeout(wake, Math.min(timeoutMs, MAX_TIMER_MS));
      timer.unref();
      const waiter: Waiter = { taskId, queues, wake };
      const left = (): void => this.#maybeIdle();
      function wake(): void {
        clearTimeout(timer);
        signal?.removeEventListener("abort", wake);
        if (waiters.delete(waiter)) left();
        resolve();
      }
      signal?.addEventListener("abort", wake, { once: true });
      waiters.add(waiter);
      if (this.#idleTimer !== null) {
        clearTimeout(this.#idleTimer);
        this.#idleTimer = null;
      }
      // Commits seen while no done waiter listened: this task may be among them, one read tells.
      if (!claim && this.#doneSeq !== this.#seq) this.#requestCheck(performance.now());
    });
  }

  // ---------------------------------------------------------------- modes

  /** Starts watching if nothing runs yet; false when waits must be plain sleeps. */
  #start(): boolean {
    if (this.#mode !== "off") return true;
    if (this.#closed || performance.now() < this.#retryWatchAt) return false;
    let file: string | null;
    let version: number | null;
    try {
      file = this.#source.databaseFile();
      version = file === null ? null : this.#source.dataVersion();
    } catch {
      return false;
    }
    // In-memory, or not open yet (a wait before the first read): sleep this once, watch from the next.
    if (file === null || version === null) return false;
    this.#directory = path.dirname(file);
    const base = path.basename(file);
    this.#names = new Set([base, `${base}-wal`]);
    if (!this.#openWatcher()) return false;
    this.#version = version;
    this.#seq = this.#claimSeq = this.#doneSeq = 0;
    return true;
  }

  /** Enters watch mode; on failure, stops and sleeps for `retryWatchMs`. */
  #openWatcher(): boolean {
    try {
      const watcher = this.#watch(this.#directory, (_event, filename) => this.#onEvent(filename));
      watcher.on("error", () => this.#fail());
      watcher.unref();
      this.#watcher = watcher;
    } catch {
      this.#fail();
      return false;
    }
    this.#mode = "watch";
    this.#pending = false;
    this.#windowStart = performance.now();
    this.#windowCount = 0;
    return true;
  }

  #closeWatcher(): void {
    const watcher = this.#watcher;
    this.#watcher = null;
    watcher?.close();
  }

  /** Commits are frequent: drop the watch and check on a timer. */
  #toPoll(now: number): void {
    this.#closeWatcher();
    this.#mode = "poll";
    this.#pending = false;
    this.#windowStart = now;
    this.#windowCount = 0;
    this.#requestCheck(Math.max(now, this.#lastWakeAt + this.#minWakeGapMs));
  }

  /** Commits are rare again: watch, and check once for what landed in between. */
  #toWatch(now: number): void {
    if (!this.#openWatcher()) return;
    this.#requestCheck(now);
  }

  /** The watch broke (e.g. the directory was removed): release everyone, sleep for a while, then try again. */
  #fail(): void {
    this.#retryWatchAt = performance.now() + this.#retryWatchMs;
    this.#stop();
  }

  /** Stops watching or polling and wakes every waiter. */
  #stop(): void {
    this.#mode = "off";
    this.#closeWatcher();
    this.#cancelCheck();
    if (this.#idleTimer !== null) clearTimeout(this.#idleTimer);
    this.#idleTimer = null;
    this.#pending = false;
    for (const waiter of [...this.#claims, ...this.#dones]) waiter.wake();
  }

  #maybeIdle(): void {
    if (this.#mode === "off" || this.#claims.size > 0 || this.#dones.size > 0 || this.#idleTimer !== null) return;
    this.#idleTimer = setTimeout(() => {
      this.#idleTimer = null;
      if (this.#claims.size === 0 && this.#dones.size === 0) this.#stop();
    }, this.#idleStopMs);
    this.#idleTimer.unref();
  }

  #onEvent(filename: string | Buffer | null): void {
    if (this.#mode !== "watch") return;
    // Every event costs, so other files' count too: a busy neighbour in the directory also ends in polling.
    const now = performance.now();
    if (now - this.#windowStart >= WINDOW_MS) {
      this.#windowStart = now;
      this.#windowCount = 0;
    }
    if (++this.#windowCount > DENSE_EVENTS) {
      this.#toPoll(now);
      return;
    }
    // Some platforms omit the name; then any change in the directory counts.
    if (filename !== null && !this.#names.has(filename.toString())) return;
    this.#pending = true;
    this.#attempt = 0;
    this.#tail = AFTER_EVENT_DELAYS_MS;
    this.#requestCheck(Math.max(now, this.#lastWakeAt + this.#minWakeGapMs));
  }

  // --------------------------------------------------------------- checks

  /** Runs a check at `atMs` (`performance.now()` time), or earlier if one is already due earlier. */
  #requestCheck(atMs: number): void {
    if (this.#check !== null && this.#checkAt <= atMs) return;
    this.#cancelCheck();
    const delayMs = atMs - performance.now();
    const run = (): void => {
      this.#check = null;
      this.#checkAt = Number.POSITIVE_INFINITY;
      this.#runCheck();
    };
    if (delayMs > 0) {
      this.#check = setTimeout(run, Math.ceil(delayMs));
      this.#check.unref();
    } else {
      // Not unref'd: Node lets the loop block in its poll phase while only unref'd immediates are pending, so
      // one would run at the next unrelated timer or I/O (up to a poll interval later). It runs within this
      // turn of the loop either way, so it never holds the process open.
      this.#check = setImmediate(run);
    }
    this.#checkAt = atMs;
  }

  #cancelCheck(): void {
    if (this.#check === null) return;
    clearTimeout(this.#check as NodeJS.Timeout);
    clearImmediate(this.#check as NodeJS.Immediate);
    this.#check = null;
    this.#checkAt = Number.POSITIVE_INFINITY;
  }

  #runCheck(): void {
    if (this.#mode === "off") return;
    let version: number | null;
    try {
      version = this.#source.dataVersion();
    } catch {
      version = null;
    }
    const now = performance.now();
    // Unreadable (the store is closing): assume a commit so everyone re-reads, and stop following up.
    const committed = version === null || version !== this.#version;
    if (committed) {
      this.#version = version;
      this.#seq++;
    }
    // Only a check that woke someone delays the next wake: a commit that woke nobody (the claim, while the
    // client waits for the completion ~0.3 ms behind it) must not hold back the next one.
    if (this.#wakeClaims() + this.#wakeDones() > 0) this.#lastWakeAt = now;
    if (version === null) {
      this.#pending = false;
      return;
    }
    if (this.#mode === "poll") {
      if (committed) this.#windowCount++;
      if (now - this.#windowStart >= WINDOW_MS) {
        if (this.#windowCount < SPARSE_COMMITS) {
          this.#toWatch(now);
          return;
        }
        this.#windowStart = now;
        this.#windowCount = 0;
      }
      this.#requestCheck(Math.max(now + this.#minWakeGapMs, this.#lastWakeAt + this.#minWakeGapMs));
      return;
    }
    if (!this.#pending) return;
    if (committed) {
      this.#attempt = SPIN_CHECKS;
      this.#tail = AFTER_COMMIT_DELAYS_MS;
    } else {
      this.#attempt++;
    }
    if (this.#attempt < SPIN_CHECKS) {
      this.#requestCheck(now);
      return;
    }
    const delayMs = this.#tail[this.#attempt - SPIN_CHECKS];
    if (delayMs === undefined) this.#pending = false;
    else this.#requestCheck(Math.max(now + delayMs, this.#lastWakeAt + this.#minWakeGapMs));
  }

  /** After a commit, wakes the claim waiters with a task queued on one of their queues; returns how many woke. */
  #wakeClaims(): number {
    if (this.#claimSeq === this.#seq || this.#claims.size === 0) return 0;
    this.#claimSeq = this.#seq;
    const byQueues = new Map<string, Waiter[]>();
    for (const waiter of this.#claims) {
      const key = waiter.queues.join("\u0000");
      const group = byQueues.get(key);
      if (group === undefined) byQueues.set(key, [waiter]);
      else group.push(waiter);
    }
    let woken = 0;
    for (const group of byQueues.values()) {
      if (!this.#queuedIn((group[0] as Waiter).queues)) continue;
      for (const waiter of group) waiter.wake();
      woken += group.length;
    }
    return woken;
  }

  /** After a commit, wakes the task-done waiters whose task is terminal; returns how many woke. */
  #wakeDones(): number {
    if (this.#doneSeq === this.#seq || this.#dones.size === 0) return 0;
    this.#doneSeq = this.#seq;
    const waiters = [...this.#dones];
    const ids = [...new Set(waiters.map((waiter) => waiter.taskId as string))];
    let settled: ReadonlySet<string>;
    try {
      settled = new Set(this.#source.settledAmong(ids));
    } catch {
      // Cannot tell which: everyone re-reads.
      settled = new Set(ids);
    }
    let woken = 0;
    for (const waiter of waiters) {
      if (!settled.has(waiter.taskId as string)) continue;
      waiter.wake();
      woken++;
    }
    return woken;
  }

  /** Whether a claim on `queues` may find work; true when it cannot tell (the caller re-reads). */
  #queuedIn(queues: readonly string[]): boolean {
    try {
      return this.#source.queuedIn(queues);
    } catch {
      return true;
    }
  }
}
