/**
 * Schedule slots (an extension of v1, `ScheduleTaskStore.submitScheduleSlots`;
 * rules in `@cairnq/protocol` `schedule.ts`): one keyed task per slot with
 * `run_at_ms` = the slot, never twice — concurrent batches, a purged slot and
 * a key submitted by hand included. Run only for stores declaring `schedules`.
 */
import { InvalidArgument, scheduleSlotKey } from "@cairnq/protocol";
import type { ConformanceCase } from "../case.js";

const needsSchedules = (c: { schedules?: boolean }): string | null => (c.schedules === true ? null : "schedules (submitScheduleSlots)");

const BASE = 1_700_000_000_000;

export const scheduleSlotCases: readonly ConformanceCase[] = [
  {
    id: "schedule-slots-once",
    title: "each slot becomes one queued task keyed by its slot with run_at_ms = the slot; a slot at or before the last is never submitted again",
    spec: "store.ts ScheduleTaskStore, schedule.ts",
    skipUnless: needsSchedules,
    async run(t) {
      const task = { name: "tick", payload: { p: 1 }, queue: "cron", priority: 2, maxAttempts: 1 };
      const first = await t.store.submitScheduleSlots({ schedule: "every", slotsMs: [BASE + 2000, BASE + 1000], task });
      t.expect(first.submitted.map((row) => row.run_at_ms)).toEqual([BASE + 1000, BASE + 2000]);
      t.expect(first.lastSlotMs).toBe(BASE + 2000);
      t.fields(first.submitted[0] ?? null, { name: "tick", payload: { p: 1 }, queue: "cron", priority: 2, max_attempts: 1, status: "queued" });
      const byKey = await t.store.getByKey(scheduleSlotKey("every", BASE + 1000));
      t.expect(byKey?.id).toBe(first.submitted[0]?.id);
      const again = await t.store.submitScheduleSlots({ schedule: "every", slotsMs: [BASE + 1000, BASE + 2000, BASE + 3000], task });
      t.expect(again.submitted.map((row) => row.run_at_ms)).toEqual([BASE + 3000]);
      t.expect(again.lastSlotMs).toBe(BASE + 3000);
      // An earlier slot the schedule has passed is not filled in later.
      t.expect((await t.store.submitScheduleSlots({ schedule: "every", slotsMs: [BASE + 500], task })).submitted).toEqual([]);
      t.expect((await t.store.submitScheduleSlots({ schedule: "every", slotsMs: [], task })).lastSlotMs).toBe(BASE + 3000);
      // Another schedule name is independent.
      t.expect((await t.store.submitScheduleSlots({ schedule: "other", slotsMs: [BASE + 1000], task })).submitted).toHaveLength(1);
      t.expect((await t.all()).filter((row) => row.name === "tick")).toHaveLength(4);
    },
  },
  {
    id: "schedule-slots-concurrent",
    title: "concurrent overlapping batches of one schedule submit every slot exactly once",
    spec: "store.ts ScheduleTaskStore, schedule.ts",
    skipUnless: needsSchedules,
    async run(t) {
      const task = { name: "tick" };
      const batches = Array.from({ length: 6 }, (_, i) => Array.from({ length: 4 }, (_, j) => BASE + (i + j) * 100));
      const results = await Promise.all(batches.map((slotsMs) => t.store.submitScheduleSlots({ schedule: "race", slotsMs, task })));
      const slots = results.flatMap((r) => r.submitted.map((row) => row.run_at_ms)).sort((a, b) => a - b);
      t.expect(new Set(slots).size).toBe(slots.length);
      const rows = (await t.all()).filter((row) => row.name === "tick");
      t.expect(rows).toHaveLength(slots.length);
      // Every slot after the first batch's first is there (the batches overlap, so the latest always covers the rest).
      t.expect(slots[slots.length - 1]).toBe(BASE + 800);
    },
  },
  {
    id: "schedule-slot-purged-or-cancelled",
    title: "a slot whose task was cancelled, or finished and purged, is not submitted again; a hand-submitted slot key is the slot's task",
    spec: "store.ts ScheduleTaskStore, schedule.ts, §5.7, §5.9",
    skipUnless: needsSchedules,
    async run(t) {
      const task = { name: "tick" };
      const [slotTask] = (await t.store.submitScheduleSlots({ schedule: "p", slotsMs: [BASE], task })).submitted;
      if (slotTask === undefined) throw new Error("expected the slot task");
      t.expect((await t.store.cancelByKey(scheduleSlotKey("p", BASE)))?.status).toBe("canceled");
      await t.sleep(5);
      await t.store.purge({ olderThanMs: 0 });
      t.expect(await t.store.get(slotTask.id)).toBeNull();
      t.expect((await t.store.submitScheduleSlots({ schedule: "p", slotsMs: [BASE], task })).submitted).toEqual([]);
      const manual = await t.submit("tick", { key: scheduleSlotKey("p", BASE + 1000) });
      const next = await t.store.submitScheduleSlots({ schedule: "p", slotsMs: [BASE + 1000, BASE + 2000], task });
      t.expect(next.submitted.map((row) => row.run_at_ms)).toEqual([BASE + 2000]);
      t.expect((await t.store.getByKey(scheduleSlotKey("p", BASE + 1000)))?.id).toBe(manual.id);
      await t.rejects(t.store.submitScheduleSlots({ schedule: "", slotsMs: [BASE], task }), InvalidArgument, "empty schedule name");
      await t.rejects(t.store.submitScheduleSlots({ schedule: "p", slotsMs: [1.5], task }), InvalidArgument, "fractional slot");
    },
  },
];
