/**
 * The backpressure gate inside a caller's transaction (`withTransaction`):
 * it checks the queue's depth once and never waits, since waiting would hold
 * the transaction — on SQLite, the database's write lock — open while
 * workers try to drain the queue.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import type { QueueDepthGate } from "@cairnq/protocol";
import { QueueFull } from "@cairnq/protocol";
import { BackpressureGateCore } from "@cairnq/protocol/sdk";
import { SQLiteStore } from "@cairnq/store-sqlite";
import { Kysely, SqliteDialect } from "kysely";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

let dir: string;
const closers: (() => Promise<void>)[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "cairnq-sqlite-gate-"));
});

afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  rmSync(dir, { recursive: true, force: true });
});

/** A gate of limit 2 on queue `gated` whose every sleep fails the test: a submit in a transaction must never wait. */
function gateThatMustNotSleep(): BackpressureGateCore {
  return new BackpressureGateCore(
    { maxQueueDepth: { gated: 2 }, maxQueueWaitMs: 600_000 },
    { sleep: (ms) => Promise.reject(new Error(`the gate slept ${ms} ms while the caller's transaction stayed open`)) },
  );
}

const GATES: [string, (core: BackpressureGateCore) => QueueDepthGate][] = [
  ["the client's gate (BackpressureGateCore)", (core) => core],
  ["any other gate (here a wrapper without limitFor)", (core) => ({ acquire: (queue, store) => core.acquire(queue, store) })],
];

describe("the backpressure gate inside withTransaction on SQLite", () => {
  it.each(GATES)("%s: a full queue rejects at once with QueueFull saying why, counting the transaction's own submits; nothing is written", async (_label, wrap) => {
    const file = join(dir, "gate.db");
    const store = new SQLiteStore(file);
    const app = new Kysely({ dialect: new SqliteDialect({ database: new Database(file) }) });
    closers.push(() => store.close(), () => app.destroy());
    store.queueDepthGate = wrap(gateThatMustNotSleep());
    await store.submit({ name: "outside", queue: "gated" });

    let inside: string | null = null;
    const failed = await store
      .transaction(app, async (trx) => {
        const view = store.withTransaction(trx);
        inside = (await view.submit({ name: "inside", queue: "gated" })).id; // room for one more
        await view.submit({ name: "inside", queue: "gated" }); // the first one, uncommitted, filled it
      })
      .catch((err: unknown) => err);
    expect(failed).toBeInstanceOf(QueueFull);
    expect(failed).toMatchObject({ queue: "gated", maxDepth: 2, waitedMs: 0 });
    expect((failed as Error).message).toMatch(/inside withTransaction a submit does not wait for room/);
    expect(inside).not.toBeNull();
    expect((await store.list({ queue: "gated" })).map((t) => t.name)).toEqual(["outside"]);

    // Other queues are not gated, and a submit with room commits.
    const ok = await store.transaction(app, async (trx) => store.withTransaction(trx).submit({ name: "inside", queue: "gated" }));
    const free = await store.transaction(app, async (trx) => store.withTransaction(trx).submit({ name: "free", queue: "free" }));
    expect([(await store.get(ok.id))?.status, (await store.get(free.id))?.status]).toEqual(["queued", "queued"]);
  });
});
