/**
 * The heartbeat of one handler call (protocol v1 §8.5): every interval, check
 * whether the event loop was blocked, then renew the leases of the call's
 * live contexts with one `heartbeatBatch`.
 */
import type { TaskStore } from "@cairnq/protocol";
import { EventLoopBlocked } from "@cairnq/protocol";
import type { TimerHandle } from "@cairnq/runtime";
import { startTimer } from "@cairnq/runtime";
import type { WorkerErrorInfo } from "./options.js";
import type { Context } from "./task-context.js";

export interface HeartbeatOptions {
  readonly store: TaskStore;
  readonly workerId: string;
  readonly leaseMs: number;
  readonly intervalMs: number;
  readonly contexts: readonly Context[];
  readonly report: (err: unknown, info: WorkerErrorInfo) => void;
  /** Called after each beat's reply was recorded (cancel flags, lost leases). */
  readonly onBeat?: () => void;
}

/**
 * One call's heartbeat. Beats are scheduled from the start of the previous
 * beat rather than its end, so a slow store does not read as a blocked event
 * loop; a beat still in flight when the next is due is skipped, not doubled.
 */
export class Heartbeat {
  readonly #opts: HeartbeatOptions;
  #timer: TimerHandle | null = null;
  #lastBeatAtMs = 0;
  #beating = false;
  #running = false;

  constructor(options: HeartbeatOptions) {
    this.#opts = options;
  }

  /** Starts beating; the blocked check measures from now (the call's start). */
  start(): void {
    this.#running = true;
    this.#lastBeatAtMs = Date.now();
    this.#schedule();
  }

  /**
   * Stops at the call's end. Runs the blocked check once more, so a handler
   * that blocked the loop and then returned is still reported — unless the
   * beat had already stopped because nothing was live.
   */
  stop(): void {
    if (this.#running) this.#checkBlocked();
    this.#halt();
  }

  #halt(): void {
    this.#running = false;
    this.#timer?.clear();
    this.#timer = null;
  }

  #schedule(): void {
    // Chained past 2^31 ms, so a long interval is not a beat every millisecond.
    this.#timer = startTimer(() => this.#tick(), this.#opts.intervalMs, { unref: true });
  }

  #tick(): void {
    if (!this.#running) return;
    this.#checkBlocked();
    const live = this.#opts.contexts.filter((ctx) => ctx.live);
    if (live.length === 0) {
      this.#halt();
      return;
    }
    this.#schedule();
    if (this.#beating) return;
    this.#beating = true;
    void this.#beat(live).finally(() => {
      this.#beating = false;
    });
  }

  #checkBlocked(): void {
    const now = Date.now();
    const { intervalMs, leaseMs } = this.#opts;
    const lateMs = now - this.#lastBeatAtMs - intervalMs;
    if (lateMs > intervalMs) {
      const taskId = (this.#opts.contexts[0] as Context).taskId;
      this.#opts.report(new EventLoopBlocked(lateMs, intervalMs, leaseMs), { phase: "execute", taskId });
    }
    this.#lastBeatAtMs = now;
  }

  async #beat(live: readonly Context[]): Promise<void> {
    const { store, workerId, leaseMs } = this.#opts;
    let held: Map<string, boolean>;
    try {
      held = await store.heartbeatBatch({ taskIds: live.map((ctx) => ctx.taskId), workerId, leaseMs });
    } catch (err) {
      this.#opts.report(err, { phase: "execute", taskId: (live[0] as Context).taskId });
      return;
    }
    for (const ctx of live) {
      // Settled (or lost) while the beat was in flight: its absence means nothing.
      if (!ctx.live) continue;
      const flag = held.get(ctx.taskId);
      if (flag === undefined) ctx.markLost("heartbeat");
      else ctx.recordCancel(flag);
    }
    this.#opts.onBeat?.();
  }
}
