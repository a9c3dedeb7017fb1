/**
 * Client paths on Postgres (a fresh schema per file), where its keyed submit
 * path and its pushed done signals could behave otherwise than SQLite's.
 */
import { defineTask } from "@cairnq/protocol";
import { PostgresStore } from "@cairnq/store-postgres";
import { PgAdmin, pgDsn } from "@cairnq/test-support";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { KeyHeldByOtherTask } from "@cairnq/protocol";
import { CairnQ, WaitInterrupted } from "../../src/index.js";
import { claimWhenQueued, delay } from "../support.js";

const admin = new PgAdmin();
let schema: string;
let clients: CairnQ[] = [];

function open(): CairnQ {
  const client = new CairnQ(new PostgresStore(pgDsn(), { schema }));
  clients.push(client);
  return client;
}

beforeAll(async () => {
  schema = await admin.createSchema("client_it");
});

// Closed in each test's own hooks: the setup file fails a test that leaves the store's timers open.
afterEach(async () => {
  await Promise.all(clients.map((c) => c.close()));
  clients = [];
});

afterAll(async () => {
  await admin.dropSchema(schema);
  await admin.close();
});

describe("on Postgres", () => {
  it("a keyed call given a TaskDef refuses a succeeded task of another name holding the key; by name it is reused", async () => {
    const sum = defineTask<{ x: number; y: number }, { sum: number }>("math.sum", { queue: "pg-keys" });
    const client = open();
    const upper = await client.submit("text.upper", { s: "hi" }, { key: "order-42", queue: "pg-keys" });
    const worker = await claimWhenQueued(client.store, "pg-keys");
    await client.store.complete({ taskId: upper.id, workerId: worker.workerId, result: { upper: "HI" } });
    await expect(client.call(sum, { x: 1, y: 2 }, { key: "order-42", conflict: "reuse-succeeded" })).rejects.toSatisfy(
      (err) => err instanceof KeyHeldByOtherTask && err.task.id === upper.id && err.key === "order-42",
    );
    await expect(client.submitOutcome(sum, { x: 1, y: 2 }, { key: "order-42", conflict: "reuse-succeeded" })).rejects.toBeInstanceOf(KeyHeldByOtherTask);
    expect(await client.call("math.sum", {}, { key: "order-42", conflict: "reuse-succeeded" })).toEqual({ upper: "HI" });
    expect((await client.list({ queue: "pg-keys" })).map((t) => t.id)).toEqual([upper.id]);
  });

  it("close() cuts a pending call's wait (asleep on LISTEN) short with WaitInterrupted carrying the task id; the task stays queued", async () => {
    const api = open();
    const calling = api.call("report", {}, { queue: "pg-idle", key: "report:1", waitTimeoutMs: 10_000 }).catch((err: unknown) => err);
    const reader = open();
    let queued = await reader.getByKey("report:1");
    for (let i = 0; queued === null && i < 500; i += 1) {
      await delay(5);
      queued = await reader.getByKey("report:1");
    }
    expect(queued?.status).toBe("queued");
    await delay(50);
    await api.close();
    const err = await calling;
    expect(err).toBeInstanceOf(WaitInterrupted);
    expect(err).toMatchObject({ taskId: queued?.id, key: "report:1" });
    expect((await reader.get(queued?.id ?? ""))?.status).toBe("queued");
  });
});
