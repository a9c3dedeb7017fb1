import { PROTOCOL_VERSION, SCHEMA_VERSION, STATUSES } from "@cairnq/protocol";
import { describe, expect, it } from "vitest";
import type { SchemaFlavor } from "../src/index.js";
import { buildMigrations, ledgerDdl, MIGRATION_NAMES, SQLITE_SCHEMA, tasksTableDdl } from "../src/index.js";

describe("migrations (§3.6)", () => {
  it("SQLite ships every ledger name except the Postgres-only 0003, in order", () => {
    expect(buildMigrations(SQLITE_SCHEMA).map((m) => m.name)).toEqual(MIGRATION_NAMES.filter((n) => n !== "0003_notify.sql"));
  });

  it("a flavor with notify statements ships 0003 in its place", () => {
    const flavor: SchemaFlavor = { ...SQLITE_SCHEMA, notify: ["SELECT 1"] };
    const names = buildMigrations(flavor).map((m) => m.name);
    expect(names).toEqual([...MIGRATION_NAMES]);
    expect(buildMigrations(flavor)[2]?.statements).toEqual(["SELECT 1"]);
  });

  it("the last migration leaves schema_version at SCHEMA_VERSION; 0001 inserts protocol_version only if absent", () => {
    const migrations = buildMigrations(SQLITE_SCHEMA);
    expect(migrations.at(-1)?.statements.at(-1)).toContain(`value = '${SCHEMA_VERSION}'`);
    expect(migrations[0]?.statements).toContain(
      `INSERT INTO cairnq_meta ("key", value) VALUES ('protocol_version', '${PROTOCOL_VERSION}') ON CONFLICT ("key") DO NOTHING`,
    );
  });

  it("every creation is re-runnable: 'if not exists' except 0008's drop-and-create", () => {
    for (const migration of buildMigrations(SQLITE_SCHEMA)) {
      for (const statement of migration.statements) {
        if (!statement.startsWith("CREATE")) continue;
        if (migration.name === "0008_claim_due_index.sql") expect(statement).not.toContain("IF NOT EXISTS");
        else expect(statement).toContain("IF NOT EXISTS");
      }
    }
  });

  it("the task table's status CHECK is built from STATUSES", () => {
    expect(tasksTableDdl(SQLITE_SCHEMA)).toContain(`CHECK (status IN (${STATUSES.map((s) => `'${s}'`).join(", ")}))`);
    expect(ledgerDdl(SQLITE_SCHEMA)).toBe(
      "CREATE TABLE IF NOT EXISTS cairnq_migrations (name text PRIMARY KEY, applied_at_ms integer NOT NULL)",
    );
  });
});
