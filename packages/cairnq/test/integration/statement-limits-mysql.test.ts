/**
 * Values over MariaDB's `max_allowed_packet` (16 MiB on the test server) in a
 * real Worker on MySQL: a handler's result the server cannot take fails that
 * task (`unserializable_result`, once, never left `running` to run again after
 * its lease), a step result too large fails the attempt with the store's
 * `StatementTooLarge`, and a `send` too large fails its own call — and the
 * worker and client go on working. A fresh database for the file.
 * `CAIRNQ_TEST_MYSQL_DSN` names the server; without it the tests fail.
 */
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { CairnQ, EventLoopBlocked, TaskError, Worker } from "cairnq";
import { StatementTooLarge } from "@cairnq/store-mysql";
import { MySQLAdmin, mysqlDsn } from "@cairnq/test-support";

const admin = new MySQLAdmin(mysqlDsn());
let dsn = "";
/** 20 MB: over the test server's 16 MiB max_allowed_packet. */
const BIG = "r".repeat(20_000_000);
const WORKER = { leaseMs: 2000, heartbeatIntervalMs: 200, pollIntervalMs: 20, retryBackoffMs: 0, stopTimeoutMs: 2000, logger: null } as const;

beforeAll(async () => {
  dsn = await admin.createDatabase("limits_worker");
});
afterAll(async () => {
  await admin.dropDatabase("limits_worker");
  await admin.close();
});

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  await admin.emptyDatabase("limits_worker");
});

function open(): { client: CairnQ; worker: Worker; errors: unknown[] } {
  const errors: unknown[] = [];
  const client = CairnQ.mysql(dsn, { max: 2 });
  const worker = Worker.mysql(dsn, { ...WORKER, onError: (error: unknown) => errors.push(error) });
  closers.push(() => client.close(), () => worker.close());
  return { client, worker, errors };
}

it("a handler result over max_allowed_packet fails its task once (unserializable_result); the next task succeeds", async () => {
  const { client, worker, errors } = open();
  let runs = 0;
  worker.task("huge", () => {
    runs++;
    return BIG;
  });
  worker.task("small", () => "ok");
  void worker.run();
  const huge = await client.submit("huge", {}, { maxAttempts: 3 });
  const ended = await client.wait(huge.id, { timeoutMs: 10_000 });
  expect(ended.status).toBe("failed");
  expect(ended.error).toMatchObject({ code: "unserializable_result", type: "SerializationError" });
  expect(String((ended.error as { message?: unknown }).message)).toContain("max_allowed_packet");
  // Past the lease: the task is not run again (it would be, had the complete left it running).
  await new Promise((resolve) => setTimeout(resolve, WORKER.leaseMs + 500));
  expect(runs).toBe(1);
  expect((await client.get(huge.id))?.status).toBe("failed");
  const small = await client.submit("small", {});
  expect((await client.wait(small.id, { timeoutMs: 5000 })).status).toBe("succeeded");
  expect(errors).toEqual([]);
});

it("a step result over max_allowed_packet fails the attempt with StatementTooLarge; a send over it fails its own call", async () => {
  const { client, worker } = open();
  worker.task("stepper", async (ctx) => {
    await ctx.step("load", () => BIG);
    return "unreachable";
  });
  worker.task("listener", async (ctx) => (await ctx.waitFor("go", { timeoutMs: 10_000 })) ?? "none");
  void worker.run();
  const stepper = await client.submit("stepper", {}, { maxAttempts: 1 });
  const ended = await client.wait(stepper.id, { timeoutMs: 10_000 });
  expect(ended.status).toBe("failed");
  expect(ended.error).toMatchObject({ type: "StatementTooLarge" });
  expect(String((ended.error as { message?: unknown }).message)).toContain("max_allowed_packet");

  const listener = await client.submit("listener", {});
  const error: unknown = await client.send(listener.id, "go", { blob: BIG }).then(() => null, (e: unknown) => e);
  expect(error).toBeInstanceOf(StatementTooLarge);
  await client.send(listener.id, "go", { small: true });
  const done = await client.wait(listener.id, { timeoutMs: 10_000 });
  expect(done.status).toBe("succeeded");
  expect(done.result).toEqual({ small: true });
});

it("a thrown error over max_allowed_packet, and a ctx.fail with one, fail the task once with the error cut down, not left running", async () => {
  const { client, worker, errors } = open();
  let runs = 0;
  worker.task("throws", () => {
    runs++;
    throw new TaskError(BIG, { retryable: false });
  });
  worker.task("fails", async (ctx) => {
    runs++;
    await ctx.fail(new Error(BIG), { retryable: false });
    return "unreachable";
  });
  void worker.run();
  for (const name of ["throws", "fails"]) {
    // Two attempts allowed, retryable: false — had the fail been left running, the lease's expiry would run it again.
    const task = await client.submit(name, {}, { maxAttempts: 2 });
    const ended = await client.wait(task.id, { timeoutMs: 10_000 });
    expect(ended.status).toBe("failed");
    const message = String((ended.error as { message?: unknown }).message);
    expect(ended.error).toMatchObject({ type: name === "throws" ? "TaskError" : "Error" });
    // Cut to the worker's bound with the reason, not the 20 MB the handler threw.
    expect(message.length).toBeLessThan(20_000);
    expect(message.startsWith("rrrr")).toBe(true);
    expect(message).toContain("max_allowed_packet");
  }
  // Past the lease: neither ran again (a fail that threw would have left them running).
  await new Promise((resolve) => setTimeout(resolve, WORKER.leaseMs + 500));
  expect(runs).toBe(2);
  // Encoding 20 MB may hold the event loop past a heartbeat on a busy machine: that warning is not what this checks.
  expect(errors.filter((error) => !(error instanceof EventLoopBlocked))).toEqual([]);
});
