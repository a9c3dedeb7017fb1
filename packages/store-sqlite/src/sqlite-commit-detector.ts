/**
 * The commit detector behind {@link SQLiteWakeups}: notices, within about a
 * millisecond, that some connection on this host committed to the database.
 *
 * Terminology:
 * - **signal**: a CairnQ process wrote the database's wake file after a
 *   commit (`sqlite-wake-signal.ts`); the detector watches that one file
 *   (inotify on Linux, through `fs.watch`), so it hears one event per commit,
 *   after the commit is visible.
 * - **event**: without a wake file (it could not be created), the filesystem
 *   says the database file or its `-wal` changed (`fs.watch` on the file's
 *   directory). Such an event is only a hint: a transaction writes its WAL
 *   frames before it commits (one event each), and a checkpoint writes the
 *   main file without committing anything.
 * - **backstop**: while watching the wake file, a check every
 *   {@link SQLiteWakeupsOptions.backstopMs}, for commits of writers that do
 *   not signal (another protocol-v1 implementation, the `sqlite3` shell).
 * - **check**: reading `PRAGMA data_version` on the store's reader (a
 *   connection that never writes), which changes exactly when some other
 *   connection — another process, or this process's writer — committed.
 *   A check that sees a change has found a **commit**.
 * - **watch mode / poll mode**: while commits are rare, checks follow
 *   events. While they are frequent, events cost more than they tell (about
 *   6 µs of CPU each, four or more per commit), so the watch is dropped and
 *   a check runs every {@link SQLiteWakeupsOptions.minWakeGapMs} instead,
 *   until commits are rare again.
 *
 * The detector counts commits ({@link SQLiteCommitDetector.seq}) and tells
 * its listener after every check; deciding whom a commit wakes is the
 * listener's business (the waiter side in `sqlite-wakeups.ts`).
 */
import fs from "node:fs";
import path from "node:path";
import type { TimerHandle } from "@cairnq/runtime";
import { startTimer } from "@cairnq/runtime";
import type { SQLiteWakeupsMode, SQLiteWakeupsOptions, WakeupSource } from "./sqlite-wakeups.js";

/**
 * After an event whose commit is not visible yet (the writer is between
 * writing its frames and publishing them in the WAL index: microseconds,
 * unless it is descheduled), checks repeat after growing delays; after a
 * check that found a commit, one more look in case a second commit's frames
 * were already written. Without them a commit published after its last
 * event waits out the poll interval. A check is one prepared PRAGMA
 * (~2 µs), but a timer wake-up costs ~60 µs of CPU on the 2-core dev
 * machine, so the delayed tail is short. Checks are not repeated on the
 * next turns of the loop: a commit writes its WAL a frame at a time, one
 * event each (~40 µs apart under load), so every event but the last is
 * followed by another, and the check on the last one finds the commit.
 * Counted in the latency bench under load 5 (440 calls, ~1,300 commits,
 * ~6 events per call): the check right on the event found the commit 903
 * times, a repeat on the next turn once, the delays 21 times; the four
 * repeats per event it used to run cost ~16 checks per call for that one.
 */
const AFTER_EVENT_DELAYS_MS: readonly number[] = [1, 4, 16];
const AFTER_COMMIT_DELAYS_MS: readonly number[] = [2];
const NO_DELAYS: readonly number[] = [];

/**
 * Bun's `fs.watch` of one file drops events: of 500 writes another process made to a file, one at a
 * time, each after the previous one's event arrived, Bun 1.4.5 missed 248 and 249 in two runs (Node
 * none); its watch of the file's directory missed none (re-measure: two Bun processes, each writing
 * one file and watching the other's, on the file and then on the directory). So under Bun the
 * detector watches the wake file through its directory and takes only the wake file's events as
 * signals: the other names' events (a commit's WAL writes) are ignored, so no follow-up checks run. Until then
 * Bun watched the directory unsignalled, checking after every WAL event with the delayed tail. Seven
 * alternating pairs of `bench/call-timeline.mjs --driver bun:sqlite` (1,000 calls each, load 10–30):
 * the client's CPU per call lower in all seven (median 690 → 618 µs), the worker's in five (median
 * 912 → 878 µs), the call's p50 0.85–1.04× (median 0.90×). Five alternating pairs of `pnpm bench
 * --only drivers --reps 3` (bun:sqlite p50 ÷ its call floor): 7.96 → 7.29, 8.09 → 8.81, 8.83 → 8.13
 * at load 25–45, 7.22 → 6.68, 7.56 → 6.88 at load 8–13.
 */
const LOSSY_WATCH = (process.versions as Record<string, string | undefined>).bun !== undefined;

/**
 * The backstop's interval: how late, at worst, a waiter hears a commit of a
 * writer that does not signal (before its own timeout, which the worker's
 * poll interval sets: 500 ms by default). Each check is a timer wake-up and
 * one `PRAGMA data_version` (~60 µs of CPU on the 2-core dev machine), so a
 * waiting process spends ~0.6 ms of CPU per second on it.
 */
const DEFAULT_BACKSTOP_MS = 100;

/**
 * Mode switches, counted over windows of 50 ms. Watching costs ~6 µs per
 * event (a commit makes one to four) plus its checks and timers, ~150 µs per
 * commit in all; polling costs ~50 ms of CPU per second (1,000 timer
 * wake-ups) plus the filter reads after each commit. So more than 100 events
 * in a window (2,000/s) switch to polling, and fewer than 10 commits (200/s)
 * switch back — except while someone waits for a task to finish (a `call()`
 * or `wait()`, see {@link CommitListener.urgent}): a poll finds a commit up
 * to a timer tick (~1.1 ms) late, which was half of a `call()` round trip
 * (a call loop commits ~2,000 times a second, and the setup burst had put
 * the caller in poll mode for good). Measured on the 2-core dev machine with an idle worker beside
 * a process submitting to another queue as fast as it can: watching only,
 * ~250 ms of CPU per second and the submitter slowed to ~3,500/s; with the
 * switch, ~70 ms and ~7,000/s (plain sleeps: ~3 ms and ~8,000/s). At 200
 * commits/s both cost ~32 ms. Re-measure: two processes, one committing in
 * a loop, the other waiting; compare `process.cpuUsage()`.
 */
const WINDOW_MS = 50;
const DENSE_EVENTS = 100;
const SPARSE_COMMITS = 10;

/** What the detector tells the waiter side. */
export interface CommitListener {
  /** A check ran: wake whoever the commits counted so far concern. */
  checked(): void;
  /** The detector stopped (idle, a broken watch, close): every waiter must re-read now. */
  stopped(): void;
  /** Whether anyone waits; the detector stops `idleStopMs` after nobody does. */
  waiting(): boolean;
  /**
   * Whether someone waits for a task to finish. Such a wait wakes once and
   * leaves, so it cannot feed back into more checks, and it is what a
   * caller's round trip waits on: while there is one (and for a window
   * after), dense events do not switch to polling.
   */
  urgent(): boolean;
}

/**
 * Detects commits to one SQLite database by watching its directory and
 * confirming each event with `PRAGMA data_version`, switching to a timed
 * check while commits are frequent. Lazy: it runs only between
 * {@link SQLiteCommitDetector.start} and `idleStopMs` after its listener has
 * nobody waiting. Nothing it holds keeps the process alive (the watch and
 * every delayed check are unref'd).
 *
 * @example
 * ```ts
 * const detector = new SQLiteCommitDetector(connection, {}, listener);
 * if (detector.start()) detector.checkNow();
 * ```
 */
export class SQLiteCommitDetector {
  readonly #source: WakeupSource;
  readonly #listener: CommitListener;
  readonly #minWakeGapMs: number;
  readonly #idleStopMs: number;
  readonly #retryWatchMs: number;
  readonly #watch: NonNullable<SQLiteWakeupsOptions["watch"]>;
  readonly #wakeThroughDirectory: boolean;

  #mode: SQLiteWakeupsMode = "off";
  #watcher: fs.FSWatcher | null = null;
  #directory = "";
  /** What is watched: the wake file, or the directory when there is none. */
  #watchPath = "";
  /** Watching the wake file: every event follows a visible commit, and the backstop runs. */
  #signalled = false;
  readonly #backstopMs: number;
  /** The file and its WAL, as named in the directory's events. */
  #names: ReadonlySet<string> = new Set();
  #closed = false;
  /** `performance.now()` before which watching is not tried again after a failure. */
  #retryWatchAt = Number.NEGATIVE_INFINITY;
  #idleTimer: TimerHandle | null = null;

  /** The last data version seen. */
  #version: number | null = null;
  /** Commits seen; never reset, so a listener compares it with what it last saw. */
  #seq = 0;
  /** `performance.now()` when a task-done wait last began; dense events switch to polling only a window after it. */
  #urgedAt = Number.NEGATIVE_INFINITY;
  /** Watch mode: an event is not yet explained by a commit, or its follow-up checks still run. */
  #pending = false;
  /** Which of `#tail`'s delays the next follow-up check waits. */
  #attempt = 0;
  #tail: readonly number[] = AFTER_EVENT_DELAYS_MS;
  #cancelPendingCheck: (() => void) | null = null;
  #checkAt = Number.POSITIVE_INFINITY;
  /** Events (watch mode) or commits (poll mode) in the window that started at `#windowStart`. */
  #windowStart = 0;
  #windowCount = 0;

  constructor(source: WakeupSource, options: SQLiteWakeupsOptions, listener: CommitListener) {
    this.#source = source;
    this.#listener = listener;
    this.#minWakeGapMs = options.minWakeGapMs ?? 1;
    this.#idleStopMs = options.idleStopMs ?? 1000;
    this.#retryWatchMs = options.retryWatchMs ?? 5000;
    this.#backstopMs = options.backstopMs ?? DEFAULT_BACKSTOP_MS;
    this.#watch = options.watch ?? ((directory, fn) => fs.watch(directory, { persistent: false }, fn));
    this.#wakeThroughDirectory = options.wakeThroughDirectory ?? LOSSY_WATCH;
  }

  /** `"watch"`, `"poll"`, or `"off"` while nobody waits or watching failed. */
  get mode(): SQLiteWakeupsMode {
    return this.#mode;
  }

  /** Commits seen so far (monotonic). */
  get seq(): number {
    return this.#seq;
  }

  /**
   * Whether waits end on commits: the detector runs, or it could start at the next wait — not in
   * memory, not closed, no recent broken watch. (Before the database opens the first wait sleeps
   * plainly, but no claim precedes that open.)
   */
  get watchable(): boolean {
    if (this.#mode !== "off") return true;
    return !this.#closed && this.#source.memory !== true && performance.now() >= this.#retryWatchAt;
  }

  /** Starts watching if nothing runs yet; false when waits must be plain sleeps. */
  start(): boolean {
    if (this.#mode !== "off") return true;
    if (this.#closed || performance.now() < this.#retryWatchAt) return false;
    let file: string | null;
    let version: number | null;
    let wake: string | null;
    try {
      file = this.#source.databaseFile();
      version = file === null ? null : this.#source.dataVersion();
      wake = this.#source.wakeFile?.() ?? null;
    } catch {
      return false;
    }
    // In-memory, or not open yet (a wait before the first read): sleep this once, watch from the next.
    if (file === null || version === null) return false;
    this.#directory = path.dirname(file);
    const base = path.basename(file);
    this.#signalled = wake !== null;
    this.#watchPath = this.#signalled && !this.#wakeThroughDirectory ? (wake as string) : this.#directory;
    // Watching the directory, a signal also counts: it comes after its commit, whose frames' events may all have been checked too early.
    this.#names = new Set(this.#signalled ? [path.basename(wake as string)] : [base, `${base}-wal`, ...(wake === null ? [] : [path.basename(wake)])]);
    if (!this.#openWatcher()) return false;
    this.#version = version;
    return true;
  }

  /** Someone waits: cancel a pending idle stop. */
  busy(): void {
    this.#idleTimer?.clear();
    this.#idleTimer = null;
  }

  /** A waiter left: stop `idleStopMs` from now if nobody waits by then. */
  idle(): void {
    if (this.#mode === "off" || this.#listener.waiting() || this.#idleTimer !== null) return;
    this.#idleTimer = startTimer(
      () => {
        this.#idleTimer = null;
        if (!this.#listener.waiting()) this.#stop();
      },
      this.#idleStopMs,
      { unref: true },
    );
  }

  /** Runs a check as soon as possible (on the next turn of the event loop). */
  checkNow(): void {
    this.#requestCheck(performance.now());
  }

  /** Runs a check at `atMs` (`performance.now()` time) unless one is due earlier; e.g. a wake held back until then. */
  checkAt(atMs: number): void {
    if (this.#mode !== "off") this.#requestCheck(atMs);
  }

  /**
   * Someone's round trip waits on the next wake (a task-done wait began, or a worker taking tasks one
   * by one waits again): watch rather than poll from now on, and for a window after (see
   * {@link CommitListener.urgent}).
   */
  urge(): void {
    const now = performance.now();
    this.#urgedAt = now;
    if (this.#mode === "poll") this.#toWatch(now);
  }

  /** Stops for good; later `start()` calls return false. Idempotent. */
  close(): void {
    this.#closed = true;
    this.#stop();
  }

  // ---------------------------------------------------------------- modes

  /** Enters watch mode; on failure, stops and sleeps for `retryWatchMs`. */
  #openWatcher(): boolean {
    try {
      const watcher = this.#watch(this.#watchPath, (_event, filename) => this.#onEvent(filename));
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
    if (this.#signalled) this.#requestBackstop(this.#windowStart);
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
    this.#requestCheck(now);
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

  /** Stops watching or polling and has the listener wake every waiter. */
  #stop(): void {
    this.#mode = "off";
    this.#closeWatcher();
    this.#cancelCheck();
    this.#idleTimer?.clear();
    this.#idleTimer = null;
    this.#pending = false;
    this.#listener.stopped();
  }

  #onEvent(filename: string | Buffer | null): void {
    if (this.#mode !== "watch") return;
    // Every event costs, so other files' count too: a busy neighbour in the directory also ends in polling.
    const now = performance.now();
    if (now - this.#windowStart >= WINDOW_MS) {
      this.#windowStart = now;
      this.#windowCount = 0;
    }
    if (++this.#windowCount > DENSE_EVENTS && !this.#urgent(now)) {
      this.#toPoll(now);
      return;
    }
    // Some platforms omit the name; then any change in the directory counts.
    if (filename !== null && !this.#names.has(filename.toString())) return;
    this.#pending = true;
    this.#attempt = 0;
    // A signal follows its commit, so the check right on it finds it: no follow-up checks.
    this.#tail = this.#signalled ? NO_DELAYS : AFTER_EVENT_DELAYS_MS;
    this.#requestCheck(now);
  }

  #urgent(now: number): boolean {
    return now - this.#urgedAt < WINDOW_MS || this.#listener.urgent();
  }

  // --------------------------------------------------------------- checks

  /** Runs a check at `atMs` (`performance.now()` time), or earlier if one is already due earlier. */
  #requestCheck(atMs: number): void {
    if (this.#cancelPendingCheck !== null && this.#checkAt <= atMs) return;
    this.#cancelCheck();
    const delayMs = atMs - performance.now();
    const run = (): void => {
      this.#cancelPendingCheck = null;
      this.#checkAt = Number.POSITIVE_INFINITY;
      this.#runCheck();
    };
    if (delayMs > 0) {
      const timer = startTimer(run, Math.ceil(delayMs), { unref: true });
      this.#cancelPendingCheck = () => timer.clear();
    } else {
      // Not unref'd: Node lets the loop block in its poll phase while only unref'd immediates are pending, so
      // one would run at the next unrelated timer or I/O (up to a poll interval later). It runs within this
      // turn of the loop either way, so it never holds the process open.
      const immediate = setImmediate(run);
      this.#cancelPendingCheck = () => clearImmediate(immediate);
    }
    this.#checkAt = atMs;
  }

  /** The next backstop check, `backstopMs` after `now`, unless a check is due earlier. */
  #requestBackstop(now: number): void {
    if (this.#backstopMs > 0 && Number.isFinite(this.#backstopMs)) this.#requestCheck(now + this.#backstopMs);
  }

  #cancelCheck(): void {
    if (this.#cancelPendingCheck === null) return;
    this.#cancelPendingCheck();
    this.#cancelPendingCheck = null;
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
    this.#listener.checked();
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
      this.#requestCheck(now + this.#minWakeGapMs);
      return;
    }
    if (this.#signalled) this.#requestBackstop(now);
    if (!this.#pending) return;
    if (this.#signalled) {
      this.#pending = false;
      return;
    }
    if (committed) {
      this.#attempt = 0;
      this.#tail = AFTER_COMMIT_DELAYS_MS;
    }
    const delayMs = this.#tail[this.#attempt++];
    if (delayMs === undefined) this.#pending = false;
    else this.#requestCheck(now + delayMs);
  }
}
