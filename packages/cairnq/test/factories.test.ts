/**
 * The umbrella's factories take the store's options and the client's or
 * worker's in one bag: a misspelt key is rejected against the whole bag's
 * key list (with a did-you-mean), and every store option reaches the store
 * (on Postgres: integration/factories.test.ts).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { RuntimeClock } from "cairnq";
import { CairnQ, InvalidArgument, PostgresStore, SQLiteStore, Worker } from "cairnq";
import { systemClock } from "@cairnq/runtime";
import { workerPoolSize } from "../src/factories.ts";
import { CLIENT_OPTION_KEYS } from "@cairnq/client";
import { POSTGRES_STORE_OPTION_KEYS } from "@cairnq/store-postgres";
import { SQLITE_STORE_OPTION_KEYS } from "@cairnq/store-sqlite";
import type { SQLiteDialect } from "@cairnq/store-sqlite";
import { WORKER_OPTION_KEYS } from "@cairnq/worker";

const NEVER = "postgres://postgres@127.0.0.1:1/never-connected";

/** The InvalidArgument a call throws (fails the test if it throws something else or nothing). */
function rejection(build: () => unknown): InvalidArgument {
  try {
    build();
  } catch (err) {
    expect(err).toBeInstanceOf(InvalidArgument);
    return err as InvalidArgument;
  }
  throw new Error("expected InvalidArgument, nothing was thrown");
}

/** The list after "the options are " in a checkOptions message. */
function listedKeys(message: string): string[] {
  const at = message.indexOf("the options are ");
  expect(at, message).toBeGreaterThan(0);
  return message.slice(at + "the options are ".length).split(", ");
}

// The bag's `logger` is the role's (listed with its keys), which the factory hands to the store too.
const pgStoreKeys = POSTGRES_STORE_OPTION_KEYS.filter((key) => key !== "logger").map((key) => (key === "onError" ? "storeOnError" : key));
const workerKeys = WORKER_OPTION_KEYS.filter((key) => key !== "closeStore");

let dir: string | undefined;
afterEach(async () => {
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

async function dbFile(): Promise<string> {
  dir = await mkdtemp(join(tmpdir(), "cairnq-factories-"));
  return join(dir, "tasks.db");
}

describe("a misspelt option of a factory", () => {
  const cases: [string, () => unknown, string, string, string[]][] = [
    ["Worker.postgres", () => Worker.postgres(NEVER, { schmea: "x" } as never), "schmea", "schema", [...pgStoreKeys, ...workerKeys]],
    ["CairnQ.postgres", () => CairnQ.postgres(NEVER, { timeout: {} } as never), "timeout", "timeouts", [...pgStoreKeys, ...CLIENT_OPTION_KEYS]],
    ["Worker.postgres (a worker key)", () => Worker.postgres(NEVER, { concurency: 8 } as never), "concurency", "concurrency", [...pgStoreKeys, ...workerKeys]],
    ["CairnQ.sqlite", () => CairnQ.sqlite(":memory:", { busyTimeotMs: 100 } as never), "busyTimeotMs", "busyTimeoutMs", [...new Set([...SQLITE_STORE_OPTION_KEYS, ...CLIENT_OPTION_KEYS])]],
    ["Worker.sqlite", () => Worker.sqlite(":memory:", { leaseMS: 5_000 } as never), "leaseMS", "leaseMs", [...new Set([...SQLITE_STORE_OPTION_KEYS, ...workerKeys])]],
    ["CairnQ.sqlite (a client key)", () => CairnQ.sqlite(":memory:", { retension: {} } as never), "retension", "retention", [...new Set([...SQLITE_STORE_OPTION_KEYS, ...CLIENT_OPTION_KEYS])]],
  ];

  it.each(cases)("%s: InvalidArgument naming the key, a did-you-mean, and the store's and the role's keys in one list", (label, build, key, near, keys) => {
    const err = rejection(build);
    const factory = label.split(" ")[0]!;
    expect(err.argument).toBe(key);
    expect(err.message).toContain(`'${key}' is not an option of ${factory}(`);
    expect(err.message).toContain(`(did you mean '${near}'?)`);
    expect(listedKeys(err.message)).toEqual(keys);
  });

  it("closeStore is the factory's own decision, not an option; onError on Postgres is the role's, storeOnError the store's", () => {
    expect(rejection(() => Worker.sqlite(":memory:", { closeStore: false } as never)).argument).toBe("closeStore");
    expect(rejection(() => CairnQ.postgres(NEVER, { onError: () => {} } as never)).argument).toBe("onError");
  });

  it("Postgres: the role's logger reaches the store too; Worker.postgres sizes the pool it builds for its concurrency", async () => {
    const logger = { warn: () => {} };
    const api = CairnQ.postgres(NEVER, { logger });
    const small = Worker.postgres(NEVER, { logger, concurrency: 1 });
    const large = Worker.postgres(NEVER, { concurrency: 64 });
    const chosen = Worker.postgres(NEVER, { concurrency: 64, max: 3 });
    try {
      expect((api.store as PostgresStore).dialect.connection.logger).toBe(logger);
      expect((small.store as PostgresStore).dialect.connection.logger).toBe(logger);
      const max = (w: Worker): number | null => (w.store as PostgresStore).dialect.connection.max;
      expect([max(small), max(large), max(chosen)]).toEqual([3, 10, 3]);
      expect((api.store as PostgresStore).dialect.connection.max).toBe(10);
      expect(workerPoolSize(1)).toBe(3);
      expect(workerPoolSize(4)).toBe(3);
      expect(workerPoolSize(8)).toBe(4);
      expect(workerPoolSize(64)).toBe(10);
      expect(workerPoolSize(undefined)).toBe(3);
    } finally {
      await Promise.all([api.close(), small.close(), large.close(), chosen.close()]);
    }
  });

  it("the stores themselves reject unknown keys, including inside timeouts and combine", () => {
    expect(rejection(() => new PostgresStore(NEVER, { schmea: "x" } as never)).message).toMatch(
      /^'schmea' is not an option of new PostgresStore\(target, options\) \(did you mean 'schema'\?\); the options are schema, max, listen, onError, timeouts, combine, preparedStatements, logger$/,
    );
    expect(rejection(() => new PostgresStore(NEVER, { timeouts: { queryTimoutMs: 5 } as never })).message).toMatch(/'queryTimoutMs' is not an option of the timeouts option \(did you mean 'queryTimeoutMs'\?\)/);
    expect(rejection(() => new PostgresStore(NEVER, { combine: { maxRow: 5 } as never })).message).toMatch(/'maxRow' is not an option of the combine option \(did you mean 'maxRows'\?\)/);
    expect(rejection(() => new SQLiteStore(":memory:", { busyTimeotMs: 5 } as never)).message).toMatch(
      /^'busyTimeotMs' is not an option of new SQLiteStore\(path, options\) \(did you mean 'busyTimeoutMs'\?\); the options are busyTimeoutMs, clock, driver$/,
    );
  });
});

describe("CairnQ.sqlite and Worker.sqlite refuse an empty path", () => {
  it("with the store's InvalidArgument: a client and a worker on '' would each open a private temporary database", () => {
    expect(() => CairnQ.sqlite("")).toThrow(InvalidArgument);
    expect(() => Worker.sqlite("")).toThrow(/path must be a string \(a file path or ":memory:"\), got an empty string/);
  });
});

describe("every store option passes through the factories", () => {
  it("CairnQ.sqlite / Worker.sqlite: busyTimeoutMs and clock reach the SQLiteStore", async () => {
    const file = await dbFile();
    const frozen = 1_700_000_000_000;
    const api = CairnQ.sqlite(file, { busyTimeoutMs: 1234, clock: () => frozen, maxQueueDepth: 10 });
    const runner = Worker.sqlite(file, { busyTimeoutMs: 4321, concurrency: 1 });
    try {
      const task = await api.submit("job", {});
      expect(task.created_at_ms).toBe(frozen);
      // The store retries busy statements itself for busyTimeoutMs (SQLite's own busy_timeout is only used while connecting).
      const busy = (s: SQLiteStore): number => (s.dialect as SQLiteDialect).connection.busyTimeoutMs;
      expect(busy(api.store as SQLiteStore)).toBe(1234);
      expect(busy(runner.store as SQLiteStore)).toBe(4321);
    } finally {
      await runner.close();
      await api.close();
    }
  });

  it("CairnQ.sqlite / Worker.sqlite: driver reaches the SQLiteStore, and a name it does not know is rejected at once", async () => {
    const file = await dbFile();
    const api = CairnQ.sqlite(file, { driver: "better-sqlite3" });
    try {
      await api.submit("job", {});
      expect((api.store as SQLiteStore).driver).toBe("better-sqlite3");
    } finally {
      await api.close();
    }
    expect(rejection(() => Worker.sqlite(file, { driver: "sqlite" as never })).message).toMatch(/driver must be one of "better-sqlite3", "node:sqlite", "bun:sqlite"/);
  });

  it("CairnQ.sqlite / Worker.sqlite: a RuntimeClock is the role's clock and the store reads its now(); a bare function stays the store's", async () => {
    const file = await dbFile();
    let nowMs = 1_700_000_000_000;
    const clock: RuntimeClock = { ...systemClock, now: () => nowMs };
    const api = CairnQ.sqlite(file, { clock });
    const runner = Worker.sqlite(file, { clock, concurrency: 1 });
    const plain = CairnQ.sqlite(file, { clock: () => 42 });
    try {
      expect(runner.options.clock).toBe(clock);
      const task = await api.submit("job", {});
      expect(task.created_at_ms).toBe(1_700_000_000_000);
      nowMs += 5;
      expect((await api.submit("job", {})).created_at_ms).toBe(1_700_000_000_005);
      expect((await plain.submit("job", {})).created_at_ms).toBe(42);
      expect(await api.explain(task.id)).toMatchObject({ state: "unclaimed" });
    } finally {
      await runner.close();
      await api.close();
      await plain.close();
    }
  });
});
