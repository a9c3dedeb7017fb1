/**
 * The heartbeat of handler calls (protocol v1 §8.5): every interval, check
 * whether the event loop was blocked, then renew the leases of the calls'
 * live contexts with one `heartbeatBatch`.
 */
import type { TaskStore } from "@cairnq/protocol";
import { EventLoopBlocked } from "@cairnq/protocol";
import type { RuntimeClock, TimerHandle } from "@cairnq/runtime";
import type { WorkerErrorInfo } from "./options.js";
import type { Context } from "./task-context.js";

export interface HeartbeatOptions {
  readonly store: TaskStore;
  readonly workerId: string;
  readonly leaseMs: number;
  readonly intervalMs: number;
  /** The worker's clock: the beats' timers and the blocked-loop measure. */
  readonly clock: RuntimeClock;
  /** Where errors go; `ctx` is the task `info.taskId` names. */
  readonly report: (err: unknown, info: WorkerErrorInfo, ctx: Context) => void;
  /** Called after each beat's reply was recorded (cancel flags, lost leases). */
  readonly onBeat?: () => void;
}

/**
 * The heartbeat of the calls of one claim: their leases began together, so
 * one `heartbeatBatch` per beat renews every live context among them (and
 * one timer serves them all) rather than a statement and a timer per call.
 * Beats are scheduled from the start of the previous beat rather than its
 * end, so a slow store does not read as a blocked event loop; a beat still
 * in flight when the next is due is skipped, not doubled. It stops when no
 * call holds it any more, or when none of its contexts is live.
 */
export class Heartbeat {
  readonly #opts: HeartbeatOptions;
  readonly #contexts: Context[] = [];
  #timer: TimerHandle | null = null;
  #lastBeatAtMs = 0;
  #beating = false;
  #running = false;
  #started = false;
  /** Calls that hold the heartbeat (added and not yet released). */
  #holders = 0;

  constructor(options: HeartbeatOptions) {
    this.#opts = options;
  }

  /**
   * A call joins: its contexts are renewed from now on, and it holds the heartbeat until
   * {@link Heartbeat.release}. The first call starts it; the blocked check measures from then (the claim).
   */
  add(contexts: readonly Context[]): void {
    for (const ctx of contexts) this.#contexts.push(ctx);
    this.#holders += 1;
    if (this.#started) return;
    this.#started = true;
    this.#running = true;
    this.#lastBeatAtMs = this.#opts.clock.now();
    this.#schedule();
  }

  /**
   * A call ended: runs the blocked check once more for it (`ctx` is its first task), so a
   * handler that blocked the loop and then returned is still reported — unless the beat had already
   * stopped because nothing was live — and stops once no call holds the heartbeat.
   */
  release(ctx: Context): void {
    if (this.#running) this.#checkBlocked(ctx, false);
    this.#holders -= 1;
    if (this.#holders <= 0) this.#halt();
  }

  #halt(): void {
    this.#running = false;
    this.#timer?.clear();
    this.#timer = null;
  }

  #schedule(): void {
    // Chained past 2^31 ms, so a long interval is not a beat every millisecond.
    this.#timer = this.#opts.clock.startTimer(() => this.#tick(), this.#opts.intervalMs, { unref: true });
  }

  #tick(): void {
    if (!this.#running) return;
    this.#checkBlocked(this.#contexts[0] as Context, true);
    const live = this.#contexts.filter((ctx) => ctx.live);
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

  /**
   * Reports `EventLoopBlocked` when more than an interval passed beyond the beat that was due. A beat
   * always restarts the measure; a call's end only when it reported (so one blocked stretch is
   * reported once, not by every call of the claim that ends after it).
   */
  #checkBlocked(ctx: Context, beat: boolean): void {
    const { intervalMs, leaseMs, clock } = this.#opts;
    const now = clock.now();
    const lateMs = now - this.#lastBeatAtMs - intervalMs;
    const blocked = lateMs > intervalMs;
    if (blocked) this.#opts.report(new EventLoopBlocked(lateMs, intervalMs, leaseMs), { phase: "execute", taskId: ctx.taskId }, ctx);
    if (blocked || beat) this.#lastBeatAtMs = now;
  }

  async #beat(live: readonly Context[]): Promise<void> {
    const { store, workerId, leaseMs } = this.#opts;
    let held: Map<string, boolean>;
    try {
      held = await store.heartbeatBatch({ taskIds: live.map((ctx) => ctx.taskId), workerId, leaseMs });
    } catch (err) {
      const first = live[0] as Context;
      this.#opts.report(err, { phase: "execute", taskId: first.taskId }, first);
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
