/**
 * The compiled SQL decides exactly what the protocol's in-memory evaluator
 * decides, on Postgres: the shared equivalence test of @cairnq/test-support
 * (every rule run both ways on random rows and parameters), here in a fresh
 * schema migrated as the store migrates, with the store's own compiler —
 * `PostgresStoreSyntax` and the database clock `POSTGRES_CLOCK`, so the
 * statements read `now()` / `clock_timestamp()` exactly as in production.
 *
 * To make that clock read {@link NOW}, the schema shadows both functions:
 * the connection's `search_path` is `"<schema>", pg_catalog`, and naming
 * pg_catalog after the schema puts the schema's functions first.
 */
import { JSON_COLUMNS, TASK_COLUMNS } from "@cairnq/protocol/adapter";
import { POSTGRES_CLOCK, StatementCompiler } from "@cairnq/store-kysely";
import { PgAdmin } from "@cairnq/test-support";
import { describeCompiledRules, NOW } from "@cairnq/test-support/compiled-rules";
import { POSTGRES_MIGRATIONS } from "../../src/postgres-schema.js";
import { PostgresStoreSyntax } from "../../src/postgres-store-syntax.js";

const JSON_COLUMN_SET: ReadonlySet<string> = new Set(JSON_COLUMNS);
const syntax = new PostgresStoreSyntax();

describeCompiledRules({
  label: "Postgres",
  // Each trial is a few round trips; 100 per rule still reaches every branch (the seeds are fixed).
  trials: 100,
  async open() {
    const admin = new PgAdmin();
    const schema = await admin.createSchema("cq_rules");
    await admin.q(`SET search_path TO "${schema}", pg_catalog`);
    const frozen = `timestamptz 'epoch' + interval '1 millisecond' * ${NOW}`;
    await admin.q(`CREATE FUNCTION "${schema}".now() RETURNS timestamptz LANGUAGE sql STABLE AS $$ SELECT ${frozen} $$`);
    await admin.q(`CREATE FUNCTION "${schema}".clock_timestamp() RETURNS timestamptz LANGUAGE sql VOLATILE AS $$ SELECT ${frozen} $$`);
    for (const migration of POSTGRES_MIGRATIONS) for (const statement of migration.statements) await admin.q(statement);
    const placeholders = TASK_COLUMNS.map((_, i) => `$${i + 1}`).join(", ");
    return {
      compiler: new StatementCompiler(syntax, POSTGRES_CLOCK),
      async reset() {
        await admin.q("DELETE FROM cairnq_tasks");
      },
      async insert(rows) {
        for (const row of rows) {
          await admin.q(
            `INSERT INTO cairnq_tasks (${TASK_COLUMNS.join(", ")}) VALUES (${placeholders})`,
            TASK_COLUMNS.map((column) => (JSON_COLUMN_SET.has(column) && row[column] !== null ? JSON.stringify(row[column]) : row[column])),
          );
        }
      },
      run: (statement, params) => admin.q(statement.sql, statement.parameters(params)),
      rows: () => admin.q(`SELECT ${syntax.taskColumns()} FROM cairnq_tasks`),
      async close() {
        try {
          await admin.dropSchema(schema);
        } finally {
          await admin.close();
        }
      },
    };
  },
});
