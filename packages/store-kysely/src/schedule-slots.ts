/**
 * `submitScheduleSlots` (the schedule extension; rules in `@cairnq/protocol`
 * `schedule.ts`): the slots of one schedule, each submitted at most once, in
 * one write transaction.
 *
 * 1. Key lock on `scheduleLockKey(schedule)`: slot batches of one schedule
 *    serialise (SQLite: the write transaction already does).
 * 2. Read the schedule's last submitted slot from `cairnq_ext_schedules`.
 * 3. For every slot after it, ascending: the slot key's key lock (the one a
 *    v1 keyed submit takes, §5.0), then insert the task unless the key points
 *    at an existing row (someone submitted that key by hand: it is the slot's
 *    task), and upsert the key row.
 * 4. Advance the last slot to the batch's latest.
 *
 * Ids and encodings are made before the transaction, which may run twice.
 */
import type { ScheduleSlotsInput, ScheduleSlotsResult, Task } from "@cairnq/protocol";
import { scheduleSlotKey } from "@cairnq/protocol";
import { newTaskId, normalizeScheduleSlots, normalizeSubmit, scheduleLockKey, SCHEDULED_SUBMIT, slotsToSubmit, x } from "@cairnq/protocol/adapter";
import type { StatementTemplate } from "./compiler.js";
import type { StoreExtensions } from "./extension-tables.js";
import { GROUP_TABLES, SCHEDULES_TABLE } from "./extension-tables.js";
import { recordTaskGroup } from "./group-submit.js";
import { decodeTask } from "./rows.js";
import { GET_BY_KEY_TEMPLATE, insertTemplate, UPSERT_KEY_TEMPLATE } from "./statements.js";

const SCHEDULE = x.param("schedule", "text");
const LAST_SLOT = x.param("lastSlotMs", "int");

const LAST_SLOT_TEMPLATE: StatementTemplate = {
  params: [SCHEDULE],
  clock: null,
  build: (c) => `SELECT last_slot_ms FROM ${SCHEDULES_TABLE} WHERE name = ${c.slot(SCHEDULE)}`,
};

const ADVANCE_TEMPLATE: StatementTemplate = {
  params: [SCHEDULE, LAST_SLOT],
  clock: "transaction",
  build: (c) =>
    `INSERT INTO ${SCHEDULES_TABLE} (name, last_slot_ms, created_at_ms, updated_at_ms) VALUES (${c.slot(SCHEDULE)}, ${c.slot(LAST_SLOT)}, ${c.now()}, ${c.now()}) ` +
    `ON CONFLICT (name) DO UPDATE SET last_slot_ms = CASE WHEN excluded.last_slot_ms > ${SCHEDULES_TABLE}.last_slot_ms ` +
    `THEN excluded.last_slot_ms ELSE ${SCHEDULES_TABLE}.last_slot_ms END, updated_at_ms = excluded.updated_at_ms`,
};

const INSERT_TEMPLATE = insertTemplate(SCHEDULED_SUBMIT);

/** See the module comment. */
export async function submitScheduleSlots(ext: StoreExtensions, input: ScheduleSlotsInput): Promise<ScheduleSlotsResult> {
  const batch = normalizeScheduleSlots(input);
  const prepared = batch.slotsMs.map((slotMs) => {
    const key = scheduleSlotKey(batch.schedule, slotMs);
    const submit = normalizeSubmit({ ...batch.task, key, conflict: "reject" }, newTaskId());
    return { slotMs, key, group: submit.group, params: { ...submit.params, runAtMs: slotMs } };
  });
  await ext.ensure(SCHEDULES_TABLE);
  if (prepared.some((slot) => slot.group !== null)) await ext.ensure(GROUP_TABLES);
  const { dialect } = ext;
  return dialect.executor.writeTransaction(ext.db, async (tx) => {
    await dialect.keyLock.acquire(tx, scheduleLockKey(batch.schedule));
    const row = (await ext.exec(tx, LAST_SLOT_TEMPLATE, { schedule: batch.schedule })).rows[0];
    const last = row === undefined ? null : Number(row.last_slot_ms);
    const todo = new Set(slotsToSubmit(batch.slotsMs, last));
    const submitted: Task[] = [];
    for (const slot of prepared) {
      if (!todo.has(slot.slotMs)) continue;
      await dialect.keyLock.acquire(tx, slot.key);
      if ((await ext.exec(tx, GET_BY_KEY_TEMPLATE, { key: slot.key })).rows.length > 0) continue;
      const inserted = (await ext.exec(tx, INSERT_TEMPLATE, slot.params)).rows[0];
      if (inserted === undefined) throw new Error("the slot insert returned no row although RETURNING guarantees one; is the driver dropping RETURNING rows?");
      const task = decodeTask(inserted);
      await ext.exec(tx, UPSERT_KEY_TEMPLATE, { key: slot.key, taskId: task.id });
      if (slot.group !== null) await recordTaskGroup(ext, tx, task, slot.group);
      submitted.push(task);
    }
    const latest = batch.slotsMs[batch.slotsMs.length - 1];
    if (todo.size === 0 || latest === undefined) return { submitted, lastSlotMs: last };
    await ext.exec(tx, ADVANCE_TEMPLATE, { schedule: batch.schedule, lastSlotMs: latest });
    // `todo` holds only slots after `last`, so the batch's latest is the new last slot.
    return { submitted, lastSlotMs: latest };
  });
}
