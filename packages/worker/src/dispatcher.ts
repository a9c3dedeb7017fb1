/**
 * §8.3 step 4: turns a claim's rows into calls and sees each through its
 * life — admitted (started at once, or buffered with `prefetch`), run and
 * settled by the call runner, then released by admission. One heartbeat
 * serves all the calls of a claim.
 */
import type { Logger, Task } from "@cairnq/protocol";
import { compareClaimOrder, logSafely } from "@cairnq/protocol/sdk";
import type { RuntimeClock } from "@cairnq/runtime";
import type { Admission } from "./admission.js";
import type { CallHost } from "./call.js";
import { Call } from "./call.js";
import type { CallEnded, CallRunner } from "./call-runner.js";
import type { Heartbeat } from "./heartbeat.js";
import { splitCalls } from "./planner.js";
import type { Reporter } from "./reporter.js";
import type { ContextHost } from "./task-context.js";
import { Context } from "./task-context.js";
import type { TaskRegistry } from "./task-registry.js";
import type { WorkerTelemetry } from "./worker-telemetry.js";

/** What a {@link Dispatcher} needs from its worker. @internal */
export interface DispatcherHost {
  readonly workerId: string;
  readonly logger: Logger | undefined;
  readonly clock: RuntimeClock;
  readonly registry: Pick<TaskRegistry, "get">;
  readonly admission: Pick<Admission, "holding" | "buffered" | "payloadBytes" | "admit" | "settling" | "release">;
  readonly runner: Pick<CallRunner, "heartbeat" | "execute" | "cancelWaiting" | "failUnprepared">;
  readonly reporter: Pick<Reporter, "claimed" | "report">;
  /** What every task context gets (one object for the worker). */
  readonly contexts: ContextHost;
  /** The worker's telemetry, or `null` with `tracing` and `metrics` off. */
  readonly telemetry: Pick<WorkerTelemetry, "claimed"> | null;
}

/** Starts the calls of each claim (§8.3 step 4). @internal */
export class Dispatcher implements CallEnded {
  readonly #host: DispatcherHost;
  /** What every call gets: one object for the worker, not one per call. */
  readonly #calls: CallHost;

  constructor(host: DispatcherHost) {
    this.#host = host;
    const { admission, runner } = host;
    this.#calls = {
      settling: (call) => admission.settling(call),
      cancelWaiting: (ctx) => runner.cancelWaiting(ctx),
      clock: host.clock,
    };
  }

  /**
   * Splits a claim's rows into calls and starts them (or, with `prefetch`, buffers those without a free slot).
   * A call whose preparation throws is not started: its tasks are failed ({@link CallRunner.failUnprepared})
   * and the promise of those writes is returned (`undefined` when every call was prepared), so the claim
   * cycle waits for them and the worker goes on with the claim's other calls.
   */
  dispatch(rows: readonly Task[], claimMs: number): Promise<void> | undefined {
    const { admission, registry, runner } = this.#host;
    let reclaimed = false;
    for (const row of rows) {
      // We just claimed this task again, so any older call of ours holding it lost its lease (the row's attempt moved on).
      const older = admission.holding(row.id);
      if (older === undefined) continue;
      // A settled one is left alone: its write, if still in flight, meets the attempt fence and says so itself.
      for (const ctx of older) if (!ctx.settled) ctx.markLost("reclaimed");
      reclaimed = true;
    }
    // A buffered call whose every task was just found lost will never start: drop it now.
    if (reclaimed) for (const call of admission.buffered()) call.review();
    this.#host.telemetry?.claimed(rows);
    logSafely(this.#host.logger, "debug", "claimed tasks", { workerId: this.#host.workerId, count: rows.length, durationMs: claimMs });
    // One heartbeat for the claim's calls: their leases began together, so one statement per beat renews them all.
    const calls: Call[] = [];
    const heartbeat = runner.heartbeat(() => {
      for (const call of calls) call.review();
    });
    const claimedAtMs = this.#host.clock.now();
    let failing: Promise<void>[] | undefined;
    // A multi-row draw's rows come back in no particular order (§5; Postgres's at random, SQLite's by ascending
    // priority): sorted into the claim order, the calls start — or wait in the prefetch buffer — in it.
    const ordered = rows.length > 1 ? [...rows].sort(compareClaimOrder) : rows;
    for (const group of splitCalls(ordered, (name) => registry.get(name)?.batch ?? 1)) {
      try {
        calls.push(this.#call(group, claimMs, claimedAtMs, heartbeat));
      } catch (err) {
        // An unexpected throw here would otherwise end run() (or, overlapping, leave the tasks running until
        // their leases expire, to be claimed and fail the same way): it fails these tasks, not the worker.
        (failing ??= []).push(...group.map((row) => runner.failUnprepared(row, err)));
      }
    }
    // Every call joined the heartbeat before any starts: a handler that returns at once ends its call (and
    // lets go of the heartbeat) within this loop, which must not stop the beat the claim's other calls need.
    for (const call of calls) this.#start(call);
    return failing === undefined ? undefined : Promise.all(failing).then(() => undefined);
  }

  /** A claimed call, joined to its claim's heartbeat, not started yet. */
  #call(rows: readonly Task[], claimMs: number, claimedAtMs: number, heartbeat: Heartbeat): Call {
    const registration = this.#host.registry.get((rows[0] as Task).name);
    const contexts: Context[] = [];
    for (const row of rows) contexts.push(new Context(this.#host.contexts, row, claimedAtMs));
    const call = new Call(this.#calls, registration, contexts, this.#host.admission.payloadBytes(rows));
    this.#host.reporter.claimed(contexts, claimMs);
    // The heartbeat runs from the claim, so a call waiting in the buffer keeps its leases like a running one.
    if (registration !== undefined) call.join(heartbeat);
    return call;
  }

  /** Admits a call: it starts at once when a slot is free (see Call.start), else waits in the buffer. */
  #start(call: Call): void {
    this.#host.admission.admit(call);
    if (call.phase === "buffered") {
      void this.#follow(call).then(
        () => this.callEnded(call, undefined),
        (err: unknown) => this.callEnded(call, err),
      );
    } else {
      this.#host.runner.execute(call, this);
    }
  }

  /** A call's life is over (its settlement returned, or it was dropped or abandoned): admission releases it. */
  callEnded(call: Call, error: unknown): void {
    if (error !== undefined) {
      const first = call.contexts[0] as Context;
      this.#host.reporter.report(error, { phase: "execute", taskId: first.taskId }, first);
    }
    this.#host.admission.release(call);
    call.over();
  }

  /** A buffered call's life: wait for a slot, run and settle, then any settlement written while it waited. */
  async #follow(call: Call): Promise<void> {
    if (await call.whenStarted()) {
      await new Promise<void>((resolve, reject) => {
        // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- the error is reported as it was thrown
        this.#host.runner.execute(call, { callEnded: (_call, error) => (error === undefined ? resolve() : reject(error)) });
      });
    }
    const early = call.early;
    if (early !== null) await Promise.all(early);
  }
}
