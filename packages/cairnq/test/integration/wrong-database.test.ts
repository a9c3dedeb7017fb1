/**
 * A database that does not exist, on Postgres and MariaDB: the CLI says so
 * (naming it and what to do, exit 1), a client's submit fails with a fatal
 * `DatabaseUnusable`, and a worker stops on it — `run()` rejects — instead
 * of retrying forever as if the server were down.
 */
import { CairnQ, DatabaseUnusable, Worker, isFatalError } from "cairnq";
import { mysqlDsn, pgDsn, withDatabase } from "@cairnq/test-support";
import { describe, expect, it } from "vitest";
import { runCli as cli } from "../support/cli.js";

const MISSING = "cairnq_no_such_db";

const backends = [
  { name: "Postgres", url: (): string => withDatabase(pgDsn(), MISSING), client: CairnQ.postgres, worker: Worker.postgres, says: /the server has no database "cairnq_no_such_db": create it/ },
  { name: "MySQL", url: (): string => withDatabase(mysqlDsn(), MISSING), client: CairnQ.mysql, worker: Worker.mysql, says: /the server has no database 'cairnq_no_such_db': create it/ },
] as const;

describe.each(backends)("a $name database that does not exist", ({ url, client, worker, says }) => {
  it("the CLI names it and says to create it, not that the server is down", async () => {
    const run = await cli(["stats", "--db", url()]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(says);
    expect(run.stderr).not.toMatch(/server is down|refused the connection/);
  });

  it("a client's submit fails with a fatal DatabaseUnusable", async () => {
    const cq = client(url());
    try {
      const err = await cq.submit("x", {}).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(DatabaseUnusable);
      expect(isFatalError(err)).toBe(true);
      expect(err).toMatchObject({ database: MISSING });
    } finally {
      await cq.close();
    }
  });

  it("a worker stops on it: run() rejects with it at once, reported to no onError", async () => {
    const reported: unknown[] = [];
    const w = worker(url(), { pollIntervalMs: 50, onError: (err) => reported.push(err) });
    w.task("x", () => 1);
    try {
      const started = Date.now();
      const run = w.run().then(
        () => "resolved",
        (err: unknown) => err,
      );
      const outcome = await Promise.race([run, new Promise((resolve) => setTimeout(() => resolve("still running after 5 s"), 5_000))]);
      await w.stop();
      await run;
      expect(outcome).toBeInstanceOf(DatabaseUnusable);
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(reported).toEqual([]);
    } finally {
      await w.close();
    }
  }, 15_000);
});
