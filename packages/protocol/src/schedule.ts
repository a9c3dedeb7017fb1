/**
 * Schedule slots — an extension of protocol v1 (`worker.schedule`).
 *
 * Terminology:
 * - **schedule name**: what identifies a schedule across processes (the task
 *   name unless `opts.name` is given). Every process declaring the same
 *   schedule name must declare the same spec.
 * - **slot**: one instant (epoch ms) the schedule's spec produces. Its task
 *   has `run_at_ms` = the slot and the key {@link scheduleSlotKey}
 *   (`cairnq:schedule:<schedule name>:<slot ms>`), so it is an ordinary keyed
 *   task: visible by key, cancellable, retried and purged like any other.
 * - **last slot**: the latest slot submitted for a schedule, kept in an
 *   extension table beside the v1 tables. A slot at or before it is never
 *   submitted again ({@link slotsToSubmit}) — even after its task was purged
 *   and its key freed — which is what makes backfill "never more than once".
 *
 * A store submits a batch of slots in one write transaction that serialises
 * per schedule (its key lock on {@link scheduleLockKey}): read the last slot,
 * for each later slot take the slot key's key lock (the lock every v1 keyed
 * submit takes, §5.0) and insert the task unless the key already points at a
 * live row, then advance the last slot.
 */
import { InvalidArgument } from "./errors.js";
import { requireKey, TEXT_LIMITS, utf8Length } from "./inputs.js";
import type { InsertRule } from "./rules.js";
import { SUBMIT } from "./rules.js";
import { x } from "./expr.js";
import type { Task } from "./task.js";

/** Prefix of every slot task's key. */
export const SCHEDULE_KEY_PREFIX = "cairnq:schedule:";

/** The key of the task of `scheduleName`'s slot at `slotMs`: `cairnq:schedule:<schedule name>:<slot ms>`. */
export function scheduleSlotKey(scheduleName: string, slotMs: number): string {
  return `${SCHEDULE_KEY_PREFIX}${scheduleName}:${slotMs}`;
}

/** The latest instant a `Date` holds: no slot is later, so its key is the longest a schedule's slots can have. */
const LAST_SLOT_MS = 8_640_000_000_000_000;

/**
 * Refuses a schedule name whose slot keys ({@link scheduleSlotKey}) could not be task keys, checking the
 * longest of them: over `TEXT_LIMITS.key` bytes in UTF-8, or holding a character no backend stores.
 * Accepted, every slot of the schedule would fail at run time.
 *
 * @param whose - What the name is, for the message (`"worker.schedule: the schedule's name option"`).
 * @throws InvalidArgument naming `name`, with the longest name that fits.
 */
export function requireScheduleName(name: string, whose: string): void {
  const longest = scheduleSlotKey(name, LAST_SLOT_MS);
  const bytes = utf8Length(longest);
  if (bytes > TEXT_LIMITS.key) {
    const room = TEXT_LIMITS.key - (bytes - utf8Length(name));
    throw new InvalidArgument(
      "name",
      `${whose} is too long: its slot keys (${SCHEDULE_KEY_PREFIX}<name>:<slot ms>) would be up to ${bytes} bytes in UTF-8, ` +
        `over the task key limit of ${TEXT_LIMITS.key} (TEXT_LIMITS.key), so every slot would fail; give a name option of at most ${room} bytes`,
    );
  }
  // Characters no backend stores (U+0000, a lone surrogate): refused with the name's own words.
  requireKey(longest, "name");
}

/** The key a store locks to serialise slot submissions of one schedule. */
export function scheduleLockKey(scheduleName: string): string {
  return `${SCHEDULE_KEY_PREFIX}${scheduleName}`;
}

/**
 * The slots of a batch that are still to be submitted: those after the
 * schedule's last submitted slot (all when there is none), ascending, without
 * duplicates.
 */
export function slotsToSubmit(slotsMs: readonly number[], lastSlotMs: number | null): number[] {
  const out = [...new Set(slotsMs)].sort((a, b) => a - b);
  return lastSlotMs === null ? out : out.filter((slot) => slot > lastSlotMs);
}

/** The absolute due time of a slot task. */
export const RUN_AT_MS = x.param("runAtMs", "int");

/**
 * T1 for a slot: the ordinary insert (§5.1) with `run_at_ms` = the slot time
 * (an absolute instant by nature, the one place the SDK sends one), every
 * other column as {@link SUBMIT} sets it.
 */
export const SCHEDULED_SUBMIT: InsertRule = {
  op: "submit",
  clock: SUBMIT.clock,
  values: { ...SUBMIT.values, run_at_ms: RUN_AT_MS },
};

/** What a slot task is submitted with (the schedule's options). */
export interface ScheduleTaskInput {
  name: string;
  /** JSON payload. @default {} */
  payload?: unknown;
  /** @default "default" */
  queue?: string;
  /** @default 0 */
  priority?: number;
  /** @default 3 */
  maxAttempts?: number;
  metadata?: Record<string, unknown> | null;
  /** The group of every slot task (see `groups.ts`; stores with `capabilities.groups`). @default null */
  group?: string | null;
}

/** Input of `ScheduleTaskStore.submitScheduleSlots`. */
export interface ScheduleSlotsInput {
  /** The schedule name (part of every slot key). */
  schedule: string;
  /** Slot instants, epoch ms (non-negative integers); any order. */
  slotsMs: readonly number[];
  task: ScheduleTaskInput;
}

/** What a slot batch did. */
export interface ScheduleSlotsResult {
  /** The tasks inserted, in slot order. */
  readonly submitted: readonly Task[];
  /** The schedule's last submitted slot after the batch (`null` if it has none). */
  readonly lastSlotMs: number | null;
}

/** Validates a slot batch; returns the slots ascending and de-duplicated. */
export function normalizeScheduleSlots(input: ScheduleSlotsInput): { schedule: string; slotsMs: number[]; task: ScheduleTaskInput } {
  if (typeof input !== "object" || input === null) throw new InvalidArgument("input", "submitScheduleSlots needs an object { schedule, slotsMs, task }");
  if (typeof input.schedule !== "string" || input.schedule.length === 0) throw new InvalidArgument("schedule", "schedule must be a non-empty string (the schedule name)");
  if (!Array.isArray(input.slotsMs)) throw new InvalidArgument("slotsMs", "slotsMs must be an array of epoch-millisecond integers");
  for (const slot of input.slotsMs as unknown[]) {
    if (typeof slot !== "number" || !Number.isSafeInteger(slot) || slot < 0) throw new InvalidArgument("slotsMs", `every slot must be a non-negative integer of epoch ms, got ${String(slot)}`);
  }
  if (typeof input.task !== "object" || input.task === null) throw new InvalidArgument("task", "task must be an object { name, payload?, queue?, priority?, maxAttempts? }");
  return { schedule: input.schedule, slotsMs: slotsToSubmit(input.slotsMs, null), task: input.task };
}
