/**
 * The worker's lifecycle events: a typed map of namespaced names to payloads.
 * Every task payload carries the ids a log line needs and `durationMs`.
 */
import { catchRejection } from "@cairnq/protocol/sdk";

/** Fields every task event carries. */
export interface TaskEvent {
  readonly taskId: string;
  readonly workerId: string;
  readonly name: string;
  readonly queue: string;
  /** The attempt this run is (1 on the first claim). */
  readonly attempt: number;
  /** Since the call started (for `task:claimed`: how long the claim cycle took). */
  readonly durationMs: number;
}

/** Why a context lost its lease. */
export type LeaseLostReason =
  /** A heartbeat no longer renewed it. */
  | "heartbeat"
  /** An owned write (progress, heartbeat, succeed, complete) matched nothing. */
  | "write"
  /** This worker claimed the same task again: the earlier attempt's lease had expired. */
  | "reclaimed";

/** Payload of `task:failed`. */
export interface TaskFailedEvent extends TaskEvent {
  /** The error envelope written (§12). */
  readonly error: unknown;
  readonly retryable: boolean;
  /** The task went back to `queued` and will run again after `delayMs`. */
  readonly willRetry: boolean;
  readonly delayMs: number;
}

/** Payload of `lease:lost`. */
export interface LeaseLostEvent extends TaskEvent {
  readonly reason: LeaseLostReason;
}

/** Payload of `worker:stopping`. */
export interface WorkerStoppingEvent {
  readonly workerId: string;
  /** Handler calls in flight: running, waiting in the prefetch buffer, or writing their settlements. */
  readonly inFlight: number;
  /**
   * Claims sent to the store and not returned yet. One whose draws the store had not
   * planned when `stop()` began takes nothing; rows one had already drawn come back
   * leased to this worker and join the drain (the protocol has no un-claim).
   */
  readonly claiming: number;
  /** How long the worker had been running. */
  readonly durationMs: number;
}

/** Payload of `worker:stopped`. */
export interface WorkerStoppedEvent {
  readonly workerId: string;
  /** Calls let go at the stop deadline (their tasks are left to lease expiry). */
  readonly abandoned: number;
  /** How long stopping took. */
  readonly durationMs: number;
}

/** Every worker event and its payload. */
export interface WorkerEvents {
  /** A claim cycle leased the task to this worker. */
  "task:claimed": TaskEvent;
  /** The task was completed successfully. */
  "task:succeeded": TaskEvent;
  /** A fail was written: requeued (`willRetry`) or failed for good. */
  "task:failed": TaskFailedEvent;
  /** A settlement found a cancel request: the task ended `canceled`. */
  "task:canceled": TaskEvent;
  /**
   * The task parked on a durable sleep, wait or join (`ctx.sleep`, `ctx.waitFor`, `ctx.join`): it is
   * `queued` again, its slot and lease given back; its handler runs again from the top when it resumes.
   */
  "task:parked": TaskEvent;
  /** A context learned it no longer holds its task; its signal aborted. */
  "lease:lost": LeaseLostEvent;
  /** `stop()` began: no more claims; running handlers are draining. */
  "worker:stopping": WorkerStoppingEvent;
  /** `stop()` finished. */
  "worker:stopped": WorkerStoppedEvent;
}

/** A name of {@link WorkerEvents}. */
export type WorkerEventName = keyof WorkerEvents;

/**
 * Every name of {@link WorkerEvents}, for checking a name given at run time
 * (a misspelt event would otherwise get a listener that never fires). The
 * `satisfies` clause keeps it in step with the interface: a name added there
 * and not here fails to compile.
 */
export const WORKER_EVENT_NAMES = Object.freeze(
  Object.keys({
    "task:claimed": true,
    "task:succeeded": true,
    "task:failed": true,
    "task:canceled": true,
    "task:parked": true,
    "lease:lost": true,
    "worker:stopping": true,
    "worker:stopped": true,
  } satisfies Record<WorkerEventName, true>),
) as readonly WorkerEventName[];

/** A listener of event `E`. */
export type WorkerEventListener<E extends WorkerEventName> = (payload: WorkerEvents[E]) => void;

/**
 * A minimal typed emitter. Unlike Node's `EventEmitter` it has no special
 * `"error"` event, and a throwing (or rejecting) listener is handed to `onListenerError`
 * instead of propagating into the worker.
 */
export class TypedEmitter<Events extends object> {
  readonly #listeners = new Map<keyof Events, Set<(payload: never) => void>>();

  /** Whether `event` has a listener (so its payload is worth building). */
  has(event: keyof Events): boolean {
    return (this.#listeners.get(event)?.size ?? 0) > 0;
  }

  on<E extends keyof Events>(event: E, listener: (payload: Events[E]) => void): void {
    let set = this.#listeners.get(event);
    if (set === undefined) {
      set = new Set();
      this.#listeners.set(event, set);
    }
    set.add(listener);
  }

  off<E extends keyof Events>(event: E, listener: (payload: Events[E]) => void): void {
    this.#listeners.get(event)?.delete(listener);
  }

  emit<E extends keyof Events>(event: E, payload: Events[E], onListenerError: (err: unknown) => void): void {
    const set = this.#listeners.get(event);
    if (set === undefined) return;
    for (const listener of [...set]) {
      try {
        // Typed as returning void, yet an async listener returns a promise: its rejection is handed on like a throw, not left unhandled.
        catchRejection((listener as (payload: Events[E]) => unknown)(payload), onListenerError);
      } catch (err) {
        onListenerError(err);
      }
    }
  }
}
