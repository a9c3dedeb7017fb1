/**
 * The wake file: how a CairnQ process tells the others on this host that it
 * committed (§9 accelerator).
 *
 * Terminology:
 * - **wake file**: `<database>-wake` beside the database file, one byte
 *   long. Its content means nothing; a write to it is the signal.
 * - **signal**: after each turn of the write queue that committed, the store
 *   writes that byte again (one `pwrite`, a few microseconds), which makes
 *   the kernel report one change of the file to every process watching it
 *   (`sqlite-commit-detector.ts`).
 *
 * Why not watch the database's directory, as the detector did: a commit
 * writes the WAL a frame at a time (this schema changes the task's table page
 * and up to ten index pages, so ~11 writes), and inotify reports each
 * `write()`, so every other waiting process was woken ~11 times per commit,
 * each time before the commit was visible, on the cores the committer needs.
 * The signal comes once, after the commit, when one check finds it. Measured
 * on the latency bench (sequential `call()`s, idle worker in another process,
 * 1,000 calls, medians; re-measure with `node bench/run.mjs --backend sqlite
 * --only latency` and `bench/call-timeline.mjs`): the worker's claim COMMIT
 * 208 → 22 µs and the client's INSERT 127 → 71 µs (each no longer descheduled
 * by the other side's wake-ups); `call()` p50 2.66 → 1.00 ms in one run each.
 *
 * Under Bun, whose `fs.watch` of one file drops events, waiting processes
 * watch the wake file through its directory (`LOSSY_WATCH` in the detector),
 * still waking on its signals alone.
 *
 * A writer that does not signal (another protocol-v1 implementation, the
 * `sqlite3` shell) is seen by the detector's backstop check instead
 * (the `backstopMs` option of `SQLiteWakeups`) or by the waits' own timeouts.
 */
import fs from "node:fs";

const ONE_BYTE = Buffer.from([0x31]);

/** The wake file of a database file. */
export function wakeFileOf(databaseFile: string): string {
  return `${databaseFile}-wake`;
}

/**
 * The writing side of the wake file: opened once per store, written after
 * each commit. Best effort: when the file cannot be opened or written (a
 * read-only directory, a full disk), no signal goes out and waiting processes
 * fall back to their backstop checks and timeouts.
 *
 * @example
 * ```ts
 * const signal = WakeSignal.open("/data/cairnq.db");
 * signal?.signal(); // after a commit
 * signal?.close();
 * ```
 */
export class WakeSignal {
  #fd: number | null;

  private constructor(
    fd: number,
    /** The wake file's path. */
    readonly path: string,
  ) {
    this.#fd = fd;
  }

  /**
   * Opens (creating it if missing, with the database file's permission bits,
   * so every user that may write the database may signal) the wake file of
   * `databaseFile`; null when it cannot.
   */
  static open(databaseFile: string): WakeSignal | null {
    const path = wakeFileOf(databaseFile);
    try {
      const mode = fs.statSync(databaseFile).mode & 0o666;
      const fd = fs.openSync(path, fs.constants.O_RDWR | fs.constants.O_CREAT, mode);
      return new WakeSignal(fd, path);
    } catch {
      return null;
    }
  }

  /** Tells every watcher of the wake file that something committed. Never throws. */
  signal(): void {
    if (this.#fd === null) return;
    try {
      fs.writeSync(this.#fd, ONE_BYTE, 0, 1, 0);
    } catch {
      // Best effort: the watchers' backstop checks and timeouts still find the commit.
    }
  }

  /** Closes the file. Idempotent. */
  close(): void {
    const fd = this.#fd;
    this.#fd = null;
    if (fd === null) return;
    try {
      fs.closeSync(fd);
    } catch {
      // Nothing left to release.
    }
  }
}
