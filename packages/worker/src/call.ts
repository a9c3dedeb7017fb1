/**
 * One handler call from its claim to its end, and the only place its phase
 * changes. A *call* is one handler invocation (one task, or a batch of tasks
 * of one name). Its phases:
 *
 * - *buffered* — claimed, waiting for a slot (only with `prefetch`); its
 *   leases are renewed by its claim's heartbeat.
 * - *running* — its handler holds a slot, until the handler's outcome is known.
 * - *settling* — its handler ended (or, *dropped*, it will never start) and
 *   its settlement writes are in flight; it holds no slot.
 *
 * A call is *abandoned* when the worker lets go of it at the stop deadline
 * without settling, leaving its tasks to lease expiry.
 */
import type { RuntimeClock, Deferred } from "@cairnq/runtime";
import { deferred } from "@cairnq/runtime";
import type { Heartbeat } from "./heartbeat.js";
import type { Context } from "./task-context.js";
import type { Registration } from "./task-registry.js";

/** Where a call is in its life (see the file's opening block). @internal */
export type CallPhase = "buffered" | "running" | "settling";

/** What a {@link Call} needs from the worker around it: one object shared by every call. @internal */
export interface CallHost {
  /** The call holds no slot from now on: its handler ended, or it will never start (admission frees its slot). */
  settling(call: Call): void;
  /** Settles a buffered task whose cancel request a heartbeat saw, without running its handler. */
  cancelWaiting(ctx: Context): Promise<void>;
  /** The worker's clock (a call's start time). */
  readonly clock: RuntimeClock;
}

/** What a call's abandonment tells while its handler runs (the call runner's wait for the handler). @internal */
export interface AbandonHook {
  abandoned(): void;
}

/** The contexts handed to a call's handler before it starts: shared, not an array per call. */
const NO_CONTEXTS: readonly Context[] = Object.freeze([]);
/** A call's `done` before its life begins: shared, not a promise per call. */
const SETTLED: Promise<void> = Promise.resolve();

/**
 * One handler call in flight: its tasks, its phase, and the transitions
 * between phases. Admission starts it ({@link Call.start}), the claim's
 * dispatch reviews it after heartbeats ({@link Call.review}), the call
 * runner ends its handler ({@link Call.handlerEnded}), and the stop deadline
 * lets go of it ({@link Call.abandon}); everyone else asks it questions.
 * @internal
 */
export class Call {
  readonly name: string;
  readonly registration: Registration | undefined;
  /** Every task the call claimed. */
  readonly contexts: readonly Context[];
  /** The payload bytes the call holds against `maxInFlightBytes`. */
  readonly bytes: number;

  readonly #host: CallHost;
  #phase: CallPhase;
  #handed: readonly Context[] = NO_CONTEXTS;
  #heartbeat: Heartbeat | null = null;
  #abandoned = false;
  /** Ends the handler's wait with `abandoned` while the handler runs; `null` otherwise. */
  #onAbandon: AbandonHook | null = null;
  /** For a call buffered at its claim: resolves `true` when it starts, `false` when it is dropped unstarted. */
  #started: Deferred<boolean> | null = null;
  /** Settlements written before the call started (a cancel seen while it was buffered). */
  #early: Promise<void>[] | null = null;
  /** See {@link Call.done}: made only when someone waits (a stopping worker), not one promise per call. */
  #done: Deferred<void> | null = null;
  #over = false;

  /**
   * @param contexts - The call's tasks, all of one name; at least one.
   * @param registration - The name's registration, or `undefined` when handlers changed while the claim was in
   *   flight: such a call is `settling` from the start (it only writes its `no_handler` fails).
   */
  constructor(host: CallHost, registration: Registration | undefined, contexts: readonly Context[], bytes: number) {
    this.#host = host;
    this.name = (contexts[0] as Context).name;
    this.registration = registration;
    this.contexts = contexts;
    this.bytes = bytes;
    this.#phase = registration === undefined ? "settling" : "buffered";
  }

  /** Admission's index of the call in the set of its state (running, settling); -1 in none. */
  slot = -1;

  /** Resolves when the call is over: settled, dropped or abandoned, and released by admission ({@link Call.over}). */
  get done(): Promise<void> {
    if (this.#over) return SETTLED;
    return (this.#done ??= deferred()).promise;
  }

  /** The call is over and admission released it: {@link Call.done} resolves. */
  over(): void {
    this.#over = true;
    this.#done?.resolve();
  }

  /** The call's phase; a settling call is never abandoned. */
  get phase(): CallPhase {
    return this.#phase;
  }

  /** The contexts handed to the handler: those still live when the call started (empty until then). */
  get handed(): readonly Context[] {
    return this.#handed;
  }

  /** The claim's heartbeat the call joined (see {@link Call.join}); `null` for an unregistered name. */
  get heartbeat(): Heartbeat | null {
    return this.#heartbeat;
  }

  /** Whether the stop deadline let go of the call while it ran. */
  get abandoned(): boolean {
    return this.#abandoned;
  }

  /** Settlements written while the call was buffered (cancels seen by a heartbeat), or `null`. */
  get early(): readonly Promise<void>[] | null {
    return this.#early;
  }

  /** The call's tasks join `heartbeat` from now on (from the claim: a buffered call keeps its leases like a running one). */
  join(heartbeat: Heartbeat): void {
    this.#heartbeat = heartbeat;
    heartbeat.add(this.contexts);
  }

  /** For a buffered call: resolves `true` when it starts, `false` when it is dropped without starting. */
  whenStarted(): Promise<boolean> {
    return (this.#started ??= deferred()).promise;
  }

  /**
   * Admission gave the call a slot: a buffered call starts running with the tasks still live (and is
   * dropped when none is); an unregistered name's call hands all its tasks to its `no_handler` fails.
   */
  start(): void {
    if (this.#phase === "buffered") {
      const contexts = this.contexts;
      const handed = contexts.every((ctx) => ctx.live) ? contexts : contexts.filter((ctx) => ctx.live);
      if (handed.length === 0) {
        this.drop();
        return;
      }
      const now = this.#host.clock.now();
      this.#handed = handed;
      for (const ctx of handed) ctx.startedAtMs = now;
      this.#phase = "running";
    } else {
      this.#handed = this.contexts;
    }
    this.#started?.resolve(true);
  }

  /**
   * After each heartbeat of a buffered call: a task whose cancel flag the beat saw is settled now,
   * without running its handler (`complete` ends it `canceled`: cancel wins); a task whose lease the
   * beat found gone is left alone. A call with no task left to run is dropped from the buffer.
   */
  review(): void {
    if (this.#phase !== "buffered") return;
    for (const ctx of this.contexts) {
      if (ctx.live && ctx.cancelSeen) (this.#early ??= []).push(this.#host.cancelWaiting(ctx));
    }
    if (!this.contexts.some((ctx) => ctx.live)) this.drop();
  }

  /** Ends a buffered call that will never start: its heartbeat stops, it holds no slot, and it ends once its early settlements do. */
  drop(): void {
    this.#phase = "settling";
    this.#heartbeat?.release(this.contexts[0] as Context);
    this.#host.settling(this);
    this.#started?.resolve(false);
  }

  /** While the handler runs, `onAbandon` ends its wait if the stop deadline lets go of the call; `null` once it ended. */
  onAbandon(onAbandon: AbandonHook | null): void {
    this.#onAbandon = onAbandon;
  }

  /**
   * The handler's wait ended: the heartbeat lets go of the call, and unless its outcome was
   * `abandoned` the call is settling from now on (its slot frees, so the next claim overlaps its
   * settlement's commit). An abandoned call stays `running` until admission releases it.
   */
  handlerEnded(abandoned: boolean): void {
    this.#heartbeat?.release(this.contexts[0] as Context);
    if (abandoned) return;
    this.#phase = "settling";
    this.#host.settling(this);
  }

  /**
   * The stop deadline passed: the call's tasks are let go of, left to lease expiry. A buffered call is
   * dropped unstarted; a running one's outcome is `abandoned`, whatever its handler does later.
   *
   * @returns whether the call was let go of (a settling call is left to finish its writes).
   */
  abandon(): boolean {
    if (this.#phase === "settling") return false;
    for (const ctx of this.contexts) ctx.markLost("abandoned");
    if (this.#phase === "buffered") {
      this.drop();
    } else {
      this.#abandoned = true;
      this.#onAbandon?.abandoned();
    }
    return true;
  }
}
