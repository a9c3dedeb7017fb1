/**
 * A purge or bulk batch whose `limit` is above the dialect's `maxRowsPerWrite`
 * runs as several writes of at most that many rows, in order: ids
 * concatenated, a bulk batch's next write after the previous one's greatest
 * id, no write after one that changed no row (a short one is no end). Over a
 * fake of the store's statements that keeps its rows in a list.
 */
import type { Params } from "@cairnq/protocol/adapter";
import type { QueryResult } from "kysely";
import { describe, expect, it } from "vitest";
import type { AnyKysely, DialectCapabilities, QueryRunner, QueryThunk, Row, SchemaManager, StoreDialect } from "../src/index.js";
import { BaseStoreDialect, BaseStoreExecutor, DEFAULT_DIALECT_CAPABILITIES, SqliteSyntax, TransactionViewDialect } from "../src/index.js";
import { ClientTransitions } from "../src/client-transitions.js";
import { StoreLifecycle } from "../src/store-lifecycle.js";
import type { StoreStatements } from "../src/store-statements.js";

const NO_SCHEMA: SchemaManager = { connect: () => Promise.resolve(), close: () => Promise.resolve() };

class NoExecutor extends BaseStoreExecutor {
  read(): Promise<QueryResult<Row>> {
    return Promise.reject(new Error("no reads here"));
  }
  write(_db: AnyKysely, _query: QueryThunk): Promise<QueryResult<Row>> {
    return Promise.reject(new Error("writes go through the fake statements"));
  }
  writeTransaction<T>(_db: AnyKysely, _fn: (tx: QueryRunner) => Promise<T>): Promise<T> {
    return Promise.reject(new Error("no transactions here"));
  }
}

class CappedDialect extends BaseStoreDialect {
  readonly name = "test";
  readonly syntax = new SqliteSyntax();
  readonly schema = NO_SCHEMA;
  override readonly executor = new NoExecutor();
  override readonly capabilities: DialectCapabilities;

  constructor(maxRowsPerWrite: number | undefined) {
    super();
    this.capabilities = { ...DEFAULT_DIALECT_CAPABILITIES, ...(maxRowsPerWrite === undefined ? {} : { maxRowsPerWrite }) };
  }
}

class ViewOf extends TransactionViewDialect {
  readonly schema = NO_SCHEMA;
  override readonly executor = new NoExecutor();
}

const id = (n: number): string => `task_${String(n).padStart(3, "0")}`;

/**
 * The statements of a store with `count` matching rows `task_000`…: a purge deletes the first `limit`
 * rows; a bulk batch changes the first `limit` rows after `afterId` and leaves them matching (as a
 * cancel leaves a running task running, flagged), so only the cursor moves it past them.
 */
function fakeStore(count: number, maxRowsPerWrite: number | undefined, busyOnce: readonly string[] = []) {
  const busy = new Set(busyOnce);
  const dialect: StoreDialect = new CappedDialect(maxRowsPerWrite);
  let rows = Array.from({ length: count }, (_, n) => id(n));
  const writes: { limit: unknown; afterId: unknown }[] = [];
  const statements = {
    db: {} as AnyKysely,
    dialect,
    write(_template: unknown, params: Params): Promise<QueryResult<Row>> {
      const limit = Number(params.limit);
      writes.push({ limit: params.limit, afterId: params.afterId });
      if ("olderThanMs" in params) {
        // A busy row (held by another transaction) is skipped by the first write that picks it, and stays.
        const picked = rows.slice(0, limit);
        const deleted = picked.filter((value) => !busy.delete(value));
        rows = rows.filter((value) => !deleted.includes(value));
        return Promise.resolve({ rows: deleted.map((value) => ({ id: value })) });
      }
      const after = params.afterId as string | null;
      const picked = rows.filter((value) => after === null || value > after).slice(0, limit);
      return Promise.resolve({ rows: picked.map((value) => ({ id: value, status: "canceled", parent_id: `parent_of_${value}` })) });
    },
  } as unknown as StoreStatements;
  const joinsWoken: string[][] = [];
  const requeued: string[][] = [];
  const transitions = new ClientTransitions(
    statements,
    new StoreLifecycle({} as AnyKysely, dialect, false),
    (parentIds) => Promise.resolve(void joinsWoken.push([...parentIds])),
    (taskIds) => Promise.resolve(void requeued.push([...taskIds])),
  );
  return { transitions, writes, joinsWoken, requeued, left: () => rows.length };
}

describe("ClientTransitions with maxRowsPerWrite", () => {
  it("a purge above the cap runs as writes of at most the cap, in order, and returns every id", async () => {
    const store = fakeStore(25, 4);
    const ids = await store.transitions.purge({ limit: 10 });
    expect(ids).toEqual(Array.from({ length: 10 }, (_, n) => id(n)));
    expect(store.writes.map((w) => w.limit)).toEqual([4, 4, 2]);
    expect(store.left()).toBe(15);
  });

  it("stops after a write that changed no row, and sends none once the limit is reached", async () => {
    const short = fakeStore(6, 4);
    expect(await short.transitions.purge({ limit: 100 })).toEqual(Array.from({ length: 6 }, (_, n) => id(n)));
    expect(short.writes.map((w) => w.limit)).toEqual([4, 4, 4]);

    // A short write is no end: a row another transaction held was skipped, and more rows match.
    const held = fakeStore(12, 4, [id(1)]);
    expect(await held.transitions.purge({ limit: 12 })).toEqual([0, 2, 3, 1, 4, 5, 6, 7, 8, 9, 10, 11].map(id));
    expect(held.writes.map((w) => w.limit)).toEqual([4, 4, 4, 1]);
    expect(held.left()).toBe(0);

    const exact = fakeStore(20, 4);
    expect(await exact.transitions.purge({ limit: 8 })).toHaveLength(8);
    expect(exact.writes.map((w) => w.limit)).toEqual([4, 4]);
  });

  it("a bulk cancel's next write continues after the previous one's greatest id, starting at the caller's cursor", async () => {
    const store = fakeStore(30, 4);
    const ids = await store.transitions.cancelBatch({ limit: 9, afterId: id(3) });
    expect(ids).toEqual(Array.from({ length: 9 }, (_, n) => id(n + 4)));
    expect(store.writes).toEqual([
      { limit: 4, afterId: id(3) },
      { limit: 4, afterId: id(7) },
      { limit: 1, afterId: id(11) },
    ]);
    // Each write's ended children wake their joins once it committed.
    expect(store.joinsWoken).toEqual([ids.slice(0, 4), ids.slice(4, 8), ids.slice(8)].map((part) => part.map((value) => `parent_of_${value}`)));
  });

  it("a bulk retry splits the same way and marks each write's tasks requeued", async () => {
    const store = fakeStore(10, 4);
    const ids = await store.transitions.retryBatch({ limit: 1000 });
    expect(ids).toEqual(Array.from({ length: 10 }, (_, n) => id(n)));
    expect(store.writes).toEqual([
      { limit: 4, afterId: null },
      { limit: 4, afterId: id(3) },
      { limit: 4, afterId: id(7) },
      // The short write is no end: only one that changed nothing is.
      { limit: 4, afterId: id(9) },
    ]);
    expect(store.requeued).toEqual([ids.slice(0, 4), ids.slice(4, 8), ids.slice(8)]);
  });

  it("without the capability a limit is one write, however large", async () => {
    const store = fakeStore(50, undefined);
    expect(await store.transitions.purge({ limit: 1_000_000 })).toHaveLength(50);
    expect(await store.transitions.cancelBatch({ limit: 1_000_000 })).toEqual([]);
    expect(store.writes.map((w) => w.limit)).toEqual([1_000_000, 1_000_000]);
  });

  it("a cap that is no positive integer is refused before anything is written", async () => {
    for (const bad of [0, -1, 2.5, Number.NaN]) {
      const store = fakeStore(5, bad);
      await expect(store.transitions.purge({ limit: 10 })).rejects.toThrow(/maxRowsPerWrite must be a positive integer/);
      expect(store.writes).toEqual([]);
    }
  });

  it("a transaction view keeps its store's cap", () => {
    expect(new ViewOf(new CappedDialect(4)).capabilities.maxRowsPerWrite).toBe(4);
  });
});
