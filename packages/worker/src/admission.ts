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
import type { Call } from "./call.js";
import type { PlanSnapshot } from "./planner.js";
import type { Context } from "./task-context.js";

/**
 * Calls in flight (running, buffered, settling) stay within this many times `concurrency + prefetch`.
 * 3 rather than 2: at 2 a Postgres drain at c64 with prefetch 64 had a draw's settlements and the next
 * one's in flight and its overlapping claim planned nothing (an empty claim transaction, ~1 claim in 10),
 * and each combined complete carried one draw's 64 rows; at 3 those empty claims are gone and the
 * completes carry 128 (a one-off timeline of the bench's drain).
 */
const IN_FLIGHT_ROOMS = 3;

/** The limits admission enforces. @internal */
export interface AdmissionLimits {
  readonly concurrency: number;
  /** Calls that may be claimed ahead of free slots and wait in the buffer (`prefetch`; 0 = none). */
  readonly prefetch: number;
  readonly maxInFlightBytes: number | null;
  readonly claimBatch: number | null;
  readonly resources: Readonly<Record<string, number>>;
}

/**
 * The worker's in-flight counters. A call is *buffered* (claimed, waiting
 * for a slot: only with `prefetch`), *running* (its handler holds a slot),
 * or *settling* (its handler ended; its writes are in flight). Name and
 * resource counts cover buffered and running calls. @internal
 */
export class Admission {
  readonly #limits: AdmissionLimits;
  readonly #calls = new CallSet();
  /** Claimed calls waiting for a slot, in claim order. */
  readonly #buffered: Call[] = [];
  /** Calls whose handler has ended and whose tasks are being settled: they hold no slot (see {@link Admission.settling}). */
  readonly #settling = new CallSet();
  readonly #nameCalls = new Map<string, number>();
  readonly #resourceCalls = new Map<string, number>();
  /**
   * Contexts of calls in flight by task id (to spot a re-claim of a task an older call still holds):
   * the context itself while one holds the task, as every claim but a re-claim leaves it — a set per
   * task would be one more object per task in flight — and a list in the rare case of several.
   */
  readonly #live = new Map<string, Context | Context[]>();
  #bytesInFlight = 0;
  /** Calls claims in flight may still bring (see {@link Admission.reserve}). */
  #reserved = 0;
  /** Resolved at the next change {@link Admission.waitForRoom} waits for; made only while it waits. */
  #callEnded: Deferred<void> | null = null;

  constructor(limits: AdmissionLimits) {
    this.#limits = limits;
  }

  /** Calls in flight: buffered, running and settling. */
  get size(): number {
    return this.#calls.size + this.#buffered.length + this.#settling.size;
  }

  /** Calls holding a slot: running (not buffered, not settling). */
  get running(): number {
    return this.#calls.size;
  }

  /** A snapshot of the calls in flight: running, buffered, settling. */
  calls(): Call[] {
    return [...this.#calls, ...this.#buffered, ...this.#settling];
  }

  /** Buffered calls, in claim order (a copy). */
  buffered(): Call[] {
    return [...this.#buffered];
  }

  /** The contexts of calls in flight that hold `taskId` (an older attempt, if we just claimed it again). */
  holding(taskId: string): readonly Context[] | undefined {
    const held = this.#live.get(taskId);
    return held === undefined || Array.isArray(held) ? held : [held];
  }

  /** `concurrency − running − buffered` calls: slots a claim would fill at once (≤ 0 while the buffer covers every slot). */
  #slots(): number {
    return this.#limits.concurrency - this.#calls.size - this.#buffered.length - this.#reserved;
  }

  /**
   * Holds room for up to `calls` calls a claim in flight may bring, so a claim overlapping it plans
   * only what is left; returns what was reserved, to hand back with {@link Admission.unreserve}.
   */
  reserve(calls: number): number {
    const held = Math.max(0, calls);
    this.#reserved += held;
    return held;
  }

  /** Hands back room reserved by a claim (it returned, or re-planned). */
  unreserve(calls: number): void {
    if (calls <= 0) return;
    this.#reserved -= calls;
    this.#wake();
  }

  /**
   * Calls a claim may take now: `concurrency + prefetch − running − buffered`, and never more than
   * `3 × (concurrency + prefetch) − calls in flight`, less what claims in flight reserved. Settling calls hold no slot, but they cannot
   * pile up behind slow commits without bound — calls in flight stay within `3 × (concurrency +
   * prefetch)` ({@link IN_FLIGHT_ROOMS}), which bounds the tasks held in memory and lets two draws'
   * settlements be in flight (and be combined by the store) while the next claim refills the buffer.
   */
  free(): number {
    const room = this.#limits.concurrency + this.#limits.prefetch;
    return Math.min(this.#slots() + this.#limits.prefetch, IN_FLIGHT_ROOMS * room - this.size - this.#reserved);
  }

  /** Calls whose handler ended and whose settlement writes are in flight. */
  get settlingCalls(): number {
    return this.#settling.size;
  }

  /** Resolves once every call settling now has settled (or `signal` aborted). */
  async waitForSettled(signal: AbortSignal): Promise<void> {
    const pending = [...this.#settling];
    const aborted = abortPromise(signal);
    try {
      while (!signal.aborted && pending.some((call) => this.#settling.has(call))) {
        this.#callEnded ??= deferred();
        await Promise.race([this.#callEnded.promise, aborted.promise]);
      }
    } finally {
      aborted.dispose();
    }
  }

  /** Whether the byte budget is used up. */
  overBytes(): boolean {
    return this.#limits.maxInFlightBytes !== null && this.#bytesInFlight >= this.#limits.maxInFlightBytes;
  }

  /**
   * Whether a claim overlapping one in flight is worth making: only with prefetch, and only for at
   * least half the prefetch room. (Without prefetch the room left beside a claim in flight is a few
   * slots freed meanwhile, and small overlapping claims measured slower than waiting for it.)
   */
  worthOverlapping(): boolean {
    const prefetch = this.#limits.prefetch;
    return prefetch > 0 && this.free() >= Math.ceil(prefetch / 2);
  }

  /**
   * Whether a claim is worth making now. Without prefetch: whenever there is room. With it: when a
   * slot would otherwise go idle, or when at least half the prefetch room is free — refilling the
   * buffer a few tasks at a time would cost a claim transaction per task.
   */
  #worthClaiming(): boolean {
    const free = this.free();
    if (free <= 0) return false;
    const prefetch = this.#limits.prefetch;
    return prefetch === 0 || this.#slots() > 0 || free >= Math.ceil(prefetch / 2);
  }

  /** §8.3 step 1: while a call is in flight and no claim is worth making (or the byte budget is used up), wait for a change. */
  async waitForRoom(signal: AbortSignal): Promise<void> {
    // Settling calls count here (they hold bytes); an idle worker always has room, even for one oversized payload.
    if (this.size === 0 || (this.#worthClaiming() && !this.overBytes()) || signal.aborted) return;
    const aborted = abortPromise(signal);
    try {
      while (this.size > 0 && (!this.#worthClaiming() || this.overBytes()) && !signal.aborted) {
        this.#callEnded ??= deferred();
        await Promise.race([this.#callEnded.promise, aborted.promise]);
      }
    } finally {
      aborted.dispose();
    }
  }

  /** The planner's view of the counters now (copies: the store may replay the plan). */
  snapshot(batchOf: (name: string) => number): PlanSnapshot {
    return {
      free: this.free(),
      slots: Math.max(0, Math.min(this.#slots(), this.free())),
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

  /**
   * Counts a claimed call. A call of a registered name is buffered and started at once when a slot is
   * free and nothing was claimed before it is still waiting (claim order); one of an unregistered name
   * (`phase: "settling"` from the start) runs at once, holding a slot while its `fail` is written.
   */
  admit(call: Call): void {
    this.#nameCalls.set(call.name, (this.#nameCalls.get(call.name) ?? 0) + 1);
    const resource = call.registration?.resource ?? null;
    if (resource !== null) this.#resourceCalls.set(resource, (this.#resourceCalls.get(resource) ?? 0) + 1);
    this.#bytesInFlight += call.bytes;
    for (const ctx of call.contexts) {
      const held = this.#live.get(ctx.taskId);
      if (held === undefined) this.#live.set(ctx.taskId, ctx);
      else if (Array.isArray(held)) held.push(ctx);
      else this.#live.set(ctx.taskId, [held, ctx]);
    }
    if (call.phase === "buffered") {
      this.#buffered.push(call);
      this.#pump();
    } else {
      this.#calls.add(call);
      call.start();
    }
  }

  /** Starts buffered calls, in claim order, while slots are free. */
  #pump(): void {
    while (this.#buffered.length > 0 && this.#calls.size < this.#limits.concurrency) {
      const call = this.#buffered.shift() as Call;
      this.#calls.add(call);
      call.start();
    }
  }

  /**
   * The call's handler has ended (or, for a buffered call, it will never start) and its settlement
   * writes are in flight: its slot (and its name and resource counts) is free for the next claim, so
   * a claim can overlap the settlement's commit instead of waiting for it, and the next buffered call
   * starts. `concurrency` bounds handler calls at once (README); the tasks being settled stay in
   * flight (bytes, the contexts by task id, `size`) until {@link Admission.release}.
   */
  settling(call: Call): void {
    if (!this.#calls.delete(call) && !this.#unbuffer(call)) return;
    this.#settling.add(call);
    this.#uncount(call);
    this.#pump();
    this.#wake();
  }

  /** Uncounts a call that ended, and wakes {@link Admission.waitForRoom}. */
  release(call: Call): void {
    if (this.#settling.delete(call)) {
      this.#forget(call);
      this.#wake();
      return;
    }
    if (!this.#calls.delete(call) && !this.#unbuffer(call)) return;
    this.#uncount(call);
    this.#forget(call);
    this.#pump();
    this.#wake();
  }

  #unbuffer(call: Call): boolean {
    const at = this.#buffered.indexOf(call);
    if (at < 0) return false;
    this.#buffered.splice(at, 1);
    return true;
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
      const held = this.#live.get(ctx.taskId);
      if (held === ctx) {
        this.#live.delete(ctx.taskId);
      } else if (Array.isArray(held)) {
        const rest = held.filter((other) => other !== ctx);
        if (rest.length === 0) this.#live.delete(ctx.taskId);
        else this.#live.set(ctx.taskId, rest.length === 1 ? (rest[0] as Context) : rest);
      }
    }
  }

  #wake(): void {
    const ended = this.#callEnded;
    if (ended === null) return;
    this.#callEnded = null;
    ended.resolve();
  }
}

/**
 * The calls of one state (running, settling), each call holding its own index: add, delete and `has` without
 * hashing, and no table to regrow and shrink as the state fills with a claim's calls and empties again. A
 * `Set` here, emptied and refilled by every claim of a c64 drain, reallocated its table on the way down:
 * about 250 bytes per task for the collector (a sampling heap profile of the drain). Order is not kept.
 */
class CallSet implements Iterable<Call> {
  readonly #items: Call[] = [];

  get size(): number {
    return this.#items.length;
  }

  has(call: Call): boolean {
    return this.#items[call.slot] === call;
  }

  add(call: Call): void {
    if (this.has(call)) return;
    call.slot = this.#items.length;
    this.#items.push(call);
  }

  delete(call: Call): boolean {
    const at = call.slot;
    const items = this.#items;
    if (items[at] !== call) return false;
    const last = items.pop() as Call;
    if (last !== call) {
      items[at] = last;
      last.slot = at;
    }
    call.slot = -1;
    return true;
  }

  [Symbol.iterator](): Iterator<Call> {
    return this.#items[Symbol.iterator]();
  }
}
