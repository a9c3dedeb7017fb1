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

/** A client on the file's schema; `applicationName` tags its connections (pool and LISTEN) in `pg_stat_activity`. */
function open(applicationName?: string): CairnQ {
  let dsn = pgDsn();
  if (applicationName !== undefined) {
    const url = new URL(dsn);
    url.searchParams.set("application_name", applicationName);
    dsn = url.toString();
  }
  const client = new CairnQ(new PostgresStore(dsn, { schema }));
  clients.push(client);
  return client;
}

/** `pg_terminate_backend` on every connection tagged `applicationName` (only this test's client); returns how many ended. */
async function terminateBackends(applicationName: string): Promise<number> {
  const rows = await admin.q<{ n: number }>(
    "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))::int AS n FROM pg_stat_activity " +
      "WHERE datname = current_database() AND pid <> pg_backend_pid() AND application_name = $1",
    [applicationName],
  );
  return rows[0]?.n ?? 0;
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

  it("wait() and call() survive pg_terminate_backend on their client's connections mid-wait: they read again and resolve with the task", async () => {
    const applicationName = `cairnq-client-waitkill-${process.pid}`;
    const api = open(applicationName);
    const worker = open();
    const queue = "pg-waitkill";
    const polls = { pollMs: 10, maxPollMs: 20 };
    const submitted = await Promise.all([1, 2, 3].map((i) => api.submit("job", { i }, { queue })));
    const waits = submitted.map((task) => api.wait(task.id, { timeoutMs: 15_000, ...polls }));
    const calls = [4, 5, 6].map((i) => api.call("job", { i }, { queue, waitTimeoutMs: 15_000, ...polls }));
    while ((await worker.list({ queue })).length < 6) await delay(5);
    // Rounds of kills while the waits poll every 10–20 ms: connections that hold a read in flight, idle ones
    // (their next statement finds them gone), and the LISTEN connection the waits sleep on.
    let terminated = 0;
    for (let round = 0; round < 5; round += 1) {
      terminated += await terminateBackends(applicationName);
      await delay(30);
    }
    expect(terminated).toBeGreaterThan(0);
    for (let i = 0; i < 6; i += 1) {
      const claimed = await claimWhenQueued(worker.store, queue);
      await worker.store.complete({ taskId: claimed.id, workerId: claimed.workerId, result: { done: (claimed.payload as { i: number }).i } });
    }
    const waited = await Promise.allSettled(waits);
    expect(waited.map((r) => (r.status === "fulfilled" ? r.value.status : String(r.reason)))).toEqual(["succeeded", "succeeded", "succeeded"]);
    expect(waited.map((r) => (r.status === "fulfilled" ? r.value.id : null))).toEqual(submitted.map((t) => t.id));
    const called = await Promise.allSettled(calls);
    expect(called.map((r) => (r.status === "fulfilled" ? r.value : String(r.reason)))).toEqual([{ done: 4 }, { done: 5 }, { done: 6 }]);
  });

  it("a wait sleeping off a failed read (its backoff) still ends at once on its signal, or on close() with WaitInterrupted", async () => {
    const api = open();
    const task = await api.submit("job", {}, { queue: "pg-backoff" });
    // Every status read of the open store fails as a connection terminated mid-statement does (not a CairnQError:
    // transient), so each wait reads, fails and sleeps its interval (5 s here) on the store's wake before reading
    // again; once close() began, the store's own read answers (its "store is closed").
    let failures = 0;
    let closing = false;
    const getStatus = api.store.getStatus.bind(api.store);
    api.store.getStatus = async (id: string) => {
      if (closing) return getStatus(id);
      failures += 1;
      const error = new Error("the connection to Postgres ended while a statement was in flight (Connection terminated unexpectedly)");
      error.name = "PostgresConnectionLost";
      throw error;
    };
    const slow = { timeoutMs: 20_000, pollMs: 5_000, maxPollMs: 5_000 };
    const controller = new AbortController();
    const aborted = api.wait(task.id, { ...slow, signal: controller.signal }).catch((err: unknown) => err);
    const closed = api.wait(task.id, slow).catch((err: unknown) => err);
    for (let i = 0; failures < 2 && i < 400; i += 1) await delay(5);
    expect(failures).toBeGreaterThanOrEqual(2);
    // The LISTEN connection the waits asked for comes up meanwhile (a close during its connect is another test's
    // matter); coming up, it releases the waits, which read, fail and sleep again.
    await delay(150);
    const reason = new Error("user left");
    let since = performance.now();
    controller.abort(reason);
    expect(await aborted).toBe(reason);
    expect(performance.now() - since).toBeLessThan(1_000);
    since = performance.now();
    closing = true;
    await api.close();
    const err = await closed;
    expect(performance.now() - since).toBeLessThan(1_000);
    expect(err).toBeInstanceOf(WaitInterrupted);
    expect(err).toMatchObject({ taskId: task.id, key: null });
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
