/**
 * The claim loop (protocol v1 §8.3) and its pacing: when to claim, how much,
 * whether the store's read-only probe can be skipped, when a second claim may
 * overlap the one in flight, when to idle until a push signal or the poll
 * interval, and how to back off from failing claims. What it claims it hands
 * to the dispatcher; how much room there is it asks admission.
 *
 * Terminology: a *claim cycle* is one `store.claim` (its probe, then a
 * transaction with a *draw* per source) and the dispatch of its rows; a claim
 * comes back *full* when it took every row it asked for (there is probably
 * more); a claim's *reprobe* tells whether anything was left to claim when its
 * transaction ended; the worker is then *drained* until a `queued` signal or
 * the poll interval.
 */
import type { ClaimInput, Task, TaskStore } from "@cairnq/protocol";
import { isFatalError } from "@cairnq/protocol";
import { WORKER_DEFAULTS } from "@cairnq/protocol/sdk";
import type { Admission } from "./admission.js";
import { CLAIM_ERROR_MAX_SLEEP_MS } from "./defaults.js";
import type { Dispatcher } from "./dispatcher.js";
import type { ResolvedWorkerOptions } from "./options.js";
import { buildSources, planDraws, rotate } from "./planner.js";
import type { Reporter } from "./reporter.js";
import type { TaskRegistry } from "./task-registry.js";

/** Claim cycles in flight at once: a second overlaps the first while draws come back full (see the claim loop). */
const MAX_CLAIM_STREAMS = 2;

/** What a {@link ClaimLoop} needs from its worker. @internal */
export interface ClaimLoopHost {
  readonly store: TaskStore;
  readonly workerId: string;
  readonly options: Pick<ResolvedWorkerOptions, "queues" | "leaseMs" | "pollIntervalMs" | "prefetch" | "claimBatch" | "clock">;
  readonly admission: Pick<Admission, "waitForRoom" | "free" | "reserve" | "unreserve" | "snapshot" | "worthOverlapping" | "settlingCalls" | "waitForSettled">;
  readonly registry: Pick<TaskRegistry, "size" | "registrations" | "flowControl">;
  readonly dispatcher: Pick<Dispatcher, "dispatch">;
  readonly reporter: Pick<Reporter, "report">;
  /** An error retrying cannot fix ended the loop: the worker stops, and `run()` rejects with it. */
  fatal(err: unknown): void;
}

/** Claims tasks while the worker runs, paced by admission's room, push signals and the store's answers. @internal */
export class ClaimLoop {
  readonly #host: ClaimLoopHost;
  #polls = 0;
  /** Claim-side failures in a row, for the backoff. */
  #claimFailures = 0;
  /** Whether the next claim cycle may skip the store's probe: we were just woken by a `queued` signal, or the last claim came back full. */
  #skipProbe = false;
  /** Whether the last claim that returned came back full (there is probably more to take: a second claim may overlap). */
  #lastFull = false;
  /** Whether the last claim that returned took less than it asked for while its reprobe found work left: a limit cut it short. */
  #cutShort = false;
  /** Push `queued` signals for our queues heard so far (§9): a count, so an idle sleep or a claim can tell whether any came after it began. */
  #queuedSignals = 0;
  /** Whether this run hears the store's push signals (its `subscribe` worked and it declares `pushWakeups`). */
  #hearsSignals = false;
  /** Claim cycles begun, and the latest whose `reprobe` answer was taken (an older cycle's answer is stale). */
  #claimsBegun = 0;
  #reprobeTaken = 0;
  /**
   * Set when the last claim's `reprobe` found nothing left to claim: when that claim began, and the
   * signal count then. Until a `queued` signal arrives or a poll interval has passed since, the next
   * claim would only find what the probe found, so the loop waits for either instead (see {@link ClaimLoop.#drainedMs}).
   */
  #drained: { readonly sinceMs: number; readonly signals: number } | null = null;
  /** This run met an error retrying cannot fix (handed to the host's `fatal`): the loop ends. */
  #fatal = false;
  /** `store.claim` calls sent and not yet returned. */
  #claiming = 0;

  constructor(host: ClaimLoopHost) {
    this.#host = host;
  }

  /**
   * Claims sent to the store that have not returned yet. Stopping does not wait for them before it
   * reports `worker:stopping`: a claim whose draws the store had planned before the stop comes back
   * with rows, which are worked like any claimed ones; one that plans after it takes none.
   */
  get claiming(): number {
    return this.#claiming;
  }

  /** Claims until `signal` aborts or an error retrying cannot fix; resolves once every claim cycle in flight ended. */
  async run(signal: AbortSignal): Promise<void> {
    const { store, options } = this.#host;
    this.#fatal = false;
    const queues = new Set(options.queues);
    let unsubscribe: () => void = () => {};
    try {
      if (typeof store.subscribe === "function") {
        unsubscribe = store.subscribe(
          (s) => {
            if (s.reason === "queued" && queues.has(s.queue)) this.#queuedSignals += 1;
          },
          ["queued"],
        );
        this.#hearsSignals = store.capabilities.pushWakeups;
      }
    } catch (err) {
      // Push signals only accelerate: without them every claim cycle probes, as always.
      this.#host.reporter.report(err, { phase: "claim" });
    }
    try {
      await this.#claimLoop(signal);
    } finally {
      unsubscribe();
      this.#hearsSignals = false;
      this.#drained = null;
    }
  }

  async #claimLoop(signal: AbortSignal): Promise<void> {
    const { store, options, admission, registry, reporter } = this.#host;
    // Connect up front, so a database the worker can never use fails run() even before a handler is registered.
    if (!(await this.#survive(() => store.connect(), signal)) && this.#fatal) return;
    // Claim cycles in flight: at most two, and a second only overlaps one whose predecessor came back full.
    const cycles = new Set<Promise<void>>();
    try {
      while (!signal.aborted && !this.#fatal) {
        await admission.waitForRoom(signal);
        if (signal.aborted) break;
        if (registry.size === 0) {
          if (cycles.size > 0) await Promise.race(cycles);
          else await this.#idle(signal);
          continue;
        }
        const drainedMs = this.#drainedMs();
        if (drainedMs > 0) {
          // Nothing was left at the last claim and no signal came since: wait for one (or the poll interval).
          if (cycles.size > 0) await Promise.race(cycles);
          else await this.#idle(signal, drainedMs);
          continue;
        }
        if (options.prefetch === 0) {
          // Claims never overlap without prefetch (see worthOverlapping): one cycle at a time, awaited here.
          // A throw past the dispatcher is reported, as an overlapping cycle's is below: it must not end run().
          await this.#cycle(signal, false).catch((err: unknown) => reporter.report(err, { phase: "claim" }));
          continue;
        }
        if (cycles.size > 0 && !(cycles.size < MAX_CLAIM_STREAMS && this.#lastFull && this.#overlapAllowed() && admission.worthOverlapping())) {
          await Promise.race(cycles);
          continue;
        }
        const cycle = this.#cycle(signal, cycles.size > 0)
          .catch((err: unknown) => reporter.report(err, { phase: "claim" }))
          .finally(() => cycles.delete(cycle));
        cycles.add(cycle);
      }
    } finally {
      await Promise.all(cycles);
    }
  }

  /**
   * Whether a second claim may overlap one in flight: only when no registered name has a per-name
   * `concurrency`, a `resource` or cross-process flow control, whose counts a claim in flight could
   * change under the other's plan. (Room is held for the one in flight: {@link Admission.reserve}.)
   */
  #overlapAllowed(): boolean {
    return this.#host.registry.registrations().every((r) => r.concurrency === null && r.resource === null && (r.flowControl ?? null) === null);
  }

  /**
   * One claim cycle and its dispatch. An empty claim idles (§8.3 step 4) unless it overlapped
   * another cycle (that one's result decides).
   */
  async #cycle(signal: AbortSignal, overlapping: boolean): Promise<void> {
    const clock = this.#host.options.clock;
    const startedAtMs = clock.now();
    let result: { rows: Task[]; release: () => void } = { rows: [], release: () => {} };
    const claimed = await this.#survive(async () => {
      result = await this.#claim(signal);
    }, signal);
    if (!claimed) return;
    const { rows, release } = result;
    let failing: Promise<void> | undefined;
    try {
      if (rows.length > 0) failing = this.#host.dispatcher.dispatch(rows, clock.now() - startedAtMs);
    } finally {
      release();
    }
    if (failing !== undefined) await failing;
    if (rows.length === 0 && !overlapping) {
      const { admission } = this.#host;
      if (this.#cutShort && admission.settlingCalls > 0) {
        // A limit left nothing to take while our settlements are in flight: their commits free what it counted (a task
        // whose handler ended is `running` until its complete commits — a group's `groupConcurrency` slot, a name's).
        // Claim again once they did, rather than idling a poll interval (the reprobe said work is left).
        await admission.waitForSettled(signal);
        this.#skipProbe = true;
      } else await this.#idle(signal);
    }
  }

  /**
   * Runs one claim-side step. A transient failure (a server restarting, a
   * refused connection, anything not marked fatal) is reported and slept
   * off with backoff — `claimErrorSleepMs` doubling up to
   * {@link CLAIM_ERROR_MAX_SLEEP_MS}, reset by the next success — and the
   * caller tries again; a fatal one (`isFatalError`: a path that is not a
   * database, another protocol major, another installation) ends the run,
   * which then rejects with it. Returns whether the step succeeded.
   */
  async #survive(step: () => Promise<void>, signal: AbortSignal): Promise<boolean> {
    try {
      await step();
      this.#claimFailures = 0;
      return true;
    } catch (err) {
      if (signal.aborted) return false;
      if (isFatalError(err)) {
        this.#stopOnFatal(err);
        return false;
      }
      this.#host.reporter.report(err, { phase: "claim" });
      this.#claimFailures += 1;
      const backoffMs = Math.min(CLAIM_ERROR_MAX_SLEEP_MS, WORKER_DEFAULTS.claimErrorSleepMs * 2 ** Math.min(this.#claimFailures - 1, 20));
      await this.#host.options.clock.sleep(backoffMs, { signal, unref: true });
      return false;
    }
  }

  #stopOnFatal(err: unknown): void {
    this.#fatal = true;
    this.#host.fatal(err);
  }

  /**
   * How long the loop may still wait instead of claiming because the last claim's `reprobe` found
   * nothing left (0: claim now). The wait lasts until a `queued` signal for our queues or one poll
   * interval after that claim began — the same bound an idle worker's sleep has, which also covers
   * what no signal announces (delayed tasks falling due, leases expiring). On a store whose claim wait
   * ends on commits (`claimWakeOnQueued`, SQLite) no signal comes: the wait is that claim wait, which
   * first looks at what was queued since the claim. A worker that claims
   * again right after each task would only repeat the probe's answer, on a transaction of its own
   * that competes with the settlement just written (`bench/`'s Postgres `call()` figure with this
   * wait against without it, 6 alternating runs of 300 calls: p50 0.83×, p95 0.81×; re-measure with
   * `pnpm bench --backend postgres --only latency`).
   */
  #drainedMs(): number {
    const drained = this.#drained;
    if (drained === null) return 0;
    const remainingMs = drained.sinceMs + this.#host.options.pollIntervalMs - this.#host.options.clock.now();
    if (remainingMs <= 0 || drained.signals !== this.#queuedSignals) {
      this.#drained = null;
      return 0;
    }
    return remainingMs;
  }

  async #idle(signal: AbortSignal, timeoutMs = this.#host.options.pollIntervalMs): Promise<void> {
    const { store, options } = this.#host;
    const signals = this.#queuedSignals;
    this.#drained = null;
    try {
      await store.claimWake(options.queues, timeoutMs, signal);
      // Woken by a queued signal for our queues: the probe would only confirm what the signal said, so the
      // next cycle opens its transaction at once (recovery still runs first in it; an empty draw is harmless).
      this.#skipProbe = this.#queuedSignals !== signals;
    } catch (err) {
      if (signal.aborted) return;
      if (isFatalError(err)) {
        this.#stopOnFatal(err);
        return;
      }
      this.#host.reporter.report(err, { phase: "claim" });
      await options.clock.sleep(options.pollIntervalMs, { signal, unref: true });
    }
  }

  /**
   * §8.3 steps 2–3: one claim cycle with a draw per source. When every draw came back full there is
   * probably more to take — and when a claim took rows and its reprobe found more left — so the next
   * cycle skips the probe and goes straight to its transaction (recovery first, as always; an empty
   * draw then costs one short transaction, and the worker idles after it).
   */
  async #claim(signal: AbortSignal): Promise<{ rows: Task[]; release: () => void }> {
    const { options, admission } = this.#host;
    const registrations = this.#host.registry.registrations();
    const batches = new Map(registrations.map((r) => [r.name, r.batch ?? 1]));
    const sources = rotate(buildSources(registrations), this.#polls++);
    // The most calls this claim can bring: a draw per source, each capped by claimBatch (or all the room).
    const cap = options.claimBatch === null ? Number.POSITIVE_INFINITY : options.claimBatch * sources.length;
    // Room held for this claim until its rows are dispatched, so a claim overlapping it plans only the rest
    // (claims overlap only with prefetch; without it nothing needs holding).
    const holds = options.prefetch > 0;
    let held = holds ? admission.reserve(Math.min(admission.free(), cap)) : 0;
    let plan: ReturnType<typeof planDraws> = () => null;
    let requested = 0;
    let planned = 0;
    const draws: typeof plan = (claimed, index) => {
      if (index === 0 && signal.aborted) {
        // stop() began while the claim waited for its connection or its probe: it draws nothing, so the
        // worker starts no handler after stop() and leases no task it would have to leave to lease expiry
        // (the protocol has no un-claim, so rows drawn now could only run or wait out their leases).
        admission.unreserve(held);
        held = 0;
        plan = () => null;
        return null;
      }
      if (index === 0) {
        // Planned from the counters as they are when the store asks (inside its transaction), not as they were
        // when the cycle began: calls that ended meanwhile leave room this claim can fill. The room it plans stays
        // held until its rows are dispatched, so nothing else can take it meanwhile. A store may replay its
        // transaction: each replay plans afresh.
        requested = 0;
        planned = 0;
        admission.unreserve(held);
        const snapshot = admission.snapshot((name) => batches.get(name) ?? 1);
        held = holds ? admission.reserve(Math.min(snapshot.free, cap)) : 0;
        plan = planDraws(sources, snapshot);
      }
      const draw = plan(claimed, index);
      if (draw === null) {
        // Planning is over: hand back the room this claim will not use.
        if (holds) {
          admission.unreserve(held - planned);
          held = planned;
        }
      } else {
        requested += draw.limit;
        planned += Math.ceil(draw.limit / (batches.get(draw.names?.[0] ?? "") ?? 1));
      }
      return draw;
    };
    let rows: Task[];
    try {
      rows = await this.#claimWith(registrations, draws, () => requested);
    } catch (err) {
      admission.unreserve(held);
      throw err;
    }
    // Handed back only once the rows are dispatched (they then count as buffered or running).
    return { rows, release: () => admission.unreserve(held) };
  }

  async #claimWith(registrations: readonly { name: string }[], draws: NonNullable<ClaimInput["draws"]>, requested: () => number): Promise<Task[]> {
    const { store, options, workerId } = this.#host;
    const skipProbe = this.#skipProbe || this.#lastFull;
    this.#skipProbe = false;
    const flowControl = this.#host.registry.flowControl();
    const begun = ++this.#claimsBegun;
    const sinceMs = options.clock.now();
    const signals = this.#queuedSignals;
    let leftNothing = false;
    let leftSome = false;
    // Only where a wake-up would announce new work — a push signal, or a claim wait that ends on a commit queueing a task
    // (SQLite's `claimWakeOnQueued`, whose wait after this claim also sees what was queued meanwhile): with plain sleeps an
    // empty probe says nothing about the next second. And not while draws keep coming back full: a backlog is being drained, the answer would be "more" (and
    // the statement a cost per claim: 6% of a Postgres drain at concurrency 1), and the claim that ends the streak
    // finds out itself. `pushWakeups` is read live: a store whose LISTEN turned out deaf (or died) stops declaring it,
    // and a worker that kept waiting for signals would then wait out a poll interval after every task.
    const wakes = (this.#hearsSignals && store.capabilities.pushWakeups) || store.capabilities.claimWakeOnQueued === true;
    const reprobe =
      wakes && store.capabilities.claimReprobe === true && !this.#lastFull
        ? (claimable: boolean): void => {
            if (begun < this.#reprobeTaken) return;
            this.#reprobeTaken = begun;
            leftNothing = !claimable;
            leftSome = claimable;
            this.#drained = claimable ? null : { sinceMs, signals };
          }
        : null;
    this.#claiming += 1;
    let rows: Task[];
    try {
      rows = await store.claim({
        queues: options.queues,
        workerId,
        leaseMs: options.leaseMs,
        names: registrations.map((r) => r.name),
        draws,
        ...(skipProbe ? { probe: false } : {}),
        ...(flowControl === null ? {} : { flowControl }),
        ...(reprobe === null ? {} : { reprobe }),
      });
    } finally {
      this.#claiming -= 1;
    }
    this.#lastFull = !leftNothing && rows.length > 0 && rows.length >= requested();
    this.#cutShort = leftSome && rows.length < requested();
    // The probe would only repeat what this claim's reprobe just answered: something is left (a claim
    // cut short by a limit — a group's, a name's — rather than by an empty queue). An empty claim still idles.
    this.#skipProbe = this.#lastFull || (leftSome && rows.length > 0);
    return rows;
  }
}
