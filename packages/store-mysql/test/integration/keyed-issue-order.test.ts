/**
 * Keyed submits issued together from one store (not awaited) end on the one
 * issued last (debounce, `replace`) or first (`reuse`), as awaited ones do —
 * even though each runs in its own transaction on a pool connection; and a
 * `withTransaction` view's submit never waits behind a store submit of the
 * same key that waits for the caller's own transaction.
 */
import { MySQLStore } from "@cairnq/store-mysql";
import { MySQLAdmin, mysqlDsn, runKeyedIssueOrder, runViewBesideWaitingSubmit } from "@cairnq/test-support";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";

/** Bursts per mode. */
const BURSTS = 5;
const admin = new MySQLAdmin(mysqlDsn());
let dsn = "";
beforeAll(async () => {
  dsn = await admin.createDatabase("issueorder");
});
afterAll(async () => {
  await admin.dropDatabase("issueorder");
  await admin.close();
});
const stores: MySQLStore[] = [];
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
  await admin.emptyDatabase("issueorder");
});

describe("keyed submits issued together from one MySQL store", () => {
  it("reach the key lock in call order, from a cold store too: debounce and replace keep the last payload, reuse the first", async () => {
    const store = new MySQLStore(dsn, { max: 10 });
    stores.push(store);
    // Not connected first: the sweep saw a cold client lose the order.
    const report = await runKeyedIssueOrder(store, BURSTS);
    expect(report).toEqual({ debounce: Array(BURSTS).fill(report.last), replace: Array(BURSTS).fill(report.last), reuse: Array(BURSTS).fill(1), last: 20 });
  }, 60_000);

  it("a view's submit inside the caller's transaction does not wait behind a store submit waiting for that transaction's key lock", async () => {
    const store = new MySQLStore(dsn, { max: 4 });
    stores.push(store);
    await store.connect();
    const { outsideId, viewId, final } = await runViewBesideWaitingSubmit(store);
    expect(outsideId).not.toBe(viewId);
    expect(final).toMatchObject({ id: outsideId, payload: { n: 2 } });
  }, 30_000);
});
