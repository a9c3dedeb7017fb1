import { EventEmitter } from "node:events";
import type { StoreSignal } from "@cairnq/protocol";
import { ListenUnavailable } from "@cairnq/protocol";
import { afterEach, describe, expect, it, vi } from "vitest";
import { PostgresStore } from "../../src/index.js";
import { doneRowId } from "../../src/postgres-done-row.js";
import type { ListenClient } from "../../src/postgres-wakeups.js";
import { LISTEN_BACKOFF_INITIAL_MS, LISTEN_BACKOFF_MAX_MS, PostgresWakeups } from "../../src/postgres-wakeups.js";
import { openStore, pgDsn, q, schemaName, until } from "../helpers.js";

/** A stand-in for a connected `pg.Client`: records queries, lets the test notify, fail or end it. */
class FakeClient extends EventEmitter implements ListenClient {
  readonly queries: string[] = [];
  ended = false;
  processID = 4242;

  query(sql: string): Promise<unknown> {
    this.queries.push(sql);
    return Promise.resolve({});
  }

  end(): Promise<void> {
    this.ended = true;
    return Promise.resolve();
  }

  notify(channel: string, payload: string): void {
    this.emit("notification", { channel, payload });
  }
}

async function flush(): Promise<void> {
  for (let i = 0; i < 5; i++) await Promise.resolve();
}

function elapsed(start: number): number {
  return Date.now() - start;
}

describe("PostgresWakeups over a fake LISTEN connection (§9)", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  async function listening(): Promise<{ wakeups: PostgresWakeups; client: FakeClient; errors: unknown[] }> {
    const client = new FakeClient();
    const errors: unknown[] = [];
    const wakeups = new PostgresWakeups(() => Promise.resolve(client), (err) => errors.push(err));
    // Wants both channels before it connects, so both are LISTENed at once.
    wakeups.subscribe(() => {});
    wakeups.start();
    await wakeups.whenSettled();
    expect(wakeups.state).toBe("listening");
    expect(client.queries).toEqual(["LISTEN cairnq_queued; LISTEN cairnq_done"]);
    expect(wakeups.backendPid).toBe(4242);
    return { wakeups, client, errors };
  }

  it("lends the connection to one statement at a time, only while listening and idle; its own LISTEN waits behind a lent statement", async () => {
    const client = new FakeClient();
    const wakeups = new PostgresWakeups(() => Promise.resolve(client));
    expect(wakeups.lend()).toBeNull();
    wakeups.start();
    await wakeups.whenSettled();
    const loan = wakeups.lend();
    expect(loan?.client).toBe(client);
    expect(wakeups.lend()).toBeNull();
    // A channel wanted now is LISTENed only once the lent statement is answered: never two queries in flight.
    wakeups.subscribe(() => {}, ["done"]);
    await flush();
    expect(client.queries).toEqual([]);
    loan?.release();
    await flush();
    expect(client.queries).toEqual(["LISTEN cairnq_done"]);
    await flush();
    const again = wakeups.lend();
    expect(again?.client).toBe(client);
    again?.release();
    await wakeups.close();
    expect(wakeups.lend()).toBeNull();
  });

  it("a LISTEN of its own that never answers (no read timeout on a path gone dark) is still ended by the ping's deadline, counted from when the ping was due", async () => {
    class Silent extends FakeClient {
      override query(sql: string): Promise<unknown> {
        // The late LISTEN (a channel wanted after connecting) goes out on a connection that no longer answers.
        return sql === "LISTEN cairnq_done" ? (this.queries.push(sql), new Promise(() => {})) : super.query(sql);
      }
    }
    const client = new Silent();
    const errors: unknown[] = [];
    const wakeups = new PostgresWakeups(() => Promise.resolve(client), (err) => errors.push(err), 100);
    wakeups.start();
    await wakeups.whenSettled();
    wakeups.subscribe(() => {}, ["done"]);
    expect(await until(() => wakeups.state === "retrying")).toBe(true);
    expect(errors.map(String)).toEqual([expect.stringContaining("did not answer a liveness ping within 100ms")]);
    expect(client.ended).toBe(true);
    await wakeups.close();
  });

  it("claimWake ends on a queued signal for one of its queues, not for another queue", async () => {
    const { wakeups, client } = await listening();
    let woke = false;
    const wait = wakeups.claimWake(["a", "b"], 10_000).then(() => (woke = true));
    client.notify("cairnq_queued", "c");
    await flush();
    expect(woke).toBe(false);
    client.notify("cairnq_queued", "b");
    await wait;
    expect(woke).toBe(true);
    await wakeups.close();
  });

  it("buffers a signal for a registered queue while nobody waits, and the next claimWake consumes it; unregistered queues are not buffered", async () => {
    const { wakeups, client } = await listening();
    wakeups.register(["jobs"]);
    client.notify("cairnq_queued", "jobs");
    client.notify("cairnq_queued", "other");
    let start = Date.now();
    await wakeups.claimWake(["jobs"], 5_000);
    expect(elapsed(start)).toBeLessThan(1000);
    start = Date.now();
    await wakeups.claimWake(["jobs"], 60); // consumed: a full wait now
    expect(elapsed(start)).toBeGreaterThanOrEqual(50);
    start = Date.now();
    await wakeups.claimWake(["other"], 60); // never registered when its signal came
    expect(elapsed(start)).toBeGreaterThanOrEqual(50);
    await wakeups.close();
  });

  it("taskDoneWake ends on a done signal for its id only; subscribers hear every signal until they unsubscribe", async () => {
    const { wakeups, client } = await listening();
    const signals: StoreSignal[] = [];
    const unsubscribe = wakeups.subscribe((s) => signals.push(s));
    let woke = false;
    const wait = wakeups.taskDoneWake("task_1", 10_000).then(() => (woke = true));
    client.notify("cairnq_done", "task_2");
    await flush();
    expect(woke).toBe(false);
    client.notify("cairnq_done", "task_1");
    await wait;
    client.notify("cairnq_queued", "q");
    expect(signals).toEqual([
      { reason: "done", taskId: "task_2" },
      { reason: "done", taskId: "task_1" },
      { reason: "queued", queue: "q" },
    ]);
    unsubscribe();
    client.notify("cairnq_queued", "q");
    expect(signals).toHaveLength(3);
    await wakeups.close();
  });

  it("taskDoneWake resolves with the terminal row a done-row notification carries; the plain done after it is the one signal; a plain done alone resolves with nothing", async () => {
    const { wakeups, client } = await listening();
    await wakeups.taskDoneWake("warm-up", 1);
    const signals: StoreSignal[] = [];
    wakeups.subscribe((s) => signals.push(s));
    const row = {
      id: "task_1", name: "n", queue: "default", status: "succeeded", payload: "{}", result: '{"ok":true}', error: null, metadata: "{}",
      progress: 1, message: null, attempt: 1, max_attempts: 3, priority: 0, worker_id: null, lease_until_ms: null, run_at_ms: 5,
      cancel_requested_at_ms: null, parent_id: null, root_id: null, correlation_id: null, created_at_ms: 5, updated_at_ms: 9, completed_at_ms: 9,
    };
    let woke: unknown = "pending";
    const wait = wakeups.taskDoneWake("task_1", 10_000).then((r) => (woke = r));
    // Not a row for this wait: a malformed payload, a row that is not terminal, another task's row.
    client.notify("cairnq_ext_done_row", "{");
    client.notify("cairnq_ext_done_row", "[1]");
    client.notify("cairnq_ext_done_row", JSON.stringify({ ...row, status: "running" }));
    client.notify("cairnq_ext_done_row", JSON.stringify({ ...row, result: "{not json" }));
    client.notify("cairnq_ext_done_row", JSON.stringify({ ...row, id: "task_2" }));
    // Not opening with its id (how row_to_json writes it): never parsed, so never used.
    const { id: _id, ...rest } = row;
    client.notify("cairnq_ext_done_row", JSON.stringify({ ...rest, id: "task_1" }));
    // Opening with this id but carrying another (a duplicate key: JSON.parse keeps the last).
    client.notify("cairnq_ext_done_row", `{"id":"task_1",${JSON.stringify({ ...row, id: "task_9" }).slice(1)}`);
    await flush();
    expect(woke).toBe("pending");
    client.notify("cairnq_ext_done_row", JSON.stringify(row));
    client.notify("cairnq_done", "task_1");
    await wait;
    expect(woke).toMatchObject({ id: "task_1", status: "succeeded", result: { ok: true }, payload: {}, attempt: 1, completed_at_ms: 9 });
    expect(signals).toEqual([{ reason: "done", taskId: "task_1" }]);
    // A v1 peer's settlement: only the plain done, and the wait resolves with nothing (its caller reads).
    const plain = wakeups.taskDoneWake("task_3", 10_000);
    client.notify("cairnq_done", "task_3");
    expect(await plain).toBeUndefined();
    await wakeups.close();
  });

  it("doneRowId reads the id a row payload opens with, without parsing it; anything else is null", () => {
    expect(doneRowId('{"id":"task_1","name":"n"}')).toBe("task_1");
    expect(doneRowId('{"name":"n","id":"task_1"}')).toBeNull();
    expect(doneRowId('{"id":"unterminated')).toBeNull();
    expect(doneRowId('{"id":"a\\"b","name":"n"}')).toBeNull();
    expect(doneRowId("")).toBeNull();
  });

  it("a throwing subscriber is reported, not thrown, and the others still hear the signal", async () => {
    const { wakeups, client, errors } = await listening();
    const boom = new Error("subscriber bug");
    wakeups.subscribe(() => {
      throw boom;
    });
    const heard: StoreSignal[] = [];
    wakeups.subscribe((s) => heard.push(s));
    client.notify("cairnq_done", "t");
    expect(heard).toEqual([{ reason: "done", taskId: "t" }]);
    expect(errors).toEqual([boom]);
    await wakeups.close();
  });

  it("a dropped connection releases every waiter, reports the error, and reconnects after 1 s; signals flow again", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"] });
    const first = new FakeClient();
    const second = new FakeClient();
    const clients = [first, second];
    const errors: unknown[] = [];
    const wakeups = new PostgresWakeups(() => Promise.resolve(clients.shift() as FakeClient), (err) => errors.push(err));
    wakeups.subscribe(() => {});
    wakeups.start();
    await wakeups.whenSettled();
    let released = 0;
    const waits = [wakeups.claimWake(["q"], 60_000), wakeups.taskDoneWake("t", 60_000)].map((p) => p.then(() => (released += 1)));
    const dropped = new Error("terminating connection due to administrator command");
    first.emit("error", dropped);
    first.emit("end");
    await Promise.all(waits);
    expect(released).toBe(2);
    expect(errors).toEqual([dropped]);
    expect(first.ended).toBe(true);
    expect(wakeups.state).toBe("retrying");
    expect(wakeups.backendPid).toBeNull();
    // While down, waits are plain sleeps.
    let woke = false;
    void wakeups.claimWake(["q"], 500).then(() => (woke = true));
    vi.advanceTimersByTime(LISTEN_BACKOFF_INITIAL_MS - 1);
    await flush();
    expect(woke).toBe(true);
    expect(second.queries).toEqual([]);
    vi.advanceTimersByTime(1);
    await wakeups.whenSettled();
    expect(wakeups.state).toBe("listening");
    // The task wait wanted the done-row channel too (it waits for rows): LISTENed again with the rest.
    expect(second.queries).toEqual(["LISTEN cairnq_queued; LISTEN cairnq_done; LISTEN cairnq_ext_done_row"]);
    // Events of the old connection are ignored.
    first.emit("error", new Error("late"));
    expect(errors).toHaveLength(1);
    // The queue registered before the drop was marked buffered on reconnect (signals may have been missed).
    await wakeups.claimWake(["q"], 60_000);
    const wait = wakeups.taskDoneWake("t2", 60_000);
    second.notify("cairnq_done", "t2");
    await wait;
    await wakeups.close();
  });

  it("failed connection attempts back off 1 s, 2 s, 4 s … up to 30 s", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const attempts: number[] = [];
    let now = 0;
    const wakeups = new PostgresWakeups(() => {
      attempts.push(now);
      return Promise.reject(Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }));
    });
    wakeups.start();
    for (let step = 0; step < 8; step++) {
      await wakeups.whenSettled();
      expect(wakeups.state).toBe("retrying");
      const delay = Math.min(LISTEN_BACKOFF_INITIAL_MS * 2 ** step, LISTEN_BACKOFF_MAX_MS);
      vi.advanceTimersByTime(delay - 1);
      now += delay - 1;
      await flush();
      expect(attempts).toHaveLength(step + 1);
      now += 1;
      vi.advanceTimersByTime(1);
    }
    await wakeups.whenSettled();
    expect(attempts).toEqual([0, 1000, 3000, 7000, 15000, 31000, 61000, 91000, 121000]);
    await wakeups.close();
    expect(wakeups.state).toBe("closed");
  });

  it.each([
    ["ListenUnavailable from the connector", () => Promise.reject(new ListenUnavailable())],
    ["feature_not_supported from LISTEN (a transaction-mode pooler)", () => {
      const client = new FakeClient();
      client.query = () => Promise.reject(Object.assign(new Error("LISTEN is not supported"), { code: "0A000" }));
      return Promise.resolve(client);
    }],
  ])("%s → polls for good: no retry, plain sleeps", async (_label, connector) => {
    const wakeups = new PostgresWakeups(connector);
    wakeups.register(["q"]);
    wakeups.start();
    await wakeups.whenSettled();
    expect(wakeups.state).toBe("unavailable");
    const start = Date.now();
    await wakeups.claimWake(["q"], 60);
    expect(elapsed(start)).toBeGreaterThanOrEqual(50);
    await wakeups.close();
  });

  it("LISTENs only on the channels asked for, when asked; a channel LISTENed late releases its waiters; subscribers hear only their reasons", async () => {
    const client = new FakeClient();
    const wakeups = new PostgresWakeups(() => Promise.resolve(client));
    wakeups.start();
    await wakeups.whenSettled();
    expect(wakeups.state).toBe("listening");
    expect(client.queries).toEqual([]);
    // A claim wait wants queued signals: LISTEN on that channel alone; the wait re-reads once it took effect.
    let released = false;
    const claimWait = wakeups.claimWake(["q"], 60_000).then(() => (released = true));
    expect(client.queries).toEqual(["LISTEN cairnq_queued"]);
    await claimWait;
    expect(released).toBe(true);
    // The queue was buffered too: the next wait ends at once, whatever it missed.
    await wakeups.claimWake(["q"], 60_000);
    // A subscriber of done signals: LISTEN cairnq_done; it hears no queued signal.
    const heard: StoreSignal[] = [];
    const unsubscribe = wakeups.subscribe((signal) => heard.push(signal), ["done"]);
    expect(client.queries).toEqual(["LISTEN cairnq_queued", "LISTEN cairnq_done"]);
    client.notify("cairnq_queued", "q");
    client.notify("cairnq_done", "t1");
    expect(heard).toEqual([{ reason: "done", taskId: "t1" }]);
    unsubscribe();
    // A task wait wants the done-row channel as well (a subscriber never does: it hears no rows).
    await wakeups.taskDoneWake("t2", 1);
    expect(client.queries).toEqual(["LISTEN cairnq_queued", "LISTEN cairnq_done", "LISTEN cairnq_ext_done_row"]);
    // Asked again: nothing more to LISTEN.
    await wakeups.taskDoneWake("t3", 1);
    wakeups.subscribe(() => {});
    expect(client.queries).toEqual(["LISTEN cairnq_queued", "LISTEN cairnq_done", "LISTEN cairnq_ext_done_row"]);
    await wakeups.close();
  });

  it("the check's channel is UNLISTENed once it heard: a process that wants no signal is no listener", async () => {
    const client = new FakeClient();
    const check = { notify: (channel: string, payload: string) => Promise.resolve(setImmediate(() => client.notify(channel, payload))).then(() => {}) };
    const wakeups = new PostgresWakeups(() => Promise.resolve(client), () => {}, 0, check);
    wakeups.start();
    await wakeups.whenSettled();
    expect(wakeups.state).toBe("listening");
    const [listen, unlisten] = client.queries;
    expect(client.queries).toHaveLength(2);
    expect(listen).toMatch(/^LISTEN cairnq_check_[0-9a-f]+$/);
    expect(unlisten).toBe(`UN${listen as string}`);
    await wakeups.taskDoneWake("t", 1);
    expect(client.queries.slice(2)).toEqual(["LISTEN cairnq_done; LISTEN cairnq_ext_done_row"]);
    await wakeups.close();
  });

  it("close while the check waits for its NOTIFY ends the connection at once (a ref'd socket left open would keep the process alive)", async () => {
    const client = new FakeClient();
    let sent!: () => void;
    const notified = new Promise<void>((resolve) => (sent = resolve));
    // The check's NOTIFY commits but never comes back: the check would wait out its timeout.
    const check = { timeoutMs: 3_000, notify: () => Promise.resolve().then(sent) };
    const wakeups = new PostgresWakeups(() => Promise.resolve(client), () => {}, 0, check);
    wakeups.start();
    await notified;
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(wakeups.state).toBe("connecting");
    const start = Date.now();
    await wakeups.close();
    expect(elapsed(start)).toBeLessThan(1_000);
    expect(client.ended).toBe(true);
    expect(wakeups.state).toBe("closed");
  });

  it("a channel wanted while connecting is LISTENed with the connection's first LISTEN", async () => {
    let connected!: (client: FakeClient) => void;
    const client = new FakeClient();
    const wakeups = new PostgresWakeups(() => new Promise<FakeClient>((resolve) => (connected = resolve)));
    wakeups.start();
    expect(wakeups.state).toBe("connecting");
    void wakeups.taskDoneWake("t", 10);
    connected(client);
    await wakeups.whenSettled();
    expect(client.queries).toEqual(["LISTEN cairnq_done; LISTEN cairnq_ext_done_row"]);
    await wakeups.close();
  });

  it.each([
    ["feature_not_supported", { code: "0A000" }, "unavailable"],
    ["any other error", { code: "57P01" }, "retrying"],
  ])("a LISTEN asked for later that fails with %s → %s", async (_label, fields, state) => {
    const client = new FakeClient();
    const errors: unknown[] = [];
    const wakeups = new PostgresWakeups(() => Promise.resolve(client), (err) => errors.push(err));
    wakeups.start();
    await wakeups.whenSettled();
    const failure = Object.assign(new Error("LISTEN failed"), fields);
    client.query = () => Promise.reject(failure);
    await wakeups.claimWake(["q"], 60_000);
    expect(wakeups.state).toBe(state);
    expect(errors).toEqual([failure]);
    await wakeups.close();
  });

  it("without a connector every wake is a plain sleep and an abort ends it", async () => {
    const wakeups = new PostgresWakeups(null);
    wakeups.start();
    expect(wakeups.state).toBe("off");
    const controller = new AbortController();
    const start = Date.now();
    setTimeout(() => controller.abort(), 20);
    await wakeups.taskDoneWake("t", 10_000, controller.signal);
    expect(elapsed(start)).toBeLessThan(2000);
  });

  it("close releases waiters and ends the connection; later waits are plain sleeps", async () => {
    const { wakeups, client } = await listening();
    const wait = wakeups.claimWake(["q"], 60_000);
    await wakeups.close();
    await wait;
    expect(client.ended).toBe(true);
    expect(wakeups.state).toBe("closed");
    await wakeups.close();
  });
});

describe("push wakeups of a PostgresStore against a real server (§9)", () => {
  async function listeningStore(options: ConstructorParameters<typeof PostgresStore>[1] = {}): Promise<PostgresStore> {
    const store = openStore(pgDsn(), { schema: schemaName(), ...options });
    // Wants every channel from the start, so "listening" means all are LISTENed (none is added later): the signals'
    // two, and the done-row channel a task wait adds. A wait that first asked for it after "listening" raced its
    // LISTEN: a cancel that committed before it took effect woke its wait without the row (a gate failed on it).
    store.subscribe(() => {});
    await store.taskDoneWake("warm-up", 1);
    await store.connect();
    expect(await until(() => store.listenState === "listening")).toBe(true);
    return store;
  }

  it("claimWake resolves early when a task is submitted to one of its queues", async () => {
    const store = await listeningStore();
    const queue = `q_${schemaName("w")}`;
    expect(await store.claim({ queues: [queue], workerId: "w" })).toEqual([]);
    const start = Date.now();
    const wait = store.claimWake([queue], 10_000);
    setTimeout(() => void store.submit({ name: "n", queue }), 50);
    await wait;
    expect(elapsed(start)).toBeLessThan(3000);
  });

  it("taskDoneWake resolves early when the task completes (another store's write)", async () => {
    const store = await listeningStore();
    const other = openStore(pgDsn(), { schema: store.schema as string, listen: false });
    const task = await other.submit({ name: "n" });
    await other.claim({ queues: ["default"], workerId: "w" });
    const start = Date.now();
    const wait = store.taskDoneWake(task.id, 10_000);
    setTimeout(() => void other.complete({ taskId: task.id, workerId: "w", result: { ok: true } }), 50);
    await wait;
    expect(elapsed(start)).toBeLessThan(3000);
  });

  it("a CairnQ store's complete, fail and cancel send the terminal row: each taskDoneWake resolves with the row a read returns", async () => {
    const store = await listeningStore();
    const other = openStore(pgDsn(), { schema: store.schema as string, listen: false });
    // A complete, a succeed and a fail, each alone in its statement (one per rule), and a client's cancel of a queued task.
    const tasks = await Promise.all([other.submit({ name: "n" }), other.submit({ name: "n" }), other.submit({ name: "n" })]);
    const queued = await other.submit({ name: "n", queue: "elsewhere" });
    await other.claim({ queues: ["default"], workerId: "w", limit: 3 });
    const waits = [...tasks, queued].map((task) => store.taskDoneWake(task.id, 10_000));
    await Promise.all([
      other.complete({ taskId: tasks[0].id, workerId: "w", result: { ok: 1 } }),
      other.succeed({ taskId: tasks[1].id, workerId: "w", result: "fine" }),
      other.fail({ taskId: tasks[2].id, workerId: "w", error: { message: "no" }, retryable: false }),
      other.cancel(queued.id),
    ]);
    const rows = await Promise.all(waits);
    expect(rows.map((row) => (row as { status?: string } | undefined)?.status)).toEqual(["succeeded", "succeeded", "failed", "canceled"]);
    for (const [i, task] of [...tasks, queued].entries()) expect(rows[i]).toEqual(await store.get(task.id));
    await other.close();
  });

  it("settlements combined into one multi-row statement send no rows: their waits wake early without one (the caller reads)", async () => {
    const store = await listeningStore();
    const other = openStore(pgDsn(), { schema: store.schema as string, listen: false });
    const tasks = await Promise.all([other.submit({ name: "n" }), other.submit({ name: "n" })]);
    await other.claim({ queues: ["default"], workerId: "w", limit: 2 });
    const start = Date.now();
    const waits = tasks.map((task) => store.taskDoneWake(task.id, 10_000));
    await Promise.all(tasks.map((task) => other.complete({ taskId: task.id, workerId: "w", result: null })));
    expect(await Promise.all(waits)).toEqual([undefined, undefined]);
    expect(elapsed(start)).toBeLessThan(5000);
    await other.close();
  });

  it("a v1 peer's settlement and a row too large for a NOTIFY: the settlement stands, the wait wakes early without a row", async () => {
    const store = await listeningStore();
    const other = openStore(pgDsn(), { schema: store.schema as string, listen: false });
    const [peer, large] = await Promise.all([other.submit({ name: "n" }), other.submit({ name: "n" })]);
    await other.claim({ queues: ["default"], workerId: "w", limit: 2 });
    const start = Date.now();
    const peerWait = store.taskDoneWake(peer.id, 10_000);
    // What a v1 peer runs: the trigger's plain cairnq_done only.
    await q(`UPDATE "${store.schema as string}".cairnq_tasks SET status = 'succeeded', worker_id = NULL, lease_until_ms = NULL, completed_at_ms = 1 WHERE id = $1`, [peer.id]);
    expect(await peerWait).toBeUndefined();
    const largeWait = store.taskDoneWake(large.id, 10_000);
    const result = "x".repeat(10_000);
    expect(await other.complete({ taskId: large.id, workerId: "w", result })).toMatchObject({ status: "succeeded", result });
    expect(await largeWait).toBeUndefined();
    expect(elapsed(start)).toBeLessThan(5000);
    await other.close();
  });

  it("the LISTEN connection killed with pg_terminate_backend: no crash, waiters released, reconnect, wakeups resume", async () => {
    const errors: { error: unknown; source: string }[] = [];
    const store = await listeningStore({ onError: (error, info) => errors.push({ error, source: info.source }) });
    const pid = store.dialect.wakeups.backendPid;
    expect(typeof pid).toBe("number");
    const queue = `q_${schemaName("k")}`;
    await store.claim({ queues: [queue], workerId: "w" });
    const start = Date.now();
    const released = store.claimWake([queue], 20_000);
    expect(await q("SELECT pg_terminate_backend($1) AS killed", [pid])).toEqual([{ killed: true }]);
    await released;
    expect(elapsed(start)).toBeLessThan(5000);
    expect(await until(() => store.listenState === "retrying" || store.listenState === "listening")).toBe(true);
    expect(errors.length).toBeGreaterThan(0);
    expect(errors.every((e) => e.source === "listen")).toBe(true);
    // Reconnects after the 1 s backoff, on a new backend.
    expect(await until(() => store.listenState === "listening", 5000)).toBe(true);
    expect(store.dialect.wakeups.backendPid).not.toBe(pid);
    // The store kept working meanwhile, and push wakeups work again.
    expect(await store.claimWake([queue], 10_000)).toBeUndefined(); // the buffered reconnect wake
    const again = Date.now();
    const wait = store.claimWake([queue], 10_000);
    setTimeout(() => void store.submit({ name: "n", queue }), 50);
    await wait;
    expect(elapsed(again)).toBeLessThan(3000);
  });

  it("listen: false → no LISTEN connection, pushWakeups false, wakes are plain sleeps", async () => {
    const store = openStore(pgDsn(), { schema: schemaName(), listen: false });
    await store.connect();
    expect(store.capabilities.pushWakeups).toBe(false);
    expect(store.listenState).toBe("off");
    const start = Date.now();
    await store.claimWake(["default"], 60);
    expect(elapsed(start)).toBeGreaterThanOrEqual(50);
  });

  it("a listen connector that throws ListenUnavailable → the store polls for good and works", async () => {
    const errors: unknown[] = [];
    const store = openStore(pgDsn(), {
      schema: schemaName(),
      listen: () => Promise.reject(new ListenUnavailable()),
      onError: (error) => errors.push(error),
    });
    await store.connect();
    expect(await until(() => store.listenState === "unavailable")).toBe(true);
    // Refused for good: the store says it has no push wakeups, so callers poll as for no LISTEN.
    expect(store.capabilities.pushWakeups).toBe(false);
    expect(errors[0]).toBeInstanceOf(ListenUnavailable);
    const task = await store.submit({ name: "n" });
    const start = Date.now();
    await store.taskDoneWake(task.id, 60);
    expect(elapsed(start)).toBeGreaterThanOrEqual(50);
  });

  it("close() ends the LISTEN connection", async () => {
    const store = new PostgresStore(pgDsn(), { schema: schemaName() });
    await store.connect();
    expect(await until(() => store.listenState === "listening")).toBe(true);
    const pid = store.dialect.wakeups.backendPid;
    await store.close();
    expect(store.listenState).toBe("closed");
    expect(await until(async () => (await q("SELECT 1 FROM pg_stat_activity WHERE pid = $1", [pid])).length === 0)).toBe(true);
  });
});
