/**
 * Groups (an extension of v1: `SubmitInput.group` and the group limits of
 * `ClaimInput.flowControl`; rules in `@cairnq/protocol` `groups.ts`):
 * `groupConcurrency` and `groupRateLimit` bound what claims take per name and
 * group, concurrent claims included, and claims rotate across groups. Run
 * only for stores declaring `groups`.
 */
import type { ClaimInput, FlowControl, GroupReadStore, ScheduleTaskStore, Task, TaskStepStore } from "@cairnq/protocol";
import { AlreadyExists, InvalidArgument } from "@cairnq/protocol";
import type { CaseContext, ConformanceCase } from "../case.js";
import { DUE_LATER_MS, EXPIRY_WAIT_MS, SHORT_LEASE_MS } from "../case.js";
import { CLOCK_SLACK_MS } from "../invariants.js";

export const needsGroups = (c: { groups?: boolean; flowControl?: boolean }): string | null =>
  c.groups === true && c.flowControl === true ? null : "groups (per-group limits and rotation in claim)";

function grouped(t: CaseContext, workerId: string, limits: FlowControl, extra: Partial<ClaimInput> = {}): Promise<Task[]> {
  return t.claim(workerId, { names: ["g"], limit: 10, flowControl: { g: limits }, ...extra });
}

/** The group of each claimed row, by its payload's `group` (the kit submits `{ group }` payloads). */
function groupsOf(rows: readonly Task[]): string[] {
  return rows.map((row) => (row.payload as { group: string }).group);
}

function countBy(values: readonly string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const v of values) out[v] = (out[v] ?? 0) + 1;
  return out;
}

async function submitTo(t: CaseContext, group: string | null, n: number, extra: { priority?: number } = {}): Promise<Task[]> {
  const out: Task[] = [];
  for (let i = 0; i < n; i++) out.push(await t.submit("g", { payload: { group: group ?? "-", i }, ...(group === null ? {} : { group }), ...extra }));
  return out;
}

export const groupCases: readonly ConformanceCase[] = [
  {
    id: "group-submit",
    title: "a submit with a group returns the queued task; a group is validated like a key",
    spec: "store.ts SubmitInput.group, groups.ts",
    skipUnless: needsGroups,
    async run(t) {
      const task = await t.submit("g", { group: "acme" });
      t.fields(task, { status: "queued", name: "g" });
      await t.rejects(t.store.submit({ name: "g", group: "" }), InvalidArgument, "an empty group");
      await t.rejects(t.store.submit({ name: "g", group: 7 as never }), InvalidArgument, "a group that is not a string");
      // A keyed submit with a group, and its reuse.
      const keyed = await t.submit("g", { group: "acme", key: "k1" });
      t.expect((await t.submit("g", { group: "acme", key: "k1" })).id).toBe(keyed.id);
    },
  },
  {
    id: "group-concurrency",
    title: "groupConcurrency caps running tasks per name and group; groups run side by side; a settled task frees its group's slot",
    spec: "store.ts ClaimInput.flowControl, groups.ts",
    skipUnless: needsGroups,
    async run(t) {
      await submitTo(t, "a", 4);
      await submitTo(t, "b", 4);
      await submitTo(t, "c", 1);
      const limits = { groupConcurrency: 2 };
      const first = await grouped(t, t.w1, limits);
      t.expect(countBy(groupsOf(first))).toEqual({ a: 2, b: 2, c: 1 });
      t.expect(await grouped(t, t.w2, limits)).toEqual([]);
      const a = first.find((row) => (row.payload as { group: string }).group === "a") as Task;
      await t.store.complete({ taskId: a.id, workerId: t.w1, result: null });
      const next = await grouped(t, t.w2, limits);
      t.expect(groupsOf(next)).toEqual(["a"]);
      // A retryable failure requeues the task and frees the slot; the task runs again in its group.
      const b = first.find((row) => (row.payload as { group: string }).group === "b") as Task;
      await t.store.fail({ taskId: b.id, workerId: t.w1, error: { code: "again" }, retryable: true, delayMs: 0 });
      const again = await grouped(t, t.w3, limits);
      t.expect(groupsOf(again)).toEqual(["b"]);
      t.expect((await t.all()).filter((row) => row.status === "running")).toHaveLength(5);
    },
  },
  {
    id: "group-concurrency-concurrent-claims",
    title: "concurrent claims by many workers never take more than groupConcurrency rows of a group",
    spec: "store.ts ClaimInput.flowControl, groups.ts",
    skipUnless: needsGroups,
    async run(t) {
      for (const g of ["a", "b", "c"]) await submitTo(t, g, 5);
      const workers = [t.w1, t.w2, t.w3, t.w1, t.w2, t.w3];
      const results = await Promise.all(workers.map((w) => grouped(t, w, { groupConcurrency: 2 }, { limit: 2 })));
      t.expect(countBy(groupsOf(results.flat()))).toEqual({ a: 2, b: 2, c: 2 });
    },
  },
  {
    id: "group-lease-recovery-frees-slot",
    title: "an expired lease frees its group's slot once recovery runs",
    spec: "store.ts ClaimInput.flowControl, groups.ts, §5.10",
    skipUnless: needsGroups,
    async run(t) {
      await submitTo(t, "a", 2);
      const limits = { groupConcurrency: 1 };
      t.expect(await grouped(t, t.w1, limits, { leaseMs: SHORT_LEASE_MS })).toHaveLength(1);
      t.expect(await grouped(t, t.w2, limits)).toEqual([]);
      await t.sleep(EXPIRY_WAIT_MS);
      // The recovered task and the other one compete for the one slot: exactly one is taken.
      t.expect(await grouped(t, t.w2, limits)).toHaveLength(1);
      t.expect((await t.all()).filter((row) => row.status === "running")).toHaveLength(1);
    },
  },
  {
    id: "group-running-whichever-claim",
    title: "a grouped task a claim without group limits took counts against groupConcurrency while it runs",
    spec: "store.ts ClaimInput.flowControl, groups.ts (group running)",
    skipUnless: needsGroups,
    async run(t) {
      await submitTo(t, "a", 2);
      const [plain] = await t.claim(t.w1, { names: ["g"], limit: 1 });
      t.expect(plain?.status).toBe("running");
      const limits = { groupConcurrency: 1 };
      t.expect(await grouped(t, t.w2, limits)).toEqual([]);
      await t.store.complete({ taskId: (plain as Task).id, workerId: t.w1, result: null });
      t.expect(groupsOf(await grouped(t, t.w2, limits))).toEqual(["a"]);
    },
  },
  {
    id: "group-requeue-behind-backlog",
    title: "a task a group claim took that goes back to queued (retryable fail, lease recovery, retry, park) waits in its group again: the next rotation takes it ahead of another group's backlog",
    spec: "store.ts ClaimInput.flowControl, groups.ts GROUP_REQUEUE_PATHS, rotateGroups",
    skipUnless: needsGroups,
    async run(t) {
      // a's backlog fills the head of the plain order many times over; b has one task, which keeps coming back.
      await submitTo(t, "a", 30);
      const [b] = await submitTo(t, "b", 1);
      const limits = { groupConcurrency: 1 };
      const both = async (workerId: string, extra: Partial<ClaimInput> = {}): Promise<Task[]> => {
        const rows = await grouped(t, workerId, limits, { limit: 2, ...extra });
        t.expect(countBy(groupsOf(rows))).toEqual({ a: 1, b: 1 });
        t.expect(rows.find((row) => (row.payload as { group: string }).group === "b")?.id).toBe((b as Task).id);
        return rows;
      };
      const aOf = (rows: readonly Task[]): Task => rows.find((row) => (row.payload as { group: string }).group === "a") as Task;
      // A retryable fail.
      let rows = await both(t.w1);
      await t.store.complete({ taskId: aOf(rows).id, workerId: t.w1, result: null });
      await t.store.fail({ taskId: (b as Task).id, workerId: t.w1, error: { code: "again" }, retryable: true, delayMs: 0 });
      // Lease recovery inside the next claim: both leases run out, both tasks wait in their groups again.
      await both(t.w2, { leaseMs: SHORT_LEASE_MS });
      await t.sleep(EXPIRY_WAIT_MS);
      rows = await both(t.w3);
      // A retry (T14) of the failed task.
      await t.store.complete({ taskId: aOf(rows).id, workerId: t.w3, result: null });
      await t.store.fail({ taskId: (b as Task).id, workerId: t.w3, error: { code: "final" }, retryable: false });
      t.expect((await t.store.retry((b as Task).id))?.status).toBe("queued");
      rows = await both(t.w1);
      // A park (a durable sleep that is due at once), where the store has durable steps.
      const steps = t.store.inner as Partial<TaskStepStore>;
      if (typeof steps.parkStep !== "function") return;
      await t.store.complete({ taskId: aOf(rows).id, workerId: t.w1, result: null });
      const parked = rows.find((row) => row.id === (b as Task).id) as Task;
      const out = await steps.parkStep({ taskId: parked.id, workerId: t.w1, attempt: parked.attempt, name: "nap", kind: "sleep", seq: 1, untilMs: 1 });
      t.expect(out).toEqual({ kind: "parked", status: "queued" });
      await both(t.w2);
    },
  },
  {
    id: "group-rate-limit",
    title: "groupRateLimit allows at most max claims per group in any window of perMs; groups have separate windows",
    spec: "store.ts ClaimInput.flowControl, groups.ts",
    skipUnless: needsGroups,
    async run(t) {
      await submitTo(t, "a", 5);
      await submitTo(t, "b", 5);
      // A window long enough that the completes and the claim after the first claim end inside it on a loaded machine.
      const limits = { groupRateLimit: { max: 2, perMs: DUE_LATER_MS } };
      const first = await grouped(t, t.w1, limits);
      t.expect(countBy(groupsOf(first))).toEqual({ a: 2, b: 2 });
      // Settling does not give rate back.
      for (const row of first) await t.store.complete({ taskId: row.id, workerId: t.w1, result: null });
      t.expect(await grouped(t, t.w2, limits)).toEqual([]);
      await t.sleep(DUE_LATER_MS + 50);
      t.expect(countBy(groupsOf(await grouped(t, t.w2, limits)))).toEqual({ a: 2, b: 2 });
    },
  },
  {
    id: "group-rate-full-skipped",
    title: "groups whose groupRateLimit window is full take no place in a claim's pages: a group behind more than 16 pages of them is claimed while their windows last",
    spec: "store.ts ClaimInput.flowControl, groups.ts groupAllowance, docs/protocol.md Groups step 3 (pages)",
    skipUnless: needsGroups,
    async run(t) {
      // 260 groups (more than 16 pages of 16, a claim of one's smallest page) each spend their window of 2 claims, an hour
      // long, and keep a queued task; then "z" is served once, so it stands behind all of them with room for one more.
      const limits = { groupRateLimit: { max: 2, perMs: 3_600_000 } };
      const spent = Array.from({ length: 260 }, (_, i) => `s${String(i).padStart(3, "0")}`);
      for (const group of spent) await submitTo(t, group, 3);
      let taken = 0;
      for (let i = 0; i < 20 && taken < 2 * spent.length; i++) taken += (await grouped(t, t.w1, limits, { limit: 64 })).length;
      t.expect(taken).toBe(2 * spent.length);
      t.expect(await grouped(t, t.w1, limits, { limit: 64 })).toEqual([]);
      const [first] = await submitTo(t, "z", 1);
      t.expect((await grouped(t, t.w2, limits, { limit: 1 })).map((row) => row.id)).toEqual([(first as Task).id]);
      const [second] = await submitTo(t, "z", 1);
      t.expect((await grouped(t, t.w2, limits, { limit: 1 })).map((row) => row.id)).toEqual([(second as Task).id]);
      // z's window is full now too: nothing is left to take.
      await submitTo(t, "z", 1);
      t.expect(await grouped(t, t.w3, limits, { limit: 8 })).toEqual([]);
    },
  },
  {
    id: "group-fairness",
    title: "claims rotate across groups with due work, least recently served first: a later group's tasks do not wait for an earlier group's backlog",
    spec: "store.ts ClaimInput.flowControl, groups.ts rotateGroups",
    skipUnless: needsGroups,
    async run(t) {
      await submitTo(t, "a", 20);
      await submitTo(t, "b", 3);
      const limits = { groupConcurrency: 100 };
      const order: string[] = [];
      for (let i = 0; i < 8; i++) {
        const row = await t.claimOne(t.w1, { names: ["g"], limit: 1, flowControl: { g: limits } });
        order.push((row.payload as { group: string }).group);
        await t.store.complete({ taskId: row.id, workerId: t.w1, result: null });
      }
      // Never served: a before b by name; then the least recently served group each time.
      t.expect(order).toEqual(["a", "b", "a", "b", "a", "b", "a", "a"]);
      // One claim of several rows takes one task per group per round.
      await submitTo(t, "c", 3);
      await submitTo(t, "d", 3);
      const many = await grouped(t, t.w2, limits, { limit: 5 });
      // c and d were never served (c first by name), a was served last: c, d, a, then c, d.
      t.expect(groupsOf(many)).toEqual(["c", "d", "a", "c", "d"]);
    },
  },
  {
    id: "group-delayed-groups-ahead",
    title: "groups holding only tasks not yet due never keep a claim from a later group's due task, however many come first in served order",
    spec: "store.ts ClaimInput.flowControl, groups.ts rotateGroups (groups that have due work)",
    skipUnless: needsGroups,
    async run(t) {
      // 100 groups never served, each with one task due in an hour, come before "z" in served order (by key).
      for (let i = 0; i < 100; i++) {
        const group = `d${String(i).padStart(3, "0")}`;
        await t.submit("g", { group, payload: { group }, runAtDelayMs: 3_600_000 });
      }
      const [due] = await submitTo(t, "z", 1);
      const limits = { groupConcurrency: 1 };
      t.expect((await grouped(t, t.w1, limits, { limit: 1 })).map((row) => row.id)).toEqual([(due as Task).id]);
      t.expect(await grouped(t, t.w1, limits)).toEqual([]);
      // The delayed groups are still there: a task submitted to one of them now is claimed.
      const [late] = await submitTo(t, "d050", 1);
      t.expect((await grouped(t, t.w2, limits)).map((row) => row.id)).toEqual([(late as Task).id]);
    },
  },
  {
    id: "group-rotation-across-pages",
    title: "a claim's rotation gives a group it reaches late (past 16 groups) its second task before an earlier group its third: one task per group per round however the groups were read",
    spec: "store.ts ClaimInput.flowControl, groups.ts rotateGroups (one task per group per round)",
    skipUnless: needsGroups,
    async run(t) {
      // By key (never served): "a00" with 3 due tasks, 12 groups with one each, 3 groups with only a task due in an
      // hour, then "b" with 3 due tasks: 17 groups, so a store reading 16 groups at a time reaches "b" second.
      await submitTo(t, "a00", 3);
      for (let i = 1; i <= 12; i++) await submitTo(t, `a${String(i).padStart(2, "0")}`, 1);
      for (let i = 13; i <= 15; i++) await t.submit("g", { group: `a${i}`, payload: { group: `a${i}` }, runAtDelayMs: 3_600_000 });
      await submitTo(t, "b", 3);
      // 16 rows: round 0 gives one to each of the 14 groups with due work, round 1 one more to "a00" and to "b".
      const rows = await grouped(t, t.w1, { groupConcurrency: 3 }, { limit: 16 });
      const counts = countBy(groupsOf(rows));
      t.expect([counts.a00, counts.b, rows.length]).toEqual([2, 2, 16]);
    },
  },
  {
    id: "group-other-queue-not-starved",
    title: "a group whose due work is in another queue keeps its place when a claim of one queue passes it in a page that gave work: claims of that queue never starve it",
    spec: "store.ts ClaimInput.flowControl, groups.ts rotateGroups (served order)",
    skipUnless: needsGroups,
    async run(t) {
      // 260 groups with due work in "default" (two tasks each, so a claim leaves each active), then "x" (by key), whose
      // due task is in "other". A claim of "other" reads 16 pages of 16 groups at most: "x" is out of reach of the first.
      for (let i = 0; i < 260; i++) {
        const group = `a${String(i).padStart(3, "0")}`;
        for (let j = 0; j < 2; j++) await t.submit("g", { group, payload: { group } });
      }
      const x = await t.submit("g", { group: "x", payload: { group: "x" }, queue: "other" });
      const limits = { groupConcurrency: 100 };
      const got: string[] = [];
      // Rounds of one claim of "other" and two of "default" (each reads one page of 16 groups, which gives work).
      for (let round = 0; round < 10 && got.length === 0; round++) {
        got.push(...(await grouped(t, t.w2, limits, { queues: ["other"], limit: 1 })).map((row) => row.id));
        for (let i = 0; i < 2; i++) t.expect(await grouped(t, t.w1, limits, { limit: 1 })).toHaveLength(1);
      }
      t.expect(got).toEqual([x.id]);
    },
  },
  {
    id: "group-other-queue-rotation",
    title: "a claim of one queue that passes a page of groups whose due work is in another queue leaves their served order as it was: that queue's rotation goes on",
    spec: "store.ts ClaimInput.flowControl, groups.ts rotateGroups (served order)",
    skipUnless: needsGroups,
    async run(t) {
      // o00…o16 (never served, by key) have due work in "other" only; z (after them by key) in "default".
      for (let i = 0; i < 17; i++) {
        const group = `o${String(i).padStart(2, "0")}`;
        for (let j = 0; j < 2; j++) await t.submit("g", { group, payload: { group }, queue: "other" });
      }
      await submitTo(t, "z", 2);
      const limits = { groupConcurrency: 100 };
      const claimOf = async (queue: string): Promise<string[]> => {
        const rows = await grouped(t, t.w1, limits, { queues: [queue], limit: 1 });
        for (const row of rows) await t.store.complete({ taskId: row.id, workerId: t.w1, result: null });
        return groupsOf(rows);
      };
      t.expect(await claimOf("other")).toEqual(["o00"]);
      // A claim of "default": its first page (o01…o16) gives it nothing, its second z's task.
      t.expect(await claimOf("default")).toEqual(["z"]);
      // o00 was served last of the o groups: "other" goes on with o01.
      t.expect(await claimOf("other")).toEqual(["o01"]);
    },
  },
  {
    id: "group-passed-order-bounded",
    title: "groups passed without due work, over and over with a new group each time, still leave every claim working: their place in the served order stays within bounds",
    spec: "store.ts ClaimInput.flowControl, groups.ts rotateGroups (served order)",
    skipUnless: needsGroups,
    async run(t) {
      // A group at its limit with due work left (so claims run their draw), and before every claim a new group with only a
      // task not yet due: each claim passes it (never served) with the groups it passed before.
      const limits = { groupConcurrency: 1 };
      await submitTo(t, "busy", 2);
      // Held for the whole case: 80 rounds of a submit and a claim outlast the ordinary 5 s lease on a loaded machine
      // (MariaDB under a full test run), and a lapsed lease would hand the busy task back to a claim below.
      t.expect(groupsOf(await grouped(t, t.w1, limits, { limit: 1, leaseMs: 600_000 }))).toEqual(["busy"]);
      for (let i = 0; i < 80; i++) {
        const group = `n${String(i).padStart(3, "0")}`;
        await t.submit("g", { group, payload: { group }, runAtDelayMs: 3_600_000 });
        t.expect(await grouped(t, t.w1, limits, { limit: 1 })).toEqual([]);
      }
      const [due] = await submitTo(t, "n040", 1);
      t.expect((await grouped(t, t.w1, limits)).map((row) => row.id)).toEqual([(due as Task).id]);
    },
  },
  {
    id: "group-served-order-after-idle",
    title: "a group that went idle when a claim took its last task keeps its place in the served order: once it has work again it comes before groups served after it",
    spec: "store.ts ClaimInput.flowControl, groups.ts rotateGroups (served order)",
    skipUnless: needsGroups,
    async run(t) {
      const limits = { groupConcurrency: 2 };
      const claim = (limit: number): Promise<Task[]> => grouped(t, t.w1, limits, { limit });
      const complete = async (rows: readonly Task[]): Promise<void> => {
        for (const row of rows) await t.store.complete({ taskId: row.id, workerId: t.w1, result: null });
      };
      await submitTo(t, "y", 4);
      const first = await claim(2);
      t.expect(groupsOf(first)).toEqual(["y", "y"]);
      // y is at its limit: a claim of 2 takes z's only task, which leaves z without work (idle) as it is served.
      await submitTo(t, "z", 1);
      const second = await claim(2);
      t.expect(groupsOf(second)).toEqual(["z"]);
      await complete([...first, ...second]);
      // y is served after z.
      const third = await claim(1);
      t.expect(groupsOf(third)).toEqual(["y"]);
      await complete(third);
      // z has work again: it was served less recently than y, so it comes first.
      await submitTo(t, "z", 1);
      t.expect(groupsOf(await claim(1))).toEqual(["z"]);
    },
  },
  {
    id: "group-plain-fail-back-in-group",
    title: "a grouped task a claim without group limits took, failed back to queued after its group went idle, is taken by the next group claim though it is not at the head of the plain order",
    spec: "store.ts ClaimInput.flowControl, groups.ts GROUP_REQUEUE_PATHS",
    skipUnless: needsGroups,
    async run(t) {
      const limits = { groupConcurrency: 2 };
      const [a] = await submitTo(t, "a", 1);
      // A claim without group limits takes a's only task.
      t.expect((await t.claimOne(t.w1, { names: ["g"] })).id).toBe((a as Task).id);
      // z's backlog of higher priority: a group claim takes two (z's limit) and finds a without a queued task: a goes idle.
      await submitTo(t, "z", 10, { priority: 5 });
      t.expect(groupsOf(await grouped(t, t.w2, limits))).toEqual(["z", "z"]);
      // a's task fails back to queued, behind z's eight waiting tasks in plain order: its group wakes all the same.
      await t.store.fail({ taskId: (a as Task).id, workerId: t.w1, error: { code: "again" }, retryable: true, delayMs: 0 });
      t.expect((await grouped(t, t.w2, limits)).map((row) => row.id)).toEqual([(a as Task).id]);
    },
  },
  {
    id: "group-plain-recovered-back-in-group",
    title: "a grouped task a claim without group limits took, whose lease that kind of claim recovered after its group went idle, is taken by a group claim once it is at the head of the plain order",
    spec: "store.ts ClaimInput.flowControl, groups.ts GROUP_HEAD_ROWS",
    skipUnless: needsGroups,
    async run(t) {
      const limits = { groupConcurrency: 2 };
      const [c] = await submitTo(t, "c", 1);
      // A claim without group limits takes c's only task with a lease that runs out.
      t.expect((await t.claimOne(t.w1, { names: ["g"], leaseMs: SHORT_LEASE_MS })).id).toBe((c as Task).id);
      // A group claim takes b's task and finds c without a queued task: c goes idle.
      await submitTo(t, "b", 1);
      t.expect(groupsOf(await grouped(t, t.w2, limits))).toEqual(["b"]);
      // Lease recovery in a claim without group limits (of another name) queues c's task again and marks nothing.
      await t.sleep(EXPIRY_WAIT_MS);
      t.expect(await t.claim(t.w3, { names: ["other"] })).toEqual([]);
      t.expect((await t.get((c as Task).id)).status).toBe("queued");
      t.expect((await grouped(t, t.w2, limits)).map((row) => row.id)).toEqual([(c as Task).id]);
    },
  },
  {
    id: "group-reads",
    title: "taskGroup gives a task's group, its running and queued counts and the groupConcurrency last enforced; groupStats counts per group, most queued first",
    spec: "store.ts StoreCapabilities.groups, groups.ts GroupReadStore",
    skipUnless: needsGroups,
    async run(t) {
      const store = t.store.inner as unknown as GroupReadStore;
      t.expect(typeof store.taskGroup).toBe("function");
      await submitTo(t, "a", 3);
      const [waiting] = await submitTo(t, "b", 1);
      await t.submit("g", { payload: { group: "-" } });
      t.expect(await store.taskGroup((waiting as Task).id)).toEqual({ group: "b", running: 0, queued: 1, groupConcurrency: null });
      await grouped(t, t.w1, { groupConcurrency: 2 });
      const [stillQueued] = (await t.all()).filter((row) => row.status === "queued" && (row.payload as { group: string }).group === "a");
      t.expect(await store.taskGroup((stillQueued as Task).id)).toEqual({ group: "a", running: 2, queued: 1, groupConcurrency: 2 });
      t.expect(await store.groupStats("g")).toEqual([
        { group: "a", queued: 1, running: 2 },
        { group: "b", queued: 0, running: 1 },
      ]);
      t.expect(await store.groupStats("g", { limit: 1 })).toHaveLength(1);
      const ungrouped = (await t.all()).find((row) => (row.payload as { group: string }).group === "-") as Task;
      t.expect(await store.taskGroup(ungrouped.id)).toBeNull();
      await t.rejects(store.groupStats("g", { limit: 0 }), InvalidArgument, "a limit of 0");
    },
  },
  {
    id: "group-schedule-slots",
    title: "slot tasks of a schedule with a group are in that group: a grouped claim limits and counts them",
    spec: "store.ts StoreCapabilities.groups, schedule.ts ScheduleTaskInput.group",
    skipUnless: (c) => needsGroups(c) ?? (c.schedules === true ? null : "schedules (submitScheduleSlots)"),
    async run(t) {
      const store = t.store.inner as unknown as ScheduleTaskStore & GroupReadStore;
      const now = Date.now();
      const { submitted } = await store.submitScheduleSlots({ schedule: "ticks", slotsMs: [now - 3000, now - 2000, now - 1000], task: { name: "g", group: "a", payload: { group: "a" } } });
      t.expect(submitted).toHaveLength(3);
      t.expect(await store.groupStats("g")).toEqual([{ group: "a", queued: 3, running: 0 }]);
      t.expect(await grouped(t, t.w1, { groupConcurrency: 2 })).toHaveLength(2);
    },
  },
  {
    id: "group-priority-and-ungrouped",
    title: "inside a group, higher priority first; tasks without a group are still claimed by a grouped name's claim",
    spec: "store.ts ClaimInput.flowControl, groups.ts rotateGroups",
    skipUnless: needsGroups,
    async run(t) {
      const low = await t.submit("g", { group: "a", payload: { group: "a" }, priority: 0 });
      const high = await t.submit("g", { group: "a", payload: { group: "a" }, priority: 5 });
      const free = await t.submit("g", { payload: { group: "-" } });
      const limits = { groupConcurrency: 1 };
      const rows = await grouped(t, t.w1, limits);
      t.expect(rows.map((row) => row.id).sort()).toEqual([high.id, free.id].sort());
      t.expect((await t.get(low.id)).status).toBe("queued");
    },
  },
];

/** Debounce (an extension of §5.1's keyed submit, `debounce.ts`); run for stores declaring `groups`. */
export const debounceCases: readonly ConformanceCase[] = [
  {
    id: "group-debounce-updates-queued",
    title: "a debounced submit under a key whose task is queued updates its payload and run time (capped by maxDelayMs after the first submit) and returns it",
    spec: "store.ts SubmitInput.debounce, debounce.ts",
    skipUnless: needsGroups,
    async run(t) {
      const debounce = { delayMs: 60_000, maxDelayMs: 90_000 };
      const first = await t.store.submitOutcome({ name: "d", key: "dk", payload: { n: 1 }, debounce });
      t.expect(first.created).toBe(true);
      // created_at_ms and run_at_ms may come from separate clock reads (protocol §2.1: on Postgres each
      // reads clock_timestamp(), rounded to the nearest millisecond), so they may differ by the slack.
      t.expect(first.task.run_at_ms - first.task.created_at_ms).toBeGreaterThanOrEqual(60_000 - CLOCK_SLACK_MS);
      await t.sleep(20);
      const second = await t.store.submitOutcome({ name: "d", key: "dk", payload: { n: 2 }, debounce });
      t.expect(second.created).toBe(false);
      t.expect(second.task.id).toBe(first.task.id);
      t.expect(second.task.payload).toEqual({ n: 2 });
      // Pushed out, but never past created + maxDelayMs.
      t.expect(second.task.run_at_ms).toBeGreaterThan(first.task.run_at_ms);
      t.expect(second.task.run_at_ms).toBeLessThanOrEqual(first.task.created_at_ms + 90_000);
      const capped = await t.store.submitOutcome({ name: "d", key: "dk", payload: { n: 3 }, debounce: { delayMs: 100_000, maxDelayMs: 100_000 } });
      t.expect(capped.task.run_at_ms).toBe(first.task.created_at_ms + 100_000);
      t.expect((await t.get(first.task.id)).payload).toEqual({ n: 3 });
      t.expect((await t.all()).filter((row) => row.name === "d")).toHaveLength(1);
    },
  },
  {
    id: "group-debounce-after-claim",
    title: "once the key's task is running, a debounced submit inserts a new task and the key points at it; the running task is left alone",
    spec: "store.ts SubmitInput.debounce, debounce.ts",
    skipUnless: needsGroups,
    async run(t) {
      const first = await t.submit("d", { key: "dk", payload: { n: 1 }, debounce: { delayMs: 0 } });
      const running = await t.claimOne(t.w1, { names: ["d"] });
      t.expect(running.id).toBe(first.id);
      const next = await t.store.submitOutcome({ name: "d", key: "dk", payload: { n: 2 }, debounce: { delayMs: 0 } });
      t.expect(next.created).toBe(true);
      t.expect(next.task.id).not.toBe(first.id);
      t.expect((await t.store.getByKey("dk"))?.id).toBe(next.task.id);
      t.fields(await t.get(first.id), { status: "running", payload: { n: 1 } });
      await t.rejects(t.store.submit({ name: "d", payload: {}, debounce: { delayMs: 5 } }), InvalidArgument, "debounce without a key");
    },
  },
  {
    id: "group-spawn",
    title: "a child spawned with a group (durable steps' spawnStep) is in its group as a grouped submit's task is: claims take it under its group's limits; an invalid group is refused with nothing written",
    spec: "store.ts TaskStepStore.spawnStep, steps.ts, groups.ts",
    skipUnless: needsGroups,
    async run(t) {
      // Where the store has durable steps.
      if (typeof (t.store.inner as Partial<TaskStepStore>).spawnStep !== "function") return;
      const s = t.store.inner as unknown as TaskStepStore;
      const parent = await t.submitAndClaim(t.w1, "parent");
      const owned = { taskId: parent.id, workerId: t.w1, attempt: parent.attempt };
      const spawn = (name: string, seq: number, group: string): Promise<string> =>
        s.spawnStep({ ...owned, name, seq, child: { name: "kid", payload: { group }, queue: "kids", group } });
      const a1 = await spawn("a1", 1, "acme");
      const a2 = await spawn("a2", 2, "acme");
      const b1 = await spawn("b1", 3, "beta");
      t.expect(await spawn("a1", 1, "acme")).toBe(a1);
      await t.rejects(s.spawnStep({ ...owned, name: "bad", seq: 4, child: { name: "kid", queue: "kids", group: "" } }), InvalidArgument, "an empty group");
      const kids = (await t.all()).filter((row) => row.name === "kid");
      t.expect(kids.map((row) => row.id).sort()).toEqual([a1, a2, b1].sort());
      for (const kid of kids) t.fields(kid, { parent_id: parent.id, root_id: parent.root_id, status: "queued" });
      t.expect((await s.steps(parent.id)).map((e) => e.name)).toEqual(["a1", "a2", "b1"]);
      const reads = t.store.inner as unknown as Partial<GroupReadStore>;
      if (typeof reads.taskGroup === "function") t.expect(await reads.taskGroup(a2)).toEqual({ group: "acme", running: 0, queued: 2, groupConcurrency: null });
      // Under groupConcurrency 1, one child per group runs at a time.
      const claim = (workerId: string): Promise<Task[]> => t.claim(workerId, { queues: ["kids"], names: ["kid"], limit: 10, flowControl: { kid: { groupConcurrency: 1 } } });
      const groupOf = (row: Task): string => (row.payload as { group: string }).group;
      const first = await claim(t.w2);
      t.expect(first.map(groupOf).sort()).toEqual(["acme", "beta"]);
      t.expect(await claim(t.w3)).toEqual([]);
      const acme = first.find((row) => groupOf(row) === "acme") as Task;
      await t.store.complete({ taskId: acme.id, workerId: t.w2, attempt: acme.attempt, result: null });
      t.expect((await claim(t.w3)).map((row) => row.id)).toEqual([acme.id === a1 ? a2 : a1]);
    },
  },
  {
    id: "group-debounce-begun",
    title: "a debounced submit under a key whose queued task has begun (a durable step parked it) leaves it alone and inserts a new task the key points at",
    spec: "store.ts SubmitInput.debounce, debounce.ts, steps.ts",
    skipUnless: (c) => needsGroups(c) ?? (c.durableSteps === true ? null : "durableSteps (TaskStepStore)"),
    async run(t) {
      const debounce = { delayMs: 0 };
      const first = await t.submit("d", { key: "dk", payload: { n: 1 }, debounce });
      const claimed = await t.claimOne(t.w1, { names: ["d"] });
      t.expect(claimed.id).toBe(first.id);
      const steps = t.store.inner as unknown as TaskStepStore;
      t.expect(await steps.parkStep({ taskId: first.id, workerId: t.w1, attempt: claimed.attempt, name: "nap", kind: "sleep", seq: 1, delayMs: 60_000 })).toEqual({
        kind: "parked",
        status: "queued",
      });
      const parked = await t.get(first.id);
      const next = await t.store.submitOutcome({ name: "d", key: "dk", payload: { n: 2 }, debounce });
      t.expect(next.created).toBe(true);
      t.expect(next.task.id).not.toBe(first.id);
      t.fields(next.task, { name: "d", status: "queued", payload: { n: 2 } });
      // The parked task keeps the payload its journal was recorded with, and its wake time.
      t.expect(await t.get(first.id)).toEqual(parked);
      t.expect((await t.store.getByKey("dk"))?.id).toBe(next.task.id);
    },
  },
  {
    id: "group-debounce-other-name",
    title: "a debounced submit under a key whose task is of another name and unfinished writes nothing and rejects (AlreadyExists); once that task ended, it inserts",
    spec: "store.ts SubmitInput.debounce, debounce.ts",
    skipUnless: needsGroups,
    async run(t) {
      const email = await t.submit("email", { key: "shared", payload: { to: "a" }, runAtDelayMs: 60_000 });
      const before = await t.get(email.id);
      const debounce = { delayMs: 0 };
      const queued = await t.rejects(t.store.submitOutcome({ name: "d", key: "shared", payload: { n: 1 }, debounce }), AlreadyExists, "a debounce onto another name's queued task");
      t.expect(queued.key).toBe("shared");
      // Neither its payload nor its run time moved, and no task of the debounced name exists.
      t.expect(await t.get(email.id)).toEqual(before);
      t.expect((await t.all()).filter((row) => row.name === "d")).toHaveLength(0);
      t.expect((await t.store.getByKey("shared"))?.id).toBe(email.id);
      // Running: refused too (the key stays with the running task).
      const due = await t.submit("email", { key: "other", payload: {} });
      const running = await t.claimOne(t.w1, { names: ["email"] });
      t.expect(running.id).toBe(due.id);
      await t.rejects(t.store.submitOutcome({ name: "d", key: "other", payload: { n: 2 }, debounce }), AlreadyExists, "a debounce onto another name's running task");
      t.expect((await t.store.getByKey("other"))?.id).toBe(due.id);
      // Finished: the key is free to move, as for a finished task of the same name.
      await t.store.complete({ taskId: running.id, workerId: t.w1, attempt: running.attempt, result: null });
      const next = await t.store.submitOutcome({ name: "d", key: "other", payload: { n: 3 }, debounce });
      t.expect(next.created).toBe(true);
      t.fields(next.task, { name: "d", payload: { n: 3 } });
      t.expect((await t.store.getByKey("other"))?.id).toBe(next.task.id);
    },
  },
];
