/**
 * After a failover the address a pool connects to may lead, for a while, to
 * a server that refuses writes (the old primary, now a standby). A pooled
 * connection opened then keeps refusing (SQLSTATE 25006) for as long as it
 * lives, so a pool that kept it would fail writes until a restart.
 *
 * Simulated on a throwaway database: `default_transaction_read_only` on the
 * database (new sessions are read-only, as on a standby), the store's
 * sessions terminated (the failover's disconnect), then the setting reset
 * (the new primary answers). The store must drop each read-only connection
 * it meets — with the pool's idle ones — and write again as soon as the
 * server does, without a restart.
 */
import { randomBytes } from "node:crypto";
import { PostgresStore } from "@cairnq/store-postgres";
import { PgAdmin, pgDsn } from "@cairnq/test-support";
import { afterAll, describe, expect, it } from "vitest";
import { until } from "../helpers.js";

const admin = new PgAdmin({ applicationName: "cairnq-test-readonly-admin" });
afterAll(() => admin.close());

function dsnOf(database: string, applicationName: string): string {
  const url = new URL(pgDsn());
  url.pathname = `/${database}`;
  url.searchParams.set("application_name", applicationName);
  return url.toString();
}

/** Six submits one after another: "written", or the SQLSTATE each failed with. */
async function sixSubmits(store: PostgresStore): Promise<string[]> {
  const outcomes: string[] = [];
  for (let n = 0; n < 6; n += 1) {
    outcomes.push(
      await store.submit({ name: "after", payload: { n } }).then(
        () => "written",
        (error: unknown) => String((error as { code?: unknown }).code),
      ),
    );
  }
  return outcomes;
}

describe("a pooled connection that lands on a read-only server", () => {
  it("is dropped with the idle ones, and writes succeed again once the server takes them, without a restart", async () => {
    const database = `cq_readonly_${randomBytes(5).toString("hex")}`;
    const app = `cairnq-readonly-${process.pid}`;
    await admin.q(`CREATE DATABASE "${database}"`);
    const errors: unknown[] = [];
    const warnings: string[] = [];
    const store = new PostgresStore(dsnOf(database, app), {
      listen: false,
      max: 4,
      onError: (error) => errors.push(error),
      logger: { warn: (message) => warnings.push(message) },
    });
    try {
      await store.connect();
      // Several pooled connections open at once, so the pool has idle ones to get rid of later.
      await Promise.all(Array.from({ length: 8 }, (_, n) => store.submit({ name: "before", payload: { n } })));

      // The failover: every session ends, and new ones reach a server that refuses writes.
      await admin.q(`ALTER DATABASE "${database}" SET default_transaction_read_only = on`);
      await admin.q("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1", [app]);
      const refused: unknown[] = [];
      for (let n = 0; n < 6; n += 1) {
        await store.submit({ name: "during", payload: { n } }).then(
          () => refused.push("written"),
          (error: unknown) => refused.push((error as { code?: unknown }).code),
        );
      }
      // Each write on a fresh (read-only) connection is refused by the server; none is written.
      expect(refused.filter((outcome) => outcome === "25006").length).toBeGreaterThanOrEqual(1);
      expect(refused).not.toContain("written");

      // The new primary: the server takes writes again. Connections opened while it refused are still read-only
      // (the session kept its default): the store must not keep handing them out.
      await admin.q(`ALTER DATABASE "${database}" RESET default_transaction_read_only`);
      const outcomes = await sixSubmits(store);
      // At most the first write meets a leftover read-only connection; it takes every idle one with it.
      expect(outcomes.slice(1)).toEqual(["written", "written", "written", "written", "written"]);
      expect(errors.some((error) => (error as { code?: unknown }).code === "25006")).toBe(true);
      expect(warnings.filter((message) => message.includes("read-only server"))).toHaveLength(1);
      console.log(`[read-only failover] writes while read-only: ${refused.join(", ")}; after the server took writes again: ${outcomes.join(", ")}`);
    } finally {
      await store.close();
      await admin.q(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
    }
  });

  it("the LISTEN connection lent to writes (listen not given) that lands on it too: it is lent no more, and writes succeed again once the server takes them", async () => {
    const database = `cq_readonly_${randomBytes(5).toString("hex")}`;
    const app = `cairnq-readonly-lane-${process.pid}`;
    await admin.q(`CREATE DATABASE "${database}"`);
    const errors: unknown[] = [];
    const warnings: string[] = [];
    const store = new PostgresStore(dsnOf(database, app), {
      max: 4,
      onError: (error) => errors.push(error),
      logger: { warn: (message) => warnings.push(message) },
    });
    try {
      await store.connect();
      expect(await until(() => store.listenState === "listening", 10_000)).toBe(true);
      const firstPid = store.dialect.wakeups.backendPid;

      // The failover: every session ends, the LISTEN connection included; the one it reopens is read-only
      // (LISTEN and the check's NOTIFY work on a read-only session, so it listens again).
      await admin.q(`ALTER DATABASE "${database}" SET default_transaction_read_only = on`);
      await admin.q("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1", [app]);
      expect(await until(() => store.listenState === "listening" && store.dialect.wakeups.backendPid !== firstPid, 10_000)).toBe(true);

      // The new primary takes writes again; the LISTEN connection opened meanwhile is still read-only.
      await admin.q(`ALTER DATABASE "${database}" RESET default_transaction_read_only`);
      const outcomes = await sixSubmits(store);
      // At most the first write meets a read-only connection (the LISTEN one, lent while idle); it is not lent again.
      expect(outcomes.slice(1)).toEqual(["written", "written", "written", "written", "written"]);
      expect(errors.some((error) => (error as { code?: unknown }).code === "25006")).toBe(true);
      expect(warnings.filter((message) => message.includes("read-only server"))).toHaveLength(1);
      // Still listening: the connection hears, it only no longer carries writes.
      expect(store.listenState).toBe("listening");
    } finally {
      await store.close();
      await admin.q(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
    }
  });
});
