/**
 * Keyed submits issued together from one store (not awaited) end on the one
 * issued last (debounce, `replace`) or first (`reuse`), as awaited ones do —
 * even though each runs in its own transaction on a pool connection; and a
 * `withTransaction` view's submit never waits behind a store submit of the
 * same key that waits for the caller's own transaction.
 */
import { runKeyedIssueOrder, runViewBesideWaitingSubmit } from "@cairnq/test-support";
import { describe, expect, it } from "vitest";
import { openStore, pgDsn, schemaName } from "../helpers.js";

/** Bursts per mode: without the store keeping call order, most 20-submit bursts ended on another payload. */
const BURSTS = 5;

describe("keyed submits issued together from one Postgres store", () => {
  it("reach the key lock in call order: debounce and replace keep the last payload, reuse the first", async () => {
    const store = openStore(pgDsn(), { schema: schemaName(), max: 10 });
    await store.connect();
    const report = await runKeyedIssueOrder(store, BURSTS);
    expect(report).toEqual({ debounce: Array(BURSTS).fill(report.last), replace: Array(BURSTS).fill(report.last), reuse: Array(BURSTS).fill(1), last: 20 });
  }, 60_000);

  it("a view's submit inside the caller's transaction does not wait behind a store submit waiting for that transaction's key lock", async () => {
    const store = openStore(pgDsn(), { schema: schemaName(), max: 4 });
    await store.connect();
    const { outsideId, viewId, final } = await runViewBesideWaitingSubmit(store);
    expect(outsideId).not.toBe(viewId);
    expect(final).toMatchObject({ id: outsideId, payload: { n: 2 } });
  }, 30_000);
});
