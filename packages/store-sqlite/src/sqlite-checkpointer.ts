/**
 * WAL checkpoints on a thread of their own, off the commit path.
 *
 * With SQLite's automatic checkpoint, the connection whose commit takes the
 * WAL past 1,000 frames copies the WAL into the database file inside that
 * commit and syncs both (synchronous = NORMAL): 4–6 ms of fsync on the dev
 * machine, during which its process's event loop is blocked (every SQLite
 * driver is synchronous). Whatever waits on that commit — a `call()` round trip, a
 * worker's next claim — waits that long; it is what set SQLite's `call()`
 * p99. A `PASSIVE` checkpoint never takes the write lock, so a thread with a
 * connection of its own can run it while the process goes on writing; the
 * writer's own automatic checkpoint is then raised to a fallback
 * ({@link FALLBACK_AUTOCHECKPOINT_FRAMES}) it only reaches if the thread
 * falls behind, and restored if the thread dies.
 *
 * What is left on the commit path is the WAL restart: the first commit after
 * a complete checkpoint writes a new WAL header and syncs it (one fsync
 * instead of the checkpoint's two and the copying). The writer asks for a
 * checkpoint every {@link CHECKPOINT_EVERY_WRITES} statements, about as often
 * as SQLite's threshold would run one, and the thread also checkpoints every
 * {@link CHECKPOINT_INTERVAL_MS}, which bounds by time how long a commit's
 * WAL frames wait to be synced (what synchronous = NORMAL defers to the
 * checkpoint), where the frame threshold bounded it by later writes only.
 *
 * Measured on the 2-core dev machine under load (~6), alternating runs:
 * drain c1 faster in all 8 rounds (median ~2,950 vs ~2,300 tasks/s); the
 * latency bench (1,000 sequential `call()`s, idle worker in another process,
 * 6 rounds) p95 median 6.4 → 5.5 ms (p99 there is set by CPU starvation);
 * counting fsync system calls, the worker's main thread made 9 in a run instead
 * of 88. The cost: a thread per store that has written
 * 200 statements, ~9 MB of RSS (c64 drain peak 97–99 → 106–107 MB).
 * Re-measure with `node bench/run.mjs --backend sqlite --only latency,drain`.
 */
import { Worker } from "node:worker_threads";
import type { CheckpointThreadSource } from "./drivers/sqlite-driver.js";

/**
 * The writer asks for a checkpoint after this many of its statements: about
 * the 1,000 frames of SQLite's own threshold for this schema (a task's write
 * changes its table page and up to ten index pages), so WAL restarts stay as
 * rare as they were.
 */
export const CHECKPOINT_EVERY_WRITES = 200;

/**
 * The thread also checkpoints this often, so a trickle of commits (or other
 * processes' writes) has its WAL synced within this interval; a checkpoint
 * with nothing new to copy costs a few microseconds.
 */
export const CHECKPOINT_INTERVAL_MS = 1_000;

/**
 * The writer's automatic checkpoint while the thread runs: reached only if
 * the thread cannot keep up (e.g. a long read holds the WAL), so the WAL
 * stays bounded (~40 MB at 4 KiB pages) whatever happens to the thread.
 */
export const FALLBACK_AUTOCHECKPOINT_FRAMES = 10_000;

/** SQLite's default `wal_autocheckpoint`, restored when the thread is gone. */
export const DEFAULT_AUTOCHECKPOINT_FRAMES = 1_000;

/**
 * The thread: its own connection (opened by the driver's snippet, which
 * defines `open(file)`), a `PASSIVE` checkpoint on a timer; busy (another
 * checkpoint runs) is skipped.
 */
const threadSource = (driver: CheckpointThreadSource): string => `
const { parentPort, workerData } = require("node:worker_threads");
${driver.source}
const db = open(workerData.file);
const run = () => {
  try {
    db.checkpoint();
  } catch {
    // Busy (another connection checkpoints): the next request or tick tries again.
  }
};
const timer = setInterval(run, workerData.intervalMs);
parentPort.on("message", (message) => {
  if (message === "checkpoint") return run();
  clearInterval(timer);
  db.close();
  parentPort.close();
});
`;

/** What the checkpointer changes on the writer: only its automatic checkpoint threshold. */
export interface CheckpointTarget {
  /** Sets the writer's `wal_autocheckpoint` (frames; 0 turns it off). */
  setAutocheckpoint(frames: number): void;
}

/**
 * The checkpoint thread of one store's file database. Nothing it holds keeps
 * the process alive (the thread is unref'd).
 *
 * @example
 * ```ts
 * const checkpointer = new SQLiteCheckpointer("/data/cairnq.db", driver.checkpointThread, writerTarget);
 * checkpointer.start();
 * await checkpointer.close();
 * ```
 */
export class SQLiteCheckpointer {
  readonly #file: string;
  readonly #target: CheckpointTarget;
  readonly #driver: CheckpointThreadSource;
  #worker: Worker | null = null;
  #exited: Promise<void> | null = null;
  #closed = false;

  /**
   * @param file - The database file, as the store's connections opened it.
   * @param driver - How the thread opens the file (the store's driver).
   * @param target - The writer whose automatic checkpoint the thread replaces.
   */
  constructor(file: string, driver: CheckpointThreadSource, target: CheckpointTarget) {
    this.#file = file;
    this.#driver = driver;
    this.#target = target;
  }

  /** Whether the thread runs. */
  get running(): boolean {
    return this.#worker !== null;
  }

  /** Starts the thread, once; when it cannot start or later dies, the writer checkpoints on its own again. */
  start(): void {
    if (this.#closed || this.#worker !== null) return;
    let worker: Worker;
    try {
      worker = new Worker(threadSource(this.#driver), {
        eval: true,
        workerData: { driver: this.#driver.data, file: this.#file, intervalMs: CHECKPOINT_INTERVAL_MS },
      });
    } catch {
      return;
    }
    worker.unref();
    this.#worker = worker;
    this.#exited = new Promise((resolve) => {
      worker.once("exit", () => {
        if (this.#worker === worker) this.#stopped();
        resolve();
      });
    });
    // An error ends the thread (its exit follows); checkpoints are an optimization, so it is not reported.
    worker.on("error", () => {});
    this.#target.setAutocheckpoint(FALLBACK_AUTOCHECKPOINT_FRAMES);
  }

  /** Asks the thread for a checkpoint (the writer wrote {@link CHECKPOINT_EVERY_WRITES} statements); a no-op while it does not run. */
  request(): void {
    this.#worker?.postMessage("checkpoint");
  }

  /** Stops the thread (after its current checkpoint) and waits for it to exit. Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    const worker = this.#worker;
    if (worker === null) return;
    this.#stopped();
    // Held until it exits: a caller awaiting close() must not see the process end first.
    worker.ref();
    worker.postMessage("close");
    await this.#exited;
  }

  /** Stops the thread without waiting (a failed connect); the thread exits on its own shortly. */
  terminate(): void {
    this.#closed = true;
    const worker = this.#worker;
    if (worker === null) return;
    this.#worker = null;
    void worker.terminate();
  }

  #stopped(): void {
    this.#worker = null;
    if (this.#closed) return;
    try {
      this.#target.setAutocheckpoint(DEFAULT_AUTOCHECKPOINT_FRAMES);
    } catch {
      // The writer is closed: nothing to restore.
    }
  }
}
