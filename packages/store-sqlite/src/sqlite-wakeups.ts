/**
 * Same-host wake-ups for SQLite: §9's accelerator, without a server to push.
 *
 * Terminology:
 * - **waiter**: one pending `claimWake` or `taskDoneWake`; it resolves at its
 *   timeout at the latest.
 * - **commit**: what the {@link SQLiteCommitDetector} (`sqlite-commit-detector.ts`)
 *   finds by watching the database's directory and reading
 *   `PRAGMA data_version`; only commits wake.
 *
 * After a commit, claim waiters wake when a task is queued on one of their
 * queues and task-done waiters when their task is terminal (one read for
 * each group), so from the caller's view this behaves like the Postgres
 * channel: an early resolve means "re-read", the timeout bounds every wait,
 * and nothing depends on delivery. The task-done read reads the terminal
 * rows themselves, and a woken waiter resolves with its task's row (as
 * Postgres's done-row extension sends it), which the §7 wait loop returns
 * without reading it again.
 */
import type fs from "node:fs";
import type { StoreSignal, Task } from "@cairnq/protocol";
import { sleep, WaiterSet } from "@cairnq/runtime";
import type { Wakeups } from "@cairnq/store-kysely";
import { SQLiteCommitDetector } from "./sqlite-commit-detector.js";

/**
 * What {@link SQLiteWakeups} reads from the database: only the methods it
 * calls, all synchronous and cheap (a few microseconds with better-sqlite3).
 * `SQLiteConnection` implements it.
 */
export interface WakeupSource {
  /** The main database file as SQLite resolved it; null for an in-memory database or while not open. */
  databaseFile(): string | null;
  /**
   * The wake file CairnQ writers signal after each commit (`sqlite-wake-signal.ts`); null (or absent)
   * when there is none: the detector then watches the database's directory.
   */
  wakeFile?(): string | null;
  /** True for an in-memory database, known before it opens: its waits are always plain sleeps. @default false */
  readonly memory?: boolean;
  /** `PRAGMA data_version` on a connection that never commits; null while not open. May throw. */
  dataVersion(): number | null;
  /** Whether any task is `queued` on one of `queues` (due or not). May throw. */
  queuedIn(queues: readonly string[]): boolean;
  /** The rows, decoded, of the tasks among `taskIds` that are terminal: each a fresh object. May throw. */
  terminalRows(taskIds: readonly string[]): readonly Task[];
  /**
   * How many statements this store's writer has run (any count that moves
   * with every write). A claim wake after which it has not moved found
   * nothing to do: the woken worker probed, claimed nothing and waits again.
   */
  writes(): number;
}

/** Options of {@link SQLiteWakeups}; the defaults are what the store uses. */
export interface SQLiteWakeupsOptions {
  /**
   * The least time between two claim wakes when the first one found
   * nothing to do (the store wrote nothing since: see
   * {@link WakeupSource.writes}), and the check interval in poll mode. A
   * queue holding a task no claim here can take (delayed, another name)
   * would otherwise wake its idle worker on every commit of a busy
   * database; a wake that led to a claim never holds back the next one.
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
   * While the wake file is watched, check this often as well, for commits
   * of writers that do not signal (another protocol-v1 implementation, the
   * `sqlite3` shell); 0 or Infinity: never.
   * @default 100
   */
  backstopMs?: number;
  /**
   * Watch the wake file through the database's directory (the wake file's
   * events are the signals; the others are ignored) instead of on its own:
   * Bun's watch of a single file drops about half of another process's
   * changes (see `LOSSY_WATCH` in `sqlite-commit-detector.ts`).
   * @default true under Bun, false elsewhere
   */
  wakeThroughDirectory?: boolean;
  /**
   * How the wake file (or, without one, the database's directory) is
   * watched. For tests that simulate a platform where watching fails.
   * @default fs.watch, not persistent
   */
  watch?: (path: string, listener: (event: string, filename: string | Buffer | null) => void) => fs.FSWatcher;
}

/** What {@link SQLiteWakeups} is doing: nothing, following filesystem events, or checking on a timer. */
export type SQLiteWakeupsMode = "off" | "watch" | "poll";

/** Claim waits at most this far apart, with writes between them, count as a worker at work (see `#urgeIfWorking`). */
const WORKING_GAP_MS = 50;

/**
 * The SQLite store's {@link Wakeups}: resolves `claimWake` and
 * `taskDoneWake` within about a millisecond of a relevant commit by any
 * CairnQ process on this host, by watching the database's wake file (which
 * CairnQ writers signal after each commit: `sqlite-wake-signal.ts`) and
 * confirming each event with `PRAGMA data_version`; commits of writers that
 * do not signal are found by a backstop check every
 * {@link SQLiteWakeupsOptions.backstopMs}. Without a wake file it watches
 * the database's directory instead. An accelerator only: every wait
 * still ends at its timeout, and when watching is impossible (in-memory
 * databases, filesystems without change notification, no inotify watches
 * left) waits are plain sleeps and no error reaches the caller. Network
 * filesystems may not report other hosts' writes at all; the poll interval
 * covers them.
 *
 * - **Lazy**: the wake file is watched only while someone waits (and
 *   {@link SQLiteWakeupsOptions.idleStopMs} after); a store nobody waits on
 *   costs nothing, a waiting one its backstop checks (~0.6 ms of CPU a
 *   second). Nothing it holds keeps the process alive (the watch and every
 *   timer are unref'd); a caller that must keep the process up holds its
 *   own handle, as the client's wait does.
 * - **No feedback**: checks and filters only read, and waiters wake only on
 *   commits, so an idle worker whose probe finds nothing sleeps until the
 *   next relevant commit or its poll interval.
 * - **Filtered**: after a commit, claim waiters wake only if a task is
 *   queued on one of their queues, due or not (a queue holding a delayed
 *   task wakes its waiters on every commit, at most once per
 *   {@link SQLiteWakeupsOptions.minWakeGapMs} while those wakes find
 *   nothing to do; lease expiry and delays falling due are not commits, the
 *   poll interval finds them), and task-done waiters only if their task is
 *   terminal, at once.
 * - **Buffered claims**: commits seen while no claim waiter was registered
 *   are checked again for the next `claimWake` (as §9 buffers
 *   notifications), so a submit landing between a worker's probe and its
 *   next wait is not missed; a wait that starts the watch (nothing watched
 *   since that probe) reads once for the same reason. So a worker may wait
 *   here right after a claim whose reprobe found nothing left
 *   (`capabilities.claimWakeOnQueued`, true while the file can be watched).
 *   A `taskDoneWake` likewise reads its task at once when commits went
 *   unchecked since the last done wait, or when it starts the watch, and
 *   returns at once for a task already terminal: a task that finished just
 *   before the wait began is not waited for until the timeout. So a
 *   `call()` may wait here right after its submit, without reading the
 *   task's status first (`capabilities.taskDoneWakeReads`, true while the
 *   file can be watched).
 * - **Rows**: a `taskDoneWake` that its read found terminal resolves with
 *   the row it read (a second wait on the same task, at once, re-reads).
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
  readonly #detector: SQLiteCommitDetector;
  /** Pending `claimWake`s, each with its queues. */
  readonly #claims: WaiterSet<readonly string[]>;
  /** Pending `taskDoneWake`s, each with its task id and, once a check found it terminal, its row. */
  readonly #dones: WaiterSet<DoneWatch>;
  /** The detector's commit count up to which claim and done waiters have been checked. */
  #claimSeq = 0;
  #doneSeq = 0;
  readonly #minWakeGapMs: number;
  /** `performance.now()` of the last claim wake, and the source's write count then. */
  #claimWokeAt = Number.NEGATIVE_INFINITY;
  #writesAtClaimWake = Number.NaN;
  /** `performance.now()` when the last `claimWake` began, and the source's write count then. */
  #claimWaitAt = Number.NEGATIVE_INFINITY;
  #writesAtClaimWait = Number.NaN;

  /**
   * @param source - The database the waits are about (the store's connection).
   * @param options - See {@link SQLiteWakeupsOptions}.
   */
  constructor(source: WakeupSource, options: SQLiteWakeupsOptions = {}) {
    const onLeave = (): void => this.#detector.idle();
    this.#claims = new WaiterSet({ onLeave });
    this.#dones = new WaiterSet({ onLeave });
    this.#minWakeGapMs = options.minWakeGapMs ?? 1;
    this.#detector = new SQLiteCommitDetector(source, options, {
      checked: () => {
        this.#wakeClaims(source);
        this.#wakeDones(source);
      },
      stopped: () => {
        this.#claims.wakeAll();
        this.#dones.wakeAll();
      },
      waiting: () => this.#claims.size > 0 || this.#dones.size > 0,
      urgent: () => this.#dones.size > 0,
    });
    this.#source = source;
  }

  /**
   * `"watch"` while checks follow filesystem events, `"poll"` while commits
   * are frequent enough that checks run on a timer, `"off"` while nobody
   * waits or watching failed. For diagnostics and tests.
   */
  get mode(): SQLiteWakeupsMode {
    return this.#detector.mode;
  }

  /**
   * Whether waits end on commits rather than being plain sleeps: the database is a file and watching
   * it has not just failed (`capabilities.claimWakeOnQueued`).
   */
  get watchable(): boolean {
    return this.#detector.watchable;
  }

  /** Resolves after `timeoutMs`, or about a millisecond after a commit leaves a task queued on one of `queues`, or when `signal` aborts. */
  claimWake(queues: readonly string[], timeoutMs: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted === true || !(timeoutMs > 0)) return Promise.resolve();
    // A fresh start has seen no commit yet, so it cannot tell what landed since the caller's last claim: one read does.
    const fresh = this.#detector.mode === "off";
    if (!this.#start()) return sleep(timeoutMs, { signal, unref: true });
    this.#urgeIfWorking();
    // Commits seen while no claim waiter listened may have landed after this caller's probe.
    if (fresh || this.#claimSeq !== this.#detector.seq) {
      this.#claimSeq = this.#detector.seq;
      if (queuedIn(this.#source, queues)) return Promise.resolve();
    }
    const waiting = this.#claims.wait(queues, timeoutMs, signal);
    this.#detector.busy();
    return waiting;
  }

  /**
   * Resolves after `timeoutMs`, or about a millisecond after a commit that left `taskId` terminal, or when `signal`
   * aborts. Woken by a read that found the task terminal, it resolves with the row read (`TaskStore.taskDoneWake`).
   */
  async taskDoneWake(taskId: string, timeoutMs: number, signal?: AbortSignal): Promise<Task | void> {
    if (signal?.aborted === true || !(timeoutMs > 0)) return;
    // A fresh start has seen no commit yet, so it cannot tell whether the task finished before it: one read does.
    const fresh = this.#detector.mode === "off";
    if (!this.#start()) return sleep(timeoutMs, { signal, unref: true });
    const seq = this.#detector.seq;
    // Commits seen while no done waiter listened may have finished this task: one read tells, now rather than on the
    // next turn of the loop, and a task already terminal ends the wait without waiting at all.
    if (fresh || this.#doneSeq !== seq) {
      const now = terminalNow(this.#source, taskId);
      if (now !== null) return now === UNKNOWN ? undefined : now;
    }
    const watch: DoneWatch = { taskId, row: null };
    const waiting = this.#dones.wait(watch, timeoutMs, signal);
    this.#detector.busy();
    this.#detector.urge();
    if (this.#doneSeq !== seq) {
      // Alone, this waiter is checked up to `seq` by the read above; others still need those commits checked.
      if (this.#dones.size === 1) this.#doneSeq = seq;
      else this.#detector.checkNow();
    }
    await waiting;
    return watch.row ?? undefined;
  }

  /** Never calls `listener` (see the class notes); returns a no-op unsubscribe. */
  subscribe(_listener: (signal: StoreSignal) => void): () => void {
    return () => {};
  }

  /** Stops watching and wakes every waiter (they re-read and find the store closed). Later waits are plain sleeps. Idempotent. */
  close(): void {
    this.#detector.close();
  }

  /**
   * A claim wait that follows another within {@link WORKING_GAP_MS} after which this store wrote
   * (the worker claimed and settled in between) belongs to a worker taking a stream of tasks, one
   * at a time — e.g. the tasks of a `call()` loop. Whoever submits them waits for each round trip,
   * so the detector keeps watching rather than switching to polling, which finds a commit up to a
   * timer tick (~1 ms) late. Measured on the latency bench (idle worker, sequential calls): the
   * worker's own commits and the caller's made ~3.6 events per call, enough to switch it to
   * polling early on for good, and its wake after each submit then took ~1 ms (p50) instead of
   * ~0.08 ms. A worker that is only woken for nothing (a busy database, other queues) writes
   * nothing between its waits and still switches.
   */
  #urgeIfWorking(): void {
    const now = performance.now();
    const writes = writesOf(this.#source);
    if (now - this.#claimWaitAt < WORKING_GAP_MS && writes !== this.#writesAtClaimWait) this.#detector.urge();
    this.#claimWaitAt = now;
    this.#writesAtClaimWait = writes;
  }

  /** Starts the detector if it is off; a fresh start has checked nobody against nothing yet. */
  #start(): boolean {
    if (this.#detector.mode !== "off") return true;
    if (!this.#detector.start()) return false;
    this.#claimSeq = this.#doneSeq = this.#detector.seq;
    return true;
  }

  /**
   * After a commit, wakes the claim waiters with a task queued on one of
   * their queues; returns how many woke. Within `minWakeGapMs` of a claim
   * wake that found nothing to do, the commit is left for a check at the
   * end of the gap.
   */
  #wakeClaims(source: WakeupSource): number {
    const seq = this.#detector.seq;
    if (this.#claimSeq === seq || this.#claims.size === 0) return 0;
    const now = performance.now();
    if (now - this.#claimWokeAt < this.#minWakeGapMs && writesOf(source) === this.#writesAtClaimWake) {
      this.#detector.checkAt(this.#claimWokeAt + this.#minWakeGapMs);
      return 0;
    }
    this.#claimSeq = seq;
    const byQueues = new Map<string, { queues: readonly string[]; wakes: (() => void)[] }>();
    for (const waiter of this.#claims.waiters()) {
      const key = waiter.data.join("\u0000");
      const group = byQueues.get(key);
      if (group === undefined) byQueues.set(key, { queues: waiter.data, wakes: [waiter.wake] });
      else group.wakes.push(waiter.wake);
    }
    let woken = 0;
    for (const group of byQueues.values()) {
      if (!queuedIn(source, group.queues)) continue;
      for (const wake of group.wakes) wake();
      woken += group.wakes.length;
    }
    if (woken > 0) {
      this.#claimWokeAt = now;
      this.#writesAtClaimWake = writesOf(source);
    }
    return woken;
  }

  /**
   * After a commit, wakes the task-done waiters whose task is terminal, the first waiter of each task with the
   * row read; returns how many woke.
   */
  #wakeDones(source: WakeupSource): number {
    const seq = this.#detector.seq;
    if (this.#doneSeq === seq || this.#dones.size === 0) return 0;
    this.#doneSeq = seq;
    const waiters = this.#dones.waiters();
    const ids = [...new Set(waiters.map((waiter) => waiter.data.taskId))];
    let rows: Map<string, Task | null>;
    try {
      rows = new Map(source.terminalRows(ids).map((row) => [row.id, row]));
    } catch {
      // Cannot tell which: everyone re-reads.
      rows = new Map(ids.map((id) => [id, null]));
    }
    let woken = 0;
    for (const waiter of waiters) {
      const { taskId } = waiter.data;
      if (!rows.has(taskId)) continue;
      // The row goes to one caller only (a caller may keep and change it); another waiter on the task re-reads.
      waiter.data.row = rows.get(taskId) ?? null;
      rows.set(taskId, null);
      waiter.wake();
      woken++;
    }
    return woken;
  }
}

/** The source's write count; NaN (never equal, so never held back) when it cannot tell. */
function writesOf(source: WakeupSource): number {
  try {
    return source.writes();
  } catch {
    return Number.NaN;
  }
}

/** A pending `taskDoneWake`: the task it waits for, and the row a check found terminal (handed to it as it wakes). */
interface DoneWatch {
  readonly taskId: string;
  row: Task | null;
}

/** {@link terminalNow} could not read: the caller re-reads. */
const UNKNOWN = Symbol("unknown");

/** `taskId`'s row if it is terminal, null if it is not, {@link UNKNOWN} when it cannot tell. */
function terminalNow(source: WakeupSource, taskId: string): Task | null | typeof UNKNOWN {
  try {
    return source.terminalRows([taskId])[0] ?? null;
  } catch {
    return UNKNOWN;
  }
}

/** Whether a claim on `queues` may find work; true when it cannot tell (the caller re-reads). */
function queuedIn(source: WakeupSource, queues: readonly string[]): boolean {
  try {
    return source.queuedIn(queues);
  } catch {
    return true;
  }
}
