/**
 * The MySQL extension DDL (`MYSQL_EXTENSION_DDL`) and its catalog check agree:
 * every statement is one the check knows, every table and index it creates is
 * looked for, and the dialect's catalog read asks `information_schema` of the
 * current database for exactly those names.
 */
import type { ExtensionTable } from "@cairnq/store-kysely";
import { EXTENSION_DDL, extensionObjects } from "@cairnq/store-kysely";
import { describe, expect, it } from "vitest";
import { MYSQL_EXTENSION_DDL } from "../src/index.js";
import { MySQLStoreDialect } from "../src/mysql-store-dialect.js";

const FEATURES = Object.keys(EXTENSION_DDL) as ExtensionTable[];

describe("MySQL extension DDL and its catalog check", () => {
  const dialect = new MySQLStoreDialect("mysql://root@127.0.0.1:1/unused");

  it("has a DDL list for every feature the core has", () => {
    expect(Object.keys(MYSQL_EXTENSION_DDL).sort()).toEqual([...FEATURES].sort());
  });

  it.each(FEATURES)("%s: every CREATE is looked for (by the name it creates), and the catalog read names each", (feature) => {
    const ddl = dialect.extensionDdl(feature);
    expect(ddl).toBe(MYSQL_EXTENSION_DDL[feature]);
    const objects = extensionObjects(ddl);
    const creates = ddl.filter((statement) => statement.startsWith("CREATE "));
    expect(objects.present).toHaveLength(creates.length);
    creates.forEach((statement, i) => expect(statement).toMatch(new RegExp(`^CREATE (TABLE|INDEX) IF NOT EXISTS ${objects.present[i]!}[ (]`)));
    expect(objects.present.length + objects.absent.length).toBe(ddl.length);
    const sql = dialect.extensionCatalog([...objects.present, ...objects.absent]).sql;
    expect(sql).toContain("information_schema.TABLES");
    expect(sql).toContain("information_schema.STATISTICS");
    expect(sql).toContain("DATABASE()");
    for (const name of objects.present) expect(sql).toContain(`'${name}'`);
  });
});
