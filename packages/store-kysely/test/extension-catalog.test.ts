/**
 * The catalog check of the extension tables reads the objects to look for
 * from the DDL itself: every statement of every feature's DDL is one the
 * check knows, every table and index it creates is looked for, and every
 * index it drops must be gone.
 */
import { describe, expect, it } from "vitest";
import type { ExtensionTable, SchemaManager } from "../src/index.js";
import {
  BaseStoreDialect,
  defaultExtensionCatalog,
  EXTENSION_DDL,
  extensionObjects,
  objectsInPlace,
  PostgresSyntax,
  SqliteSyntax,
} from "../src/index.js";

/** The name each statement of `ddl` creates or drops, read independently of `extensionObjects`. */
function namesIn(ddl: readonly string[]): { created: string[]; dropped: string[] } {
  const created: string[] = [];
  const dropped: string[] = [];
  for (const statement of ddl) {
    const words = statement.trim().split(/\s+/);
    if (words[0] === "CREATE") created.push(words[words.indexOf("EXISTS") + 1]!.replace(/\(.*$/, ""));
    else if (words[0] === "DROP") dropped.push(words[words.indexOf("EXISTS") + 1]!);
    else throw new Error(`neither CREATE nor DROP: ${statement}`);
  }
  return { created, dropped };
}

class DefaultDialect extends BaseStoreDialect {
  readonly name = "default";
  readonly syntax = new SqliteSyntax();
  readonly schema: SchemaManager = { connect: () => Promise.resolve(), close: () => Promise.resolve() };
}

const FEATURES = Object.keys(EXTENSION_DDL) as ExtensionTable[];

describe("extensionObjects over the SQLite/Postgres extension DDL (the default extensionDdl)", () => {
  const dialect = new DefaultDialect();
  it.each(FEATURES)("%s: every table and index the DDL creates is looked for, every index it drops must be absent", (feature) => {
    const ddl = dialect.extensionDdl(feature);
    expect(ddl).toBe(EXTENSION_DDL[feature]);
    const { created, dropped } = namesIn(ddl);
    const objects = extensionObjects(ddl);
    expect(objects.present).toEqual(created);
    expect(objects.absent).toEqual(dropped);
    expect(objects.present.length + objects.absent.length).toBe(ddl.length);
    expect(objects.present).toContain(feature === "cairnq_ext_groups*" ? "cairnq_ext_task_groups" : feature);
  });

  it("the group DDL creates its three tables and five indexes and drops the old walk index", () => {
    expect(extensionObjects(EXTENSION_DDL["cairnq_ext_groups*"])).toEqual({
      present: [
        "cairnq_ext_task_groups",
        "cairnq_ext_task_groups_queued_idx",
        "cairnq_ext_task_groups_requeued_idx",
        "cairnq_ext_groups",
        "cairnq_ext_groups_served_idx",
        "cairnq_ext_group_rate_claims",
        "cairnq_ext_group_rate_claims_group_idx",
        "cairnq_ext_group_rate_claims_name_idx",
      ],
      absent: ["cairnq_ext_task_groups_walk_idx"],
    });
  });

  it("a statement of another form is refused, not skipped", () => {
    expect(() => extensionObjects(["ALTER TABLE cairnq_ext_groups ADD COLUMN x int"])).toThrow(/does not know/);
    expect(() => extensionObjects(["CREATE TABLE cairnq_ext_x (a int)"])).toThrow(/does not know/);
  });
});

describe("objectsInPlace", () => {
  const objects = extensionObjects(EXTENSION_DDL["cairnq_ext_groups*"]);
  const all = new Set(objects.present);
  it("is true only when every created object is there and no dropped one is", () => {
    expect(objectsInPlace(objects, all)).toBe(true);
    for (const name of objects.present) expect(objectsInPlace(objects, new Set([...all].filter((n) => n !== name)))).toBe(false);
    expect(objectsInPlace(objects, new Set([...all, "cairnq_ext_task_groups_walk_idx"]))).toBe(false);
    expect(objectsInPlace(objects, new Set())).toBe(false);
  });
});

describe("defaultExtensionCatalog", () => {
  it("reads sqlite_master with a SQLite syntax and pg_catalog in current_schema() with a Postgres syntax, the names as literals", () => {
    const names = ["cairnq_ext_groups", "o'dd"];
    const sqlite = defaultExtensionCatalog(new SqliteSyntax(), names).sql;
    expect(sqlite).toContain("FROM sqlite_master");
    expect(sqlite).toContain("IN ('cairnq_ext_groups', 'o''dd')");
    const postgres = defaultExtensionCatalog(new PostgresSyntax(), names).sql;
    expect(postgres).toContain("pg_catalog.pg_class");
    expect(postgres).toContain("current_schema()");
    expect(postgres).toContain("IN ('cairnq_ext_groups', 'o''dd')");
    expect(new DefaultDialect().extensionCatalog(names).sql).toBe(sqlite);
  });
});
