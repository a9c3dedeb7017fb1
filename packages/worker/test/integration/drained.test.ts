/**
 * After a claim whose reprobe found nothing left, a worker on a real Postgres
 * store waits for a push signal, and one on SQLite in its claim wait (which
 * ends on commits that queue a task), instead of claiming again (the
 * in-process cases are in drained.test.ts).
 */
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { ClaimInput, TaskStore } from "@cairnq/protocol";
import { delay, waitFor, waitForStatus } from "../support/helpers.js";
import { POSTGRES, SQLITE, storePerTest } from "../support/stores.js";
import type { Backend } from "../support/stores.js";
import { makeWorker } from "../support/worker.js";

describe.each([POSTGRES, SQLITE] as Backend[])("on $label", (backend) => {
  const open = storePerTest();

  it("a worker makes one claim per task it is woken for, none after the task, and the next submit still reaches it", async () => {
    const store = await open(backend);
    const claims: boolean[] = [];
    // Claims begun and claims still in flight: a quiet worker has none in flight and begins none.
    let begun = 0;
    let inFlight = 0;
    const counted = new Proxy(store, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target) as unknown;
        if (prop !== "claim" || typeof value !== "function") return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
        return async (input: ClaimInput) => {
          begun += 1;
          inFlight += 1;
          try {
            const rows = await (value as TaskStore["claim"]).call(target, input);
            claims.push(rows.length > 0);
            return rows;
          } finally {
            inFlight -= 1;
          }
        };
      },
    });
    // A queue of this test's own: NOTIFY is per database and its payload is the queue's name (§9), so other files'
    // submits to `default` in other schemas of the same database (run beside this one) signal this worker too, and a
    // signal that lands while a claim is in flight rightly makes it claim once more (a CI run failed on that).
    const queue = `drained_${randomUUID().slice(0, 8)}`;
    // A long poll interval: only a push signal or a commit seen by the claim wait can bring the second task in time.
    const worker = makeWorker(counted, { concurrency: 1, pollIntervalMs: 30_000, queues: [queue] });
    worker.task("a", () => "done");
    await store.connect();
    void worker.run();
    // Count from a quiet worker: on Postgres once its LISTEN has proved itself (the check's own NOTIFY and a
    // slow check on a loaded machine bring claims of their own), then after 300 ms in which no claim began and
    // none was in flight (a claim in flight when the task is submitted began before its signal: the worker
    // rightly claims once more after it).
    const listenState = () => (store as { listenState?: string }).listenState;
    await waitFor(() => listenState() === undefined || listenState() === "listening", 15_000, "the LISTEN check");
    for (let seen = -1; seen !== begun || inFlight > 0; ) {
      seen = begun;
      await delay(300);
    }
    const before = claims.length;
    const first = await store.submit({ name: "a", queue });
    await waitForStatus(store, first.id, ["succeeded"], 5000);
    await delay(150);
    expect(claims.slice(before)).toEqual([true]);
    const second = await store.submit({ name: "a", queue });
    await waitForStatus(store, second.id, ["succeeded"], 5000);
    expect(claims.slice(before)).toEqual([true, true]);
    await worker.stop();
  });
});
