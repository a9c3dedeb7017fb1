/**
 * Groups that went idle long ago (an extension of v1; rules in
 * `@cairnq/protocol` `groups.ts`): a store may delete the row it keeps for an
 * idle group (`GROUP_PRUNE_BATCH`; the SQL stores do, on an instance's first
 * group claim of a name and then once a minute), so a group whose every task
 * ended must behave, when one of its tasks comes back, as it did while its
 * row was there. Run only for stores declaring `groups`.
 */
import type { ClaimInput, Task } from "@cairnq/protocol";
import type { CheckedStore } from "../checked-store.js";
import type { ConformanceCase } from "../case.js";
import { LEASE_MS } from "../case.js";
import { needsGroups } from "./groups.js";

/** A claim of `g` with `groupConcurrency: 1` on `store`. */
function grouped(store: CheckedStore, workerId: string, extra: Partial<ClaimInput> = {}): Promise<Task[]> {
  return store.claim({ queues: ["default"], names: ["g"], limit: 10, leaseMs: LEASE_MS, workerId, flowControl: { g: { groupConcurrency: 1 } }, ...extra });
}

export const groupIdleCases: readonly ConformanceCase[] = [
  {
    id: "group-idle-retry-limit",
    title:
      "the failed tasks of a group whose every task ended, retried after group claims of other groups (one by a second store instance), are claimed again in their group, one at a time under groupConcurrency 1",
    spec: "store.ts retry, groups.ts GROUP_PRUNE_BATCH, headGroupRowAction, GROUP_REQUEUE_PATHS",
    skipUnless: needsGroups,
    async run(t) {
      const a1 = await t.submit("g", { group: "a", payload: { group: "a" } });
      const a2 = await t.submit("g", { group: "a", payload: { group: "a" } });
      // Both of a's tasks run and fail for good: the group has nothing left.
      for (const _ of [a1, a2]) {
        const [taken] = await grouped(t.store, t.w1);
        t.expect([a1.id, a2.id]).toContain(taken?.id);
        await t.store.fail({ taskId: (taken as Task).id, workerId: t.w1, error: { code: "final" }, retryable: false });
      }
      // Group claims of other groups go on, on another instance too (a store instance that prunes idle groups does so on its first group claim of a name).
      const peer = await t.peer();
      for (const [store, group] of [[peer, "b"], [t.store, "c"], [peer, "d"]] as const) {
        const task = await t.submit("g", { group, payload: { group } });
        t.expect((await grouped(store, t.w2)).map((row) => row.id)).toEqual([task.id]);
        await store.complete({ taskId: task.id, workerId: t.w2, result: null });
      }
      // a's tasks come back: claimed again in their group, under its limit.
      t.expect((await t.store.retry(a1.id))?.status).toBe("queued");
      t.expect((await peer.retry(a2.id))?.status).toBe("queued");
      const first = await grouped(t.store, t.w3);
      t.expect(first).toHaveLength(1);
      t.expect([a1.id, a2.id]).toContain(first[0]?.id);
      t.expect(await grouped(peer, t.w3)).toEqual([]);
      await t.store.complete({ taskId: (first[0] as Task).id, workerId: t.w3, result: null });
      const second = await grouped(peer, t.w3);
      t.expect(second.map((row) => row.id)).toEqual([first[0]?.id === a1.id ? a2.id : a1.id]);
    },
  },
];
