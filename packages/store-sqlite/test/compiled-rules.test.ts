/**
 * The compiled SQL decides exactly what the protocol's in-memory evaluator
 * decides, on SQLite: the shared equivalence test of @cairnq/test-support
 * (every rule run both ways on random rows and parameters), here on an
 * in-memory database migrated as the store migrates, with the store's
 * compiler — its SQLite syntax and the process clock, bound as one parameter.
 */
import Database from "better-sqlite3";
import { JSON_COLUMNS, TASK_COLUMNS } from "@cairnq/protocol/adapter";
import { ProcessClock, StatementCompiler } from "@cairnq/store-kysely";
import { describeCompiledRules, NOW } from "@cairnq/test-support/compiled-rules";
import { SQLITE_MIGRATIONS } from "../src/sqlite-schema.js";
import { SQLiteStoreSyntax } from "../src/sqlite-store-syntax.js";

const JSON_COLUMN_SET: ReadonlySet<string> = new Set(JSON_COLUMNS);

describeCompiledRules({
  label: "SQLite",
  trials: 400,
  async open() {
    const db = new Database(":memory:");
    for (const migration of SQLITE_MIGRATIONS) for (const statement of migration.statements) db.exec(statement);
    const insert = db.prepare(`INSERT INTO cairnq_tasks (${TASK_COLUMNS.join(", ")}) VALUES (${TASK_COLUMNS.map(() => "?").join(", ")})`);
    return {
      compiler: new StatementCompiler(new SQLiteStoreSyntax(), new ProcessClock(() => NOW)),
      async reset() {
        db.exec("DELETE FROM cairnq_tasks");
      },
      async insert(rows) {
        for (const row of rows) {
          insert.run(TASK_COLUMNS.map((column) => (JSON_COLUMN_SET.has(column) && row[column] !== null ? JSON.stringify(row[column]) : row[column])));
        }
      },
      async run(statement, params) {
        const values = statement.parameters(params);
        const prepared = db.prepare(statement.sql);
        const args = values.length === 0 ? [] : [Object.fromEntries(values.map((v, i) => [i + 1, v]))];
        return prepared.reader ? (prepared.all(...args) as Record<string, unknown>[]) : (prepared.run(...args), []);
      },
      async rows() {
        return db.prepare("SELECT * FROM cairnq_tasks").all() as Record<string, unknown>[];
      },
      async close() {
        db.close();
      },
    };
  },
});
