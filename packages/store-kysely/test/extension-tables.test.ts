/**
 * Where a transaction view's extension tables are created: on the caller's
 * transaction where DDL is transactional (so they roll back with it), through
 * the store the view belongs to where DDL commits (`ddlCommits`: never on the
 * caller's transaction); and what a view knows of them for a requeue mark.
 */
import { UnsupportedBackend } from "@cairnq/protocol";
import type { CompiledQuery, QueryResult } from "kysely";
import { describe, expect, it } from "vitest";
import type { AnyKysely, DialectCapabilities, QueryRunner, QueryThunk, Row, SchemaManager, StoreDialect } from "../src/index.js";
import { BaseStoreDialect, BaseStoreExecutor, DEFAULT_DIALECT_CAPABILITIES, SqliteSyntax, StatementCompiler, TransactionViewDialect } from "../src/index.js";
import { GROUP_TABLES, GROUPS_TABLE, STEPS_TABLE, StoreExtensions, TASK_GROUPS_TABLE } from "../src/extension-tables.js";
import { StoreStatements } from "../src/store-statements.js";

const NO_SCHEMA: SchemaManager = { connect: () => Promise.resolve(), close: () => Promise.resolve() };

/** Answers catalog reads from `catalog` (names of the objects that exist) and records every other statement. */
class RecordingExecutor extends BaseStoreExecutor {
  readonly statements: string[] = [];
  catalogReads = 0;

  constructor(readonly catalog: Set<string>) {
    super();
  }

  read(_db: AnyKysely, query: QueryThunk): Promise<QueryResult<Row>> {
    this.catalogReads++;
    const sql = query().sql;
    return Promise.resolve({ rows: [...this.catalog].filter((name) => sql.includes(`'${name}'`)).map((name) => ({ name })) });
  }

  write(_db: AnyKysely, query: QueryThunk): Promise<QueryResult<Row>> {
    return this.#run(query());
  }

  writeTransaction<T>(_db: AnyKysely, fn: (tx: QueryRunner) => Promise<T>): Promise<T> {
    return fn({ executeQuery: <R>(query: CompiledQuery<R>) => this.#run(query) as Promise<QueryResult<R>> });
  }

  #run(query: CompiledQuery): Promise<QueryResult<Row>> {
    this.statements.push(query.sql);
    return Promise.resolve({ rows: [] });
  }
}

class StoreOwnDialect extends BaseStoreDialect {
  readonly name = "test";
  readonly syntax = new SqliteSyntax();
  readonly schema = NO_SCHEMA;
  override readonly capabilities: DialectCapabilities;

  constructor(
    override readonly executor: RecordingExecutor,
    ddlCommits: boolean,
  ) {
    super();
    this.capabilities = { ...DEFAULT_DIALECT_CAPABILITIES, ddlCommits };
  }
}

class ViewDialect extends TransactionViewDialect {
  readonly schema = NO_SCHEMA;

  constructor(
    parent: StoreDialect,
    override readonly executor: RecordingExecutor,
  ) {
    super(parent);
  }
}

function extensions(dialect: StoreDialect, view: { parent: StoreExtensions | null } | null = null): StoreExtensions {
  return new StoreExtensions(new StoreStatements({} as AnyKysely, dialect, new StatementCompiler(dialect.syntax, dialect.clock, false)), view);
}

/** A store and a view of it, over one catalog; `shared` is what exists for both. */
function storeAndView(ddlCommits: boolean, shared = new Set<string>()) {
  const own = new RecordingExecutor(shared);
  const caller = new RecordingExecutor(shared);
  const storeDialect = new StoreOwnDialect(own, ddlCommits);
  const store = extensions(storeDialect);
  const view = extensions(new ViewDialect(storeDialect, caller), { parent: store });
  return { own, caller, store, view, storeDialect };
}

const isDdl = (sql: string): boolean => /^(CREATE|DROP) /.test(sql);

describe("StoreExtensions.ensure in a transaction view", () => {
  it("where DDL commits (ddlCommits), the store creates the tables on its own connections: no DDL on the caller's transaction", async () => {
    const { own, caller, store, view } = storeAndView(true);
    await view.ensure(GROUP_TABLES);
    await view.ensure(STEPS_TABLE);
    expect(caller.statements.filter(isDdl)).toEqual([]);
    expect(own.statements.filter(isDdl).length).toBeGreaterThan(2);
    expect([store.isReady(GROUP_TABLES), store.isReady(STEPS_TABLE), view.isReady(GROUP_TABLES)]).toEqual([true, true, true]);
  });

  it("where DDL commits, a view built without its store refuses with UnsupportedBackend instead of committing the caller's transaction", async () => {
    const { caller, storeDialect } = storeAndView(true);
    const orphan = extensions(new ViewDialect(storeDialect, caller), { parent: null });
    await expect(orphan.ensure(GROUP_TABLES)).rejects.toBeInstanceOf(UnsupportedBackend);
    expect(caller.statements).toEqual([]);
    // Tables already in place: nothing to create, nothing refused.
    const found = storeAndView(true, new Set([...caller.catalog, "cairnq_ext_steps"]));
    await extensions(new ViewDialect(found.storeDialect, found.caller), { parent: null }).ensure(STEPS_TABLE);
    expect(found.caller.statements).toEqual([]);
  });

  it("where DDL is transactional, the view creates them on the caller's transaction (they roll back with it), the store stays unaware; once the store has them, the view sends nothing", async () => {
    const { own, caller, store, view } = storeAndView(false);
    await view.ensure(GROUP_TABLES);
    expect(caller.statements.filter(isDdl).length).toBeGreaterThan(2);
    expect([own.statements, store.isReady(GROUP_TABLES)]).toEqual([[], false]);

    const next = storeAndView(false);
    await next.store.ensure(STEPS_TABLE);
    const reads = next.caller.catalogReads;
    await next.view.ensure(STEPS_TABLE);
    expect([next.caller.statements, next.caller.catalogReads - reads]).toEqual([[], 0]);
  });
});

describe("StoreExtensions.knows (whether a requeue marks group rows)", () => {
  const names = [TASK_GROUPS_TABLE, GROUPS_TABLE];

  it("a view asks its store, which reads its catalog once and remembers the tables it found", async () => {
    const { own, view } = storeAndView(false, new Set(names));
    expect(await view.knows(GROUP_TABLES, names)).toBe(true);
    expect(await view.knows(GROUP_TABLES, names)).toBe(true);
    expect(own.catalogReads).toBe(1);
  });

  it("without the tables, or for a store of its own that never used them, it is false with no statement", async () => {
    const { own, view, store } = storeAndView(false, new Set([TASK_GROUPS_TABLE]));
    expect(await view.knows(GROUP_TABLES, names)).toBe(false);
    const reads = own.catalogReads;
    expect(await store.knows(GROUP_TABLES, names)).toBe(false);
    expect(own.catalogReads).toBe(reads);
    await store.ensure(GROUP_TABLES);
    expect(await store.knows(GROUP_TABLES, names)).toBe(true);
  });
});
