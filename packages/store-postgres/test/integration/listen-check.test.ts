/**
 * The LISTEN check runs on connect and after every reconnect: a LISTEN
 * connection that heard at first, then is reopened where it cannot hear
 * (here the connector's second connection goes through PgBouncer in
 * transaction mode), is found deaf after the reconnect — reported once,
 * push wakeups given up, wakes turned into plain sleeps.
 */
import { ListenUnavailable } from "@cairnq/protocol";
import type { ListenConnector } from "@cairnq/store-postgres";
import type { PgBouncer } from "@cairnq/test-support";
import { startPgBouncer } from "@cairnq/test-support";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { openStore, pgDsn, q, schemaName, until } from "../helpers.js";

describe("the LISTEN check", () => {
  let bouncer: PgBouncer | undefined;
  afterAll(() => bouncer?.stop());

  it("runs again after a reconnect: a LISTEN that heard, reopened where it cannot, is found deaf and said once", async () => {
    bouncer = await startPgBouncer({ poolMode: "transaction", poolSize: 2 });
    const targets = [pgDsn(), bouncer.dsn];
    let opened = 0;
    const connector: ListenConnector = async () => {
      const client = new pg.Client({ connectionString: targets[Math.min(opened, targets.length - 1)] });
      opened += 1;
      client.on("error", () => {});
      await client.connect();
      return client;
    };
    const errors: unknown[] = [];
    const warnings: string[] = [];
    const store = openStore(undefined, {
      schema: schemaName(),
      listen: connector,
      timeouts: { listenCheckTimeoutMs: 1_000 },
      onError: (error) => errors.push(error),
      logger: { warn: (message) => warnings.push(message) },
    });
    await store.connect();
    expect(await until(() => store.listenState === "listening", 10_000)).toBe(true);
    expect(store.capabilities.pushWakeups).toBe(true);

    // The LISTEN connection dies; the store reconnects (after 1 s), this time through the pooler.
    const pid = store.dialect.wakeups.backendPid;
    await q("SELECT pg_terminate_backend($1)", [pid]);
    expect(await until(() => store.listenState === "deaf", 15_000)).toBe(true);
    expect(opened).toBe(2);
    expect(store.capabilities.pushWakeups).toBe(false);
    const started = performance.now();
    await store.claimWake(["default"], 150);
    expect(performance.now() - started).toBeGreaterThanOrEqual(140);

    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect(errors.filter((error) => error instanceof ListenUnavailable)).toHaveLength(1);
    expect(warnings).toHaveLength(1);
    expect(opened).toBe(2);
  }, 60_000);
});
