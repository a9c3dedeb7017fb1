/**
 * §8.3 step 4: turns a claim's rows into calls and sees each through its
 * life — admitted (started at once, or buffered with `prefetch`), run and
 * settled by the call runner, then released by admission. One heartbeat
 * serves all the calls of a claim.
 */
import type { Logger, Task } from "@cairnq/protocol";
import { logSafely } from "@cairnq/protocol/sdk";
import type { RuntimeClock } from "@cairnq/runtime";
import type { Admission } from "./admission.js";
import type { CallHost } from "./call.js";
import { Call } from "./call.js";
import type { CallRunner } from "./call-runner.js";
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
  readonly runner: Pick<CallRunner, "heartbeat" | "execute" | "cancelWaiting">;
  readonly reporter: Pick<Reporter, "claimed" | "report">;
  /** What every task context gets (one object for the worker). */
  readonly contexts: ContextHost;
  /** The worker's telemetry, or `null` with `tracing` and `metrics` off. */
  readonly telemetry: Pick<WorkerTelemetry, "claimed"> | null;
}

/** Starts the calls of each claim (§8.3 step 4). @internal */
export class Dispatcher {
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

  /** Splits a claim's rows into calls and starts them (or, with `prefetch`, buffers those without a free slot). */
  dispatch(rows: readonly Task[], claimMs: number): void {
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
    for (const group of splitCalls(rows, (name) => registry.get(name)?.batch ?? 1)) calls.push(this.#admit(group, claimMs, heartbeat));
  }

  #admit(rows: readonly Task[], claimMs: number, heartbeat: Heartbeat): Call {
    const { admission, reporter } = this.#host;
    const first = rows[0] as Task;
    const registration = this.#host.registry.get(first.name);
    const claimedAtMs = this.#host.clock.now();
    const contexts = rows.map((row) => new Context(this.#host.contexts, row, claimedAtMs));
    const call = new Call(this.#calls, registration, contexts, admission.payloadBytes(rows));
    reporter.claimed(contexts, claimMs);
    // The heartbeat runs from the claim, so a call waiting in the buffer keeps its leases like a running one.
    if (registration !== undefined) call.join(heartbeat);
    admission.admit(call); // starts it at once when a slot is free (see Call.start)
    // A call that started at once runs now; a buffered one waits for its start (or its drop) first.
    const life = call.phase === "buffered" ? this.#follow(call) : this.#host.runner.execute(call);
    const release = (): void => admission.release(call);
    call.done = life.then(release, (err: unknown) => {
      reporter.report(err, { phase: "execute", taskId: first.id }, contexts[0]);
      release();
    });
    return call;
  }

  /** A buffered call's life: wait for a slot, run and settle, then any settlement written while it waited. */
  async #follow(call: Call): Promise<void> {
    if (await call.whenStarted()) await this.#host.runner.execute(call);
    const early = call.early;
    if (early !== null) await Promise.all(early);
  }
}
