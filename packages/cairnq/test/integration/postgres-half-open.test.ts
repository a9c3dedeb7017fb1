/**
 * A worker process whose network path to Postgres goes dark without a FIN
 * or an RST (a dropped NAT entry, a dead peer), with real processes: worker
 * A connects through a TCP proxy in this test (test/half-open-proxy.ts of
 * @cairnq/store-postgres) that stops forwarding — for the connections open
 * and for new ones — while A holds a claimed task. Required:
 *
 * - A's stranded task is recovered by worker B through lease expiry (no row
 *   lock or session left behind: the idle-in-transaction bound ends A's
 *   sessions on the server);
 * - once the path works again, A resumes work on fresh connections within
 *   tens of seconds (its dead connections are discarded, not reused);
 * - A's `stop()` (SIGTERM → serve()) does not wait on a dead connection.
 *
 * Run twice: with timeouts set short (a second or so) so it takes seconds,
 * and with the defaults and the default lease (30 s), where A must be back
 * well within one lease of the path coming back (the stated bound is two).
 * The bounds asserted are guards; the figures are printed.
 */
import { performance } from "node:perf_hooks";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { CairnQ } from "cairnq";
import { HalfOpenProxy } from "../../../store-postgres/test/half-open-proxy.ts";
import { backendsOf, closeAdmin, dropSchema, freshSchemaName, pgDsn, q } from "../support/postgres.ts";
import { Children } from "../support/processes.ts";
import type { FixtureMessage } from "../support/processes.ts";
import { describeFixtureError, until } from "../support/waiting.ts";

const SHORT = { queryTimeoutMs: 1_500, idleInTransactionTimeoutMs: 1_000, listenPingIntervalMs: 1_000, connectTimeoutMs: 2_000, keepAliveInitialDelayMs: 1_000 };

/** One run's settings: the worker's lease, its store's timeouts (`undefined`: the defaults), and how soon A must be back. */
interface Setting {
  readonly label: string;
  readonly leaseMs: number;
  readonly timeouts: typeof SHORT | undefined;
  /** The guard for A's resumption after the path comes back. */
  readonly resumeBoundMs: number;
  /** The guard for B's recovery of the held task after the cut. */
  readonly recoverBoundMs: number;
}

const SETTINGS: readonly Setting[] = [
  { label: "short timeouts, lease 4 s", leaseMs: 4_000, timeouts: SHORT, resumeBoundMs: 45_000, recoverBoundMs: 45_000 },
  // Defaults: the lease is 30 s; back well within one lease of the path's return (the stated bound is two).
  { label: "default timeouts and lease", leaseMs: 30_000, timeouts: undefined, resumeBoundMs: 30_000, recoverBoundMs: 60_000 },
];

/** {@link describeFixtureError} and the start of the error's message. */
function describeError(message: FixtureMessage): string {
  return `${describeFixtureError(message)} ${String(message.message).slice(0, 60)}`;
}

describe("a worker process whose connections go half-open", () => {
  const children = new Children();
  let proxy: HalfOpenProxy | undefined;
  let schema: string | undefined;
  let api: CairnQ | undefined;

  afterEach(async () => {
    try {
      await children.reap();
    } finally {
      await api?.close();
      api = undefined;
      await proxy?.close();
      proxy = undefined;
      if (schema !== undefined) await dropSchema(schema);
      schema = undefined;
    }
  });
  afterAll(closeAdmin);

  it("default timeouts and lease: connections that go dark while new ones would work (a NAT entry dropped) cost A well under a lease", async () => {
    schema = await freshSchemaName("cq_halfopen_freeze");
    proxy = new HalfOpenProxy(pgDsn());
    const proxied = await proxy.listen();
    api = CairnQ.postgres(pgDsn(), { schema });
    await api.connect();
    const a = children.spawn("worker-a", "worker.mjs", [`postgres:${proxied}#schema=${schema}`, JSON.stringify({ queues: ["a-only"], concurrency: 2, pollIntervalMs: 500 })]);
    await a.next("ready");
    // Warm: A's pool holds connections (and its LISTEN one), all through the proxy.
    for (let n = 0; n < 5; n += 1) expect(await api.call("double", { n }, { queue: "a-only", waitTimeoutMs: 30_000 })).toMatchObject({ doubled: 2 * n, pid: a.pid });
    // Every connection A has goes dark; a new one would work at once.
    const frozenAt = performance.now();
    expect(proxy.freeze(), "A's open connections").toBeGreaterThanOrEqual(1);
    const resumed = await api.call("double", { n: 21 }, { queue: "a-only", waitTimeoutMs: 60_000 });
    const resumedMs = performance.now() - frozenAt;
    expect(resumed).toEqual({ n: 21, doubled: 42, pid: a.pid });
    // The default lease is 30 s: back well within it (the stated bound is two leases).
    expect(resumedMs).toBeLessThan(30_000);
    console.log(
      `[postgres half-open, worker processes, default timeouts and lease] connections frozen (new ones work): A ran a task again ${resumedMs.toFixed(0)} ms later; ` +
        `A's onError: ${[...new Set(a.of("on-error").map((m) => describeError(m).split(" ").slice(0, 3).join(" ")))].join(", ")}`,
    );
  }, 120_000);

  it.each(SETTINGS)("$label: its stranded task is recovered by another worker through lease expiry, it resumes on fresh connections, and stop() does not wait on a dead connection", async (setting) => {
    const LEASE_MS = setting.leaseMs;
    // A session cut mid-transaction is ended by the server after idleInTransactionTimeoutMs (SET LOCAL per transaction).
    const idleBoundMs = (setting.timeouts?.idleInTransactionTimeoutMs ?? 60_000) + 15_000;
    schema = await freshSchemaName("cq_halfopen_proc");
    proxy = new HalfOpenProxy(pgDsn());
    const proxied = await proxy.listen();
    api = CairnQ.postgres(pgDsn(), { schema });
    await api.connect();

    // A: through the proxy; it alone serves queue "a-only", so work there proves A itself resumed.
    const a = children.spawn("worker-a", "worker.mjs", [
      `postgres:${proxied}#schema=${schema}`,
      JSON.stringify({ queues: ["default", "a-only"], concurrency: 2, leaseMs: LEASE_MS, pollIntervalMs: 500, stopTimeoutMs: 1_000, ...(setting.timeouts === undefined ? {} : { timeouts: setting.timeouts }), hold: "forever" }),
    ]);
    await a.next("ready");
    const held = await api.submit("hold", {}, { maxAttempts: 3 });
    const started = await a.next("started", 30_000);
    expect(started).toMatchObject({ taskId: held.id, attempt: 1 });
    // A warm-up on A's own queue, so its pool has connections to lose.
    expect(await api.call("double", { n: 1 }, { queue: "a-only", waitTimeoutMs: 30_000 })).toMatchObject({ doubled: 2, pid: a.pid });

    // The path goes dark: every connection A has, and every one it opens, carries nothing — no FIN, no RST.
    const cutAt = performance.now();
    expect(proxy.cut(), "A's open connections").toBeGreaterThanOrEqual(1);
    // A's lease now ends where its last renewal put it — at the claim or a heartbeat before the cut (every 10 s with
    // the default lease), not a lease after the cut: a warm-up call slow on a loaded machine put the claim 0.7 s
    // before the cut in a gate. A can no longer move it, so B may take the task only after it.
    const leaseEnd = (await api.get(held.id))?.lease_until_ms;
    if (typeof leaseEnd !== "number") throw new Error(`the held task has no lease after the cut: ${JSON.stringify(await api.get(held.id))}`);

    // B (direct) recovers the task once A's lease, which A can no longer renew, has expired.
    const b = children.spawn("worker-b", "worker.mjs", [`postgres:${pgDsn()}#schema=${schema}`, JSON.stringify({ concurrency: 2, leaseMs: LEASE_MS, pollIntervalMs: 500 })]);
    const context = (): string =>
      [a, b].map((w) => `\n${w.label} ${w.alive ? "alive" : "exited"}; onError: ${w.of("on-error").map(describeError).join("; ") || "none"}${w.tail()}`).join("");
    const recovered = await until(
      "the held task succeeded on worker B",
      async () => {
        const row = await api!.get(held.id);
        return row?.status === "succeeded" ? row : undefined;
      },
      setting.recoverBoundMs,
      context,
    );
    expect(recovered.attempt).toBe(2);
    expect(recovered.result).toEqual({ pid: b.pid, attempt: 2 });
    expect(b.of("started")).toEqual([expect.objectContaining({ taskId: held.id, attempt: 2 })]);
    const recoveredMs = performance.now() - cutAt;
    // lease_until_ms is on the database's clock, this host's: B's claim saw it passed before the task could succeed.
    expect(Date.now(), "recovery waited for the lease to expire").toBeGreaterThanOrEqual(leaseEnd);

    // Server side: no session of A is left idle in a transaction (and holding row locks) beyond the bound.
    await until(
      "A's sessions idle in transaction ended by the server",
      async () => ((await backendsOf(a.pid)).some((backend) => backend.state?.startsWith("idle in transaction")) ? undefined : true),
      idleBoundMs,
      context,
    );

    // A noticed: its calls failed at their bounds instead of hanging (and were reported to onError).
    await until("A reporting the dead connections", () => (a.of("on-error").length > 0 ? true : undefined), 15_000, context);

    // The path works again for new connections (the dark ones stay dark). A resumes on fresh connections.
    proxy.heal();
    const healedAt = performance.now();
    const resumed = await api.call("double", { n: 21 }, { queue: "a-only", waitTimeoutMs: setting.resumeBoundMs });
    expect(resumed).toEqual({ n: 21, doubled: 42, pid: a.pid });
    const resumedMs = performance.now() - healedAt;
    expect(a.alive, `worker A${context()}`).toBe(true);
    // Its dead connections were discarded, not reused: every backend it has now answers, none is the old one's.
    expect((await backendsOf(a.pid)).length).toBeGreaterThan(0);

    // stop() on dark connections: cut again (A's live connections go dark under it) and SIGTERM A. It must not
    // wait on them — the bound is its stopTimeoutMs (the held handler never returns) plus the query and connect bounds.
    proxy.cut();
    const stopAt = performance.now();
    const exit = await children.stop(a, 30_000);
    const stopMs = performance.now() - stopAt;
    expect(exit.signal, `worker A's exit${a.tail()}`).toBeNull();
    expect(b.alive).toBe(true);
    expect(await children.stop(b), `worker B after SIGTERM${b.tail()}`).toEqual({ code: 0, signal: null });
    // The server still sees the sessions behind the dark connections (no FIN reached it), but none of them is left
    // inside a transaction holding locks: the idle-in-transaction bound ended those.
    await until(
      "no session of the stopped A holding locks",
      async () => {
        const held = await q(
          "SELECT a.pid, a.state FROM pg_stat_activity a JOIN pg_locks l ON l.pid = a.pid WHERE a.application_name = $1 AND l.locktype IN ('relation', 'tuple', 'transactionid')",
          [`cairnq-fixture-${a.pid}`],
        );
        return held.length === 0 ? true : undefined;
      },
      idleBoundMs,
    );

    console.log(
      `[postgres half-open, worker processes, ${setting.label}] held task recovered by B ${recoveredMs.toFixed(0)} ms after the cut (lease ${LEASE_MS} ms); ` +
        `A resumed on fresh connections ${resumedMs.toFixed(0)} ms after the path came back; ` +
        `A stopped ${stopMs.toFixed(0)} ms after SIGTERM on dark connections (exit code ${exit.code}); ` +
        `A's onError: ${[...new Set(a.of("on-error").map((m) => describeError(m).split(" ").slice(0, 3).join(" ")))].join(", ")}`,
    );
  }, 240_000);
});
