/**
 * A claim writes the rate limit it enforced to `cairnq_ext_rate_limits` only
 * when its store has not written that limit lately (`rate-limit-records.ts`
 * in store-kysely), not on every claim: a second claim within the minute
 * leaves the row alone, one under a changed limit writes it. Seen from
 * another connection, which overwrites the row after the first claim: a
 * claim that upserted would put the limit back.
 */
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import type { SQLiteStore } from "../src/index.js";
import { openStore, tempFile } from "./helpers.js";

const HOUR_MS = 3_600_000;

describe("rate-limit rows on SQLite: written when due, not per claim", () => {
  let store: SQLiteStore | undefined;
  afterEach(async () => {
    await store?.close();
    store = undefined;
  });

  /** Sets every row of `cairnq_ext_rate_limits` in `file` to `max_claims = 99` from another connection. */
  function overwrite(file: string): void {
    const db = new Database(file);
    try {
      db.prepare("UPDATE cairnq_ext_rate_limits SET max_claims = 99").run();
    } finally {
      db.close();
    }
  }

  /** Runs `sql` on `file` from another connection. */
  function exec(file: string, sql: string): void {
    const db = new Database(file);
    try {
      db.exec(sql);
    } finally {
      db.close();
    }
  }

  function rows(file: string): { name: string; scope: string; max_claims: number }[] {
    const db = new Database(file, { readonly: true });
    try {
      return db.prepare("SELECT name, scope, max_claims FROM cairnq_ext_rate_limits ORDER BY name, scope").all() as { name: string; scope: string; max_claims: number }[];
    } finally {
      db.close();
    }
  }

  it("a rateLimit and a groupRateLimit: the first claim writes them, a second within the minute does not, a changed limit does", async () => {
    const file = tempFile();
    const s = (store = openStore(file));
    await s.connect();
    for (let i = 0; i < 4; i++) await s.submit({ name: "rl" });
    for (let i = 0; i < 4; i++) await s.submit({ name: "g", group: `g${i}` });
    // One task of each name per round, each claim of one name.
    const claim = async (max: number): Promise<string[]> => {
      const limits = { rl: { rateLimit: { max, perMs: HOUR_MS } }, g: { groupRateLimit: { max, perMs: HOUR_MS } } };
      const taken = [];
      for (const name of ["rl", "g"] as const) {
        taken.push(...(await s.claim({ queues: ["default"], names: [name], limit: 1, workerId: "w", leaseMs: 60_000, flowControl: { [name]: limits[name] } })));
      }
      return taken.map((t) => t.name);
    };
    expect(await claim(5)).toEqual(["rl", "g"]);
    expect(rows(file)).toEqual([
      { name: "g", scope: "group", max_claims: 5 },
      { name: "rl", scope: "name", max_claims: 5 },
    ]);
    overwrite(file);
    expect(await claim(5)).toEqual(["rl", "g"]);
    // The same limits within the minute: the rows stay as the other connection left them.
    expect(rows(file).map((r) => r.max_claims)).toEqual([99, 99]);
    expect(await claim(6)).toEqual(["rl", "g"]);
    expect(rows(file).map((r) => r.max_claims)).toEqual([6, 6]);
  });

  it("a claim whose transaction rolls back after planning the row leaves it due: the next claim under the same limit writes it", async () => {
    const file = tempFile();
    const s = (store = openStore(file));
    await s.connect();
    for (let i = 0; i < 2; i++) await s.submit({ name: "rl" });
    await s.submit({ name: "other" });
    const claimOf = (name: string) =>
      s.claim({ queues: ["default"], names: [name], limit: 1, workerId: "w", leaseMs: 60_000, flowControl: { [name]: { rateLimit: { max: 5, perMs: HOUR_MS } } } });
    // A rate-limited claim of another name makes the table.
    expect(await claimOf("other")).toHaveLength(1);
    // Another connection makes the row of 'rl' fail to insert: that claim's transaction rolls back whole.
    exec(file, "CREATE TRIGGER refuse_rl BEFORE INSERT ON cairnq_ext_rate_limits WHEN NEW.name = 'rl' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END");
    await expect(claimOf("rl")).rejects.toThrow(/refused by the test/);
    expect(rows(file).map((r) => r.name)).toEqual(["other"]);
    exec(file, "DROP TRIGGER refuse_rl");
    // Within the minute, under the same limit: the rolled-back write was never noted, so this claim writes the row.
    expect((await claimOf("rl")).map((t) => t.name)).toEqual(["rl"]);
    expect(rows(file)).toEqual([
      { name: "other", scope: "name", max_claims: 5 },
      { name: "rl", scope: "name", max_claims: 5 },
    ]);
  });
});
