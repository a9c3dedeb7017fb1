/**
 * Admission bookkeeping (§8.3 steps 1 and 3): what the worker has in flight —
 * calls, calls per name and per resource, payload bytes, and the contexts
 * that hold each task — so the claim loop knows when there is room and the
 * planner how much.
 */
import type { Task } from "@cairnq/protocol";
import { encodeJson } from "@cairnq/protocol/adapter";
import type { Deferred } from "@cairnq/runtime";
import { abortPromise, deferred } from "@cairnq/runtime";
import type { Call } from "./call-runner.js";
import type { PlanSnapshot } from "./planner.js";
import type { Context } from "./task-context.js";

/** The limits admission enforces. @internal */
export interface AdmissionLimits {
  readonly concurrency: number;
  readonly maxInFlightBytes: number | null;
  readonly claimBatch: number | null;
  readonly resources: Readonly<Record<string, number>>;
}

/** The worker's in-flight counters. @internal */
export class Admission {
  readonly #limits: AdmissionLimits;
  readonly #calls = new Set<Call>();
  /** Calls whose handler has ended and whose tasks are being settled: they hold no slot (see {@link Admission.settling}). */
  readonly #settling = new Set<Call>();
  readonly #nameCalls = new Map<string, number>();
  readonly #resourceCalls = new Map<string, number>();
  /** Contexts of calls in flight by task id (to spot a re-claim of a task an older call still holds). */
  readonly #live = new Map<string, Set<Context>>();
  #bytesInFlight = 0;
  #callEnded: Deferred<void> = deferred();

  constructor(limits: AdmissionLimits) {
    this.#limits = limits;
  }

  /** Calls in flight, settling ones included. */
  get size(): number {
    return this.#calls.size + this.#settling.size;
  }

  /** A snapshot of the calls in flight, settling ones included. */
  calls(): Call[] {
    return [...this.#calls, ...this.#settling];
  }

  /** The contexts of calls in flight that hold `taskId` (an older attempt, if we just claimed it again). */
  holding(taskId: string): ReadonlySet<Context> | undefined {
    return this.#live.get(taskId);
  }

  /**
   * `concurrency − running calls`, and never more than `2 × concurrency − calls in flight`: settling
   * calls hold no slot, but they cannot pile up behind slow commits without bound — running plus
   * settling calls stay within `2 × concurrency`, which bounds the tasks held in memory.
   */
  free(): number {
    const concurrency = this.#limits.concurrency;
    return Math.min(concurrency - this.#calls.size, 2 * concurrency - this.size);
  }

  /** Whether the byte budget is used up. */
  overBytes(): boolean {
    return this.#limits.maxInFlightBytes !== null && this.#bytesInFlight >= this.#limits.maxInFlightBytes;
  }

  /** §8.3 step 1: while a call runs and no slot (or byte budget) is free, wait for a call to end. */
  async waitForRoom(signal: AbortSignal): Promise<void> {
    // Settling calls count here (they hold bytes); an idle worker always has room, even for one oversized payload.
    while (this.size > 0 && (this.free() <= 0 || this.overBytes()) && !signal.aborted) {
      const aborted = abortPromise(signal);
      try {
        await Promise.race([this.#callEnded.promise, aborted.promise]);
      } finally {
        aborted.dispose();
      }
    }
  }

  /** The planner's view of the counters now (copies: the store may replay the plan). */
  snapshot(batchOf: (name: string) => number): PlanSnapshot {
    return {
      free: this.free(),
      claimBatch: this.#limits.claimBatch,
      nameCalls: new Map(this.#nameCalls),
      resourceCalls: new Map(this.#resourceCalls),
      capacities: this.#limits.resources,
      batchOf,
    };
  }

  /** UTF-8 bytes of the rows' payloads as compact JSON; only computed when a byte budget is set. */
  payloadBytes(rows: readonly Task[]): number {
    if (this.#limits.maxInFlightBytes === null) return 0;
    let bytes = 0;
    for (const row of rows) {
      try {
        bytes += Buffer.byteLength(encodeJson(row.payload ?? {}, "payload"), "utf8");
      } catch {
        // A row read back from the store is JSON already; nothing to charge if it somehow is not.
      }
    }
    return bytes;
  }

  /** Counts a call that is starting. */
  admit(call: Call): void {
    this.#calls.add(call);
    this.#nameCalls.set(call.name, (this.#nameCalls.get(call.name) ?? 0) + 1);
    const resource = call.registration?.resource ?? null;
    if (resource !== null) this.#resourceCalls.set(resource, (this.#resourceCalls.get(resource) ?? 0) + 1);
    this.#bytesInFlight += call.bytes;
    for (const ctx of call.contexts) {
      let set = this.#live.get(ctx.taskId);
      if (set === undefined) {
        set = new Set();
        this.#live.set(ctx.taskId, set);
      }
      set.add(ctx);
    }
  }

  /**
   * The call's handler has ended and its settlement writes are in flight: its slot (and its name and
   * resource counts) is free for the next claim, so a claim can overlap the settlement's commit
   * instead of waiting for it. `concurrency` bounds handler calls at once (README); the tasks being
   * settled stay in flight (bytes, the contexts by task id, `size`) until {@link Admission.release}.
   */
  settling(call: Call): void {
    if (!this.#calls.delete(call)) return;
    this.#settling.add(call);
    this.#uncount(call);
    this.#wake();
  }

  /** Uncounts a call that ended, and wakes {@link Admission.waitForRoom}. */
  release(call: Call): void {
    if (this.#settling.delete(call)) {
      this.#forget(call);
      this.#wake();
      return;
    }
    if (!this.#calls.delete(call)) return;
    this.#uncount(call);
    this.#forget(call);
    this.#wake();
  }

  #uncount(call: Call): void {
    const names = (this.#nameCalls.get(call.name) ?? 1) - 1;
    if (names === 0) this.#nameCalls.delete(call.name);
    else this.#nameCalls.set(call.name, names);
    const resource = call.registration?.resource ?? null;
    if (resource !== null) {
      const held = (this.#resourceCalls.get(resource) ?? 1) - 1;
      if (held === 0) this.#resourceCalls.delete(resource);
      else this.#resourceCalls.set(resource, held);
    }
  }

  #forget(call: Call): void {
    this.#bytesInFlight -= call.bytes;
    for (const ctx of call.contexts) {
      const set = this.#live.get(ctx.taskId);
      set?.delete(ctx);
      if (set?.size === 0) this.#live.delete(ctx.taskId);
    }
  }

  #wake(): void {
    const ended = this.#callEnded;
    this.#callEnded = deferred();
    ended.resolve();
  }
}
