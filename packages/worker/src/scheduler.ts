/**
 * Schedules (`worker.schedule`): cron strings and fixed intervals turned into
 * slot tasks, exactly one per slot however many workers declare the schedule.
 *
 * Terminology (see `@cairnq/protocol` `schedule.ts`):
 * - **slot**: an instant the spec produces; its task has `run_at_ms` = the
 *   slot and key `cairnq:schedule:<schedule name>:<slot ms>`.
 * - **schedule name**: `opts.name`, else the task name.
 * - **lead**: slots are submitted {@link SCHEDULE_LEAD_MS} before they are due
 *   (as delayed tasks), so a slot is in the database before its time even if
 *   the submitting worker is briefly slow, and another worker starting or
 *   restarting meanwhile sees the schedule as live.
 * - **cursor**: per worker and schedule, the latest slot this worker has
 *   offered; it starts at `start − max(backfillMs, SCHEDULE_LEAD_MS)` (or
 *   the epoch, if that is earlier: no slot is before it) and jumps to the schedule's last submitted slot whenever the store reports a
 *   later one.
 * - **start tolerance**: a worker that starts offers the slots of the last
 *   {@link SCHEDULE_LEAD_MS} too, even without `backfillMs`. Its first batch
 *   advances the schedule's last slot past everything it submits, so a slot
 *   it left out could never be submitted by anyone afterwards; a joining
 *   worker whose clock runs ahead of a running peer's would otherwise skip
 *   the slots between the peer's horizon and its own "now". With the
 *   tolerance, clocks may differ by up to the lead (and a running peer may
 *   lag by up to the lead besides) without a gap; the price is that a slot
 *   due less than the lead before a start with no worker running is still
 *   submitted, that much late.
 *
 * Exactly-once is the store's: `submitScheduleSlots` submits only slots after
 * the schedule's last submitted slot, in a transaction serialised per
 * schedule, so workers that start late, restart, or whose clocks differ
 * never duplicate a slot, and a slot whose task was purged is never
 * resubmitted. Every live worker offers every slot from its start on, so a
 * slot has no task only when no worker was running within the lead of its
 * time (and it is older than `max(backfillMs, lead)` when the next one starts).
 *
 * Cron strings are parsed and iterated by `croner` (5 fields, or 6 with
 * seconds first), read in `opts.timezone` (IANA name, default UTC). Daylight
 * saving time is handled as Vixie cron users expect: a wall-clock time that
 * does not exist (the skipped hour of spring-forward) fires once, at the
 * first instant after the gap (`30 2 * * *` in America/New_York runs at 03:00
 * EDT on that day); a fixed time in the repeated hour of fall-back fires
 * once, on its first occurrence (`30 1 * * *` runs at 01:30 EDT, not again at
 * 01:30 EST); expressions whose hour field is a wildcard or step follow real
 * time, so `*\/30 * * * *` fires at both 01:00 and 01:30 of each pass. Each
 * slot is a distinct instant, so its key is distinct too.
 */
import type { ScheduleTaskInput, ScheduleTaskStore, TaskDef, TaskStore } from "@cairnq/protocol";
import { InvalidArgument, MAX_DELAY_MS, scheduleSlotKey, UnsupportedBackend } from "@cairnq/protocol";
import { normalizeSubmit, requireScheduleName } from "@cairnq/protocol/adapter";
import { submitInputOf } from "@cairnq/protocol/sdk";
import type { RuntimeClock } from "@cairnq/runtime";
import { checkOptions, requireDurationMs, systemClock } from "@cairnq/runtime";
import { Cron } from "croner";

/** How a schedule's slots are spaced: a cron string, or a fixed interval aligned to the Unix epoch. */
export type ScheduleSpec = string | { readonly everyMs: number };

/** Options of `worker.schedule(nameOrTaskDef, spec, opts)`. */
export interface ScheduleOptions<Payload = unknown> {
  /**
   * The schedule name, part of every slot key. Every process declaring this
   * schedule must use the same name and spec; give one when a task has two
   * schedules.
   * @default the task name
   */
  name?: string;
  /** IANA time zone the cron fields are read in (cron specs only). @default "UTC" */
  timezone?: string;
  /** The payload of every slot task (JSON). @default {} */
  payload?: Payload;
  /** The queue of every slot task; overrides a TaskDef's `queue`, as for `submit(def)`. @default the TaskDef's queue, else "default" */
  queue?: string;
  /** Overrides a TaskDef's `priority`, as for `submit(def)`. @default the TaskDef's priority, else 0 */
  priority?: number;
  /** Overrides a TaskDef's `maxAttempts`, as for `submit(def)`. @default the TaskDef's maxAttempts, else 3 */
  maxAttempts?: number;
  /** The group of every slot task (the submit option `group`); needs a store with `capabilities.groups`. @default null */
  group?: string;
  /**
   * On start, slots missed within this window (integer ms) are still
   * submitted — each at most once, across restarts and workers. Below
   * `SCHEDULE_LEAD_MS` (1 s) it makes no difference: a start always submits
   * the slots due within that much before it (what absorbs small clock
   * differences between workers). At most `MAX_DELAY_MS` (100 years); a
   * window reaching back before the Unix epoch starts at the epoch, so
   * `MAX_DELAY_MS` means "every slot since 1970" — for a short interval,
   * that many tasks.
   * @default 0
   */
  backfillMs?: number;
}

/** Every key of {@link ScheduleOptions}. */
export const SCHEDULE_OPTION_KEYS = ["name", "timezone", "payload", "queue", "priority", "maxAttempts", "group", "backfillMs"] as const;

/**
 * How long before its time a slot is submitted, and how far back a starting
 * worker looks. Tolerates that much delay in a submitting worker, and that
 * much clock difference between workers, without a gap.
 */
export const SCHEDULE_LEAD_MS = 1000;
/** After a failed submission, the next try waits this long (as after a claim error, §8.1). */
export const SCHEDULE_RETRY_MS = 250;
/** Slots per `submitScheduleSlots` call (a long backfill goes in several). */
export const SCHEDULE_BATCH = 500;
/** The longest interval of an `{ everyMs }` spec: one year. */
export const MAX_EVERY_MS = 366 * 24 * 3600 * 1000;

/** The slot instants of a spec. */
export interface SlotSeries {
  /** The first slot strictly after `afterMs`, or `null` when there is none. */
  next(afterMs: number): number | null;
}

/** `{ everyMs }`: every multiple of `everyMs` since the epoch, so every process agrees on the slots. */
export class IntervalSeries implements SlotSeries {
  constructor(readonly everyMs: number) {}

  next(afterMs: number): number {
    return (Math.floor(afterMs / this.everyMs) + 1) * this.everyMs;
  }
}

/** A cron string through `croner`, in a time zone. */
export class CronSeries implements SlotSeries {
  readonly #cron: Cron;

  constructor(pattern: string, timezone: string) {
    this.#cron = new Cron(pattern, { timezone, paused: true });
  }

  next(afterMs: number): number | null {
    const date = this.#cron.nextRun(new Date(afterMs));
    return date === null ? null : date.getTime();
  }
}

/** A validated schedule. */
export interface ScheduleEntry {
  readonly name: string;
  readonly series: SlotSeries;
  readonly task: ScheduleTaskInput;
  readonly backfillMs: number;
}

/**
 * Validates `worker.schedule(...)` arguments strictly (unknown option →
 * `InvalidArgument` listing the valid ones; bad cron, time zone, interval,
 * payload → `InvalidArgument`/`SerializationError`), without touching the store.
 */
export function scheduleEntry(nameOrTaskDef: string | TaskDef, spec: unknown, options?: unknown): ScheduleEntry {
  const taskName = typeof nameOrTaskDef === "string" ? nameOrTaskDef : (nameOrTaskDef as { name?: unknown } | null)?.name;
  if (typeof taskName !== "string" || taskName.length === 0) {
    throw new InvalidArgument("name", "worker.schedule(nameOrTaskDef, spec, opts) needs a task name or a TaskDef as its first argument");
  }
  const opts = checkOptions(options, "worker.schedule(name, spec, options)", SCHEDULE_OPTION_KEYS) as ScheduleOptions;
  const name = opts.name === undefined ? taskName : opts.name;
  if (typeof name !== "string" || name.length === 0) throw new InvalidArgument("name", "schedule option name must be a non-empty string");
  const backfillMs = opts.backfillMs === undefined ? 0 : requireDurationMs(opts.backfillMs, "backfillMs", { max: MAX_DELAY_MS });
  // A TaskDef's queue, maxAttempts and priority are defaults the options override, exactly as for submit(def).
  const def: TaskDef = typeof nameOrTaskDef === "string" ? { name: taskName } : nameOrTaskDef;
  const resolved = submitInputOf(def, opts.payload, { queue: opts.queue, priority: opts.priority, maxAttempts: opts.maxAttempts });
  const task: ScheduleTaskInput = { name: taskName };
  if (opts.payload !== undefined) task.payload = opts.payload;
  if (resolved.queue !== undefined) task.queue = resolved.queue;
  if (resolved.priority !== undefined) task.priority = resolved.priority;
  if (resolved.maxAttempts !== undefined) task.maxAttempts = resolved.maxAttempts;
  if (opts.group !== undefined) task.group = opts.group;
  // The same validation and encoding a submit does, now rather than at the first slot.
  normalizeSubmit({ ...task, key: scheduleSlotKey("check", 0) }, "task_00000000000000000000000000");
  requireScheduleName(
    name,
    opts.name !== undefined ? "worker.schedule: the schedule's name option" : "worker.schedule: the task name (a schedule is named after its task when no name option is given)",
  );
  return { name, series: seriesOf(spec, opts.timezone), task, backfillMs };
}

function seriesOf(spec: unknown, timezone: unknown): SlotSeries {
  if (typeof spec === "string") {
    const fields = spec.trim().split(/\s+/);
    if (fields.length !== 5 && fields.length !== 6) {
      throw new InvalidArgument("spec", `a cron spec has 5 fields (minute hour day-of-month month day-of-week) or 6 (seconds first), got ${fields.length} in ${JSON.stringify(spec)}`);
    }
    const zone = timezone === undefined ? "UTC" : timezone;
    if (typeof zone !== "string" || zone.length === 0) throw new InvalidArgument("timezone", "timezone must be an IANA time zone name such as \"Europe/Paris\"");
    let series: CronSeries;
    let first: number | null;
    try {
      series = new CronSeries(fields.join(" "), zone);
      first = series.next(Date.now());
    } catch (err) {
      const detail = err instanceof Error ? err.message : String(err);
      throw new InvalidArgument("spec", `cron spec ${JSON.stringify(spec)} in time zone ${JSON.stringify(zone)} is not valid: ${detail}`);
    }
    if (first === null) throw new InvalidArgument("spec", `cron spec ${JSON.stringify(spec)} never fires from now on, so the schedule would submit nothing`);
    return series;
  }
  if (typeof spec === "object" && spec !== null && !Array.isArray(spec)) {
    const bag = checkOptions(spec, "an interval spec { everyMs }", ["everyMs"]);
    if (bag.everyMs === undefined) throw new InvalidArgument("spec", "an interval spec needs everyMs, e.g. { everyMs: 60000 }");
    if (timezone !== undefined) throw new InvalidArgument("timezone", "timezone applies to cron specs only; an { everyMs } spec is aligned to the Unix epoch in UTC");
    return new IntervalSeries(requireDurationMs(bag.everyMs, "everyMs", { min: 1, max: MAX_EVERY_MS }));
  }
  throw new InvalidArgument("spec", "a schedule spec is a cron string (\"*/5 * * * *\") or { everyMs }");
}

/** Where the scheduler reports a submission it could not make. */
export type ScheduleErrorHandler = (err: unknown, schedule: string) => void;

/** Called for every slot task a submission created. */
export type SlotSubmittedHandler = (schedule: string, slotMs: number, taskId: string) => void;

interface Running {
  readonly entry: ScheduleEntry;
  cursor: number;
  retryAtMs: number;
}

/**
 * Runs a worker's schedules: one loop that submits each schedule's slots
 * as they enter the lead window and sleeps until the next one does.
 */
export class Scheduler {
  readonly #entries = new Map<string, ScheduleEntry>();
  readonly #running = new Map<string, Running>();
  #controller: AbortController | null = null;
  #loop: Promise<void> | null = null;
  #wake: AbortController | null = null;

  constructor(
    private readonly store: TaskStore,
    private readonly onError: ScheduleErrorHandler,
    private readonly onSubmitted: SlotSubmittedHandler = () => {},
    private readonly clock: RuntimeClock = systemClock,
  ) {}

  /** The schedules declared, by schedule name. */
  get names(): string[] {
    return [...this.#entries.keys()];
  }

  /** Declares a schedule; starts it at once if the scheduler is running. */
  add(entry: ScheduleEntry): void {
    if (this.store.capabilities.schedules !== true || typeof (this.store as Partial<ScheduleTaskStore>).submitScheduleSlots !== "function") {
      throw new UnsupportedBackend("worker.schedule", "store's", {
        message: "worker.schedule needs a store with capabilities.schedules (submitScheduleSlots); SQLiteStore, PostgresStore, MySQLStore and MemoryStore have it, this store does not",
      });
    }
    if (this.#entries.has(entry.name)) {
      throw new InvalidArgument("name", `this worker already has a schedule named '${entry.name}'; give the second one its own opts.name`);
    }
    this.#entries.set(entry.name, entry);
    if (this.#controller !== null) {
      this.#begin(entry);
      this.#wake?.abort();
    }
  }

  /**
   * Starts the loop (idempotent). Backfill windows are measured from now. It starts with no schedule
   * declared too (then it only waits, no timer): a schedule added while the worker runs joins it at once,
   * in the context the worker started the loop in.
   */
  start(): void {
    if (this.#controller !== null) return;
    this.#controller = new AbortController();
    for (const entry of this.#entries.values()) this.#begin(entry);
    this.#loop = this.#run(this.#controller.signal);
  }

  /** Stops the loop and waits for a submission in flight. */
  async stop(): Promise<void> {
    this.#controller?.abort();
    this.#wake?.abort();
    await this.#loop;
    this.#controller = null;
    this.#loop = null;
    this.#running.clear();
  }

  #begin(entry: ScheduleEntry): void {
    // The start tolerance (module comment): never look back less than the lead. A backfill reaching past the
    // epoch starts there (cursor -1, so a slot at 0 is offered): the store refuses a slot before it, and
    // every batch would fail, submitting nothing, forever.
    const from = this.clock.now() - Math.max(entry.backfillMs, SCHEDULE_LEAD_MS) - 1;
    this.#running.set(entry.name, { entry, cursor: Math.max(from, -1), retryAtMs: 0 });
  }

  async #run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      let wakeAtMs = Number.POSITIVE_INFINITY;
      for (const state of this.#running.values()) {
        if (signal.aborted) return;
        if (this.clock.now() >= state.retryAtMs) {
          try {
            await this.#flush(state, signal);
          } catch (err) {
            state.retryAtMs = this.clock.now() + SCHEDULE_RETRY_MS;
            this.#report(err, state.entry.name);
          }
        }
        const next = state.entry.series.next(state.cursor);
        if (next !== null) wakeAtMs = Math.min(wakeAtMs, Math.max(next - SCHEDULE_LEAD_MS, state.retryAtMs));
      }
      if (signal.aborted) return;
      // stop() and add() abort this to end the sleep early.
      const wake = (this.#wake = new AbortController());
      if (Number.isFinite(wakeAtMs)) await this.clock.sleep(Math.max(1, wakeAtMs - this.clock.now()), { signal: wake.signal, unref: true });
      else await new Promise<void>((resolve) => wake.signal.addEventListener("abort", () => resolve(), { once: true }));
    }
  }

  /** Offers every slot up to now + lead, in batches, advancing the cursor. */
  async #flush(state: Running, signal: AbortSignal): Promise<void> {
    const store = this.store as ScheduleTaskStore;
    for (;;) {
      const horizon = this.clock.now() + SCHEDULE_LEAD_MS;
      const slotsMs: number[] = [];
      for (let slot = state.entry.series.next(state.cursor); slot !== null && slot <= horizon && slotsMs.length < SCHEDULE_BATCH; slot = state.entry.series.next(slot)) {
        slotsMs.push(slot);
      }
      if (slotsMs.length === 0 || signal.aborted) return;
      const result = await store.submitScheduleSlots({ schedule: state.entry.name, slotsMs, task: state.entry.task });
      state.cursor = Math.max(slotsMs[slotsMs.length - 1] as number, result.lastSlotMs ?? 0);
      for (const task of result.submitted) this.onSubmitted(state.entry.name, task.run_at_ms, task.id);
      if (slotsMs.length < SCHEDULE_BATCH) return;
    }
  }

  #report(err: unknown, schedule: string): void {
    try {
      this.onError(err, schedule);
    } catch {
      // An onError that throws must not stop the schedules (§8.1: its exceptions are swallowed).
    }
  }
}
