/**
 * The rate-window reads (an extension of v1; rules in `@cairnq/protocol`
 * `rate-windows.ts`): what a store tells `explain` of a `rateLimit` or
 * `groupRateLimit` window — a limit a claim that recorded claims under it
 * enforced, the claims in the window, and when it has room again.
 */
import type { FlowReadStore, RateWindow, Task } from "@cairnq/protocol";
import type { CaseContext, ConformanceCase } from "../case.js";
import { CLOCK_SLACK_MS } from "../invariants.js";
import { needsFlowControl } from "./flow-control.js";
import { needsGroups } from "./groups.js";

const LEASE_MS = 60_000;
/** A window no run outlasts: its claims stay in it for the whole case. */
const HOUR_MS = 3_600_000;

/**
 * Claims with `claim` and gives the bounds of the instant its rate claims were recorded at: not before the draw
 * (the rows' lease start) and not after the claim returned.
 */
async function claimedBetween(claim: () => Promise<Task[]>): Promise<{ rows: Task[]; fromMs: number; toMs: number }> {
  const rows = await claim();
  const toMs = Date.now() + CLOCK_SLACK_MS;
  const fromMs = Math.min(...rows.map((row) => (row.lease_until_ms as number) - LEASE_MS)) - CLOCK_SLACK_MS;
  return { rows, fromMs, toMs };
}

/** That `window` is of `limit` with `claims` and room now, read at the store's clock (within the case's run). */
function expectRoom(t: CaseContext, window: RateWindow | null, limit: { max: number; perMs: number }, claims: number, from: { fromMs: number }): void {
  t.expect({ ...window, readAtMs: 0 }).toEqual({ limit, claims, roomAtMs: null, readAtMs: 0 });
  t.expect(window?.readAtMs).toBeGreaterThanOrEqual(from.fromMs);
  t.expect(window?.readAtMs).toBeLessThanOrEqual(Date.now() + CLOCK_SLACK_MS);
}

/**
 * That `window` is the full window of `limit` with `claims`, having room again when a claim recorded in `[fromMs, toMs]`
 * leaves it, read at the store's clock before that.
 */
function expectFull(t: CaseContext, window: RateWindow | null, limit: { max: number; perMs: number }, claims: number, at: { fromMs: number; toMs: number }): void {
  t.expect({ ...window, roomAtMs: null, readAtMs: 0 }).toEqual({ limit, claims, roomAtMs: null, readAtMs: 0 });
  t.expect(window?.roomAtMs).toBeGreaterThanOrEqual(at.fromMs + limit.perMs);
  t.expect(window?.roomAtMs).toBeLessThanOrEqual(at.toMs + limit.perMs);
  t.expect(window?.readAtMs).toBeGreaterThanOrEqual(at.fromMs);
  t.expect(window?.readAtMs).toBeLessThan(window?.roomAtMs as number);
}

export const rateWindowCases: readonly ConformanceCase[] = [
  {
    id: "flow-rate-window-read",
    title: "rateWindows gives a name's rateLimit as a claim recording claims enforced it, its claims in the window, when it has room again and the store's clock",
    spec: "store.ts StoreCapabilities.flowControl, rate-windows.ts FlowReadStore",
    skipUnless: needsFlowControl,
    async run(t) {
      const store = t.store.inner as unknown as FlowReadStore;
      t.expect(typeof store.rateWindows).toBe("function");
      for (let i = 0; i < 4; i++) await t.submit("rl");
      t.expect(await store.rateWindows("rl", null)).toEqual({ name: null, group: null });
      const limit = { max: 2, perMs: HOUR_MS };
      const claim = (max: number, n: number) => () => t.claim(t.w1, { names: ["rl"], limit: n, leaseMs: LEASE_MS, flowControl: { rl: { rateLimit: { max, perMs: HOUR_MS } } } });
      const first = await claimedBetween(claim(2, 1));
      t.expect(first.rows).toHaveLength(1);
      const read = await store.rateWindows("rl", null);
      expectRoom(t, read.name, limit, 1, first);
      t.expect(read.group).toBeNull();
      // The second claim fills the window: it has room again when the first claim (its 2nd newest) leaves it.
      t.expect(await claim(2, 5)()).toHaveLength(1);
      expectFull(t, (await store.rateWindows("rl", null)).name, limit, 2, first);
      // A claim that takes nothing records nothing (its own limit is not recorded); one that takes a task under another limit records that limit.
      t.expect(await claim(1, 5)()).toEqual([]);
      expectFull(t, (await store.rateWindows("rl", null)).name, limit, 2, first);
      t.expect(await claim(3, 1)()).toHaveLength(1);
      expectFull(t, (await store.rateWindows("rl", null)).name, { max: 3, perMs: HOUR_MS }, 3, first);
      t.expect(await store.rateWindows("other", "acme")).toEqual({ name: null, group: null });
    },
  },
  {
    id: "group-rate-window-read",
    title: "rateWindows gives a group's window under the name's groupRateLimit as a claim recording claims enforced it; each group its own",
    spec: "store.ts StoreCapabilities.groups, rate-windows.ts FlowReadStore.rateWindows",
    skipUnless: needsGroups,
    async run(t) {
      const store = t.store.inner as unknown as FlowReadStore;
      const acme: Task[] = [];
      for (let i = 0; i < 3; i++) acme.push(await t.submit("g", { payload: { group: "acme", i }, group: "acme" }));
      await t.submit("g", { payload: { group: "globex" }, group: "globex" });
      t.expect(await store.rateWindows("g", "acme")).toEqual({ name: null, group: null });
      const limit = { max: 2, perMs: HOUR_MS };
      const claimed = await claimedBetween(() => t.claim(t.w1, { names: ["g"], limit: 10, leaseMs: LEASE_MS, flowControl: { g: { groupRateLimit: limit } } }));
      t.expect(claimed.rows).toHaveLength(3);
      const ofAcme = await store.rateWindows("g", "acme");
      t.expect(ofAcme.name).toBeNull();
      expectFull(t, ofAcme.group, limit, 2, claimed);
      expectRoom(t, (await store.rateWindows("g", "globex")).group, limit, 1, claimed);
      // No group asked for, no group window; a group without claims has an empty window under the name's limit.
      t.expect(await store.rateWindows("g", null)).toEqual({ name: null, group: null });
      expectRoom(t, (await store.rateWindows("g", "initech")).group, limit, 0, claimed);
    },
  },
];
