/**
 * `--db` naming a SQLite file the CLI must not install CairnQ into: an
 * existing file without CairnQ's tables (an application's own database, an
 * empty file) is refused like a Postgres schema without them — exit 2, the
 * `migrate` line to type — and left byte for byte as it was. Only `migrate`
 * creates the tables.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli as cli } from "../support/cli.js";

function tables(file: string): string[] {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    return (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as { name: string }[]).map((row) => row.name);
  } finally {
    db.close();
  }
}

describe("cairnq on a SQLite file without CairnQ's tables", () => {
  let dir = "";
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "cairnq-cli-files-"));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("refuses every command but migrate (exit 2, says to migrate) and leaves an application's database untouched", async () => {
    const file = join(dir, "app.db");
    const app = new Database(file);
    app.exec("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO users (name) VALUES ('ada')");
    app.close();
    const before = readFileSync(file);
    const runs = await Promise.all([["stats"], ["list"], ["metrics"], ["get", "task_01JB8ZK3M2Q4W5E6R7T8Y9V0XP"], ["dashboard", "--port", "0"]].map((args) => cli([...args, "--db", file])));
    for (const run of runs) {
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr).toContain(`no CairnQ tables in SQLite file ${file}; check --db, or create them with: cairnq migrate --db ${JSON.stringify(file)}`);
    }
    const asJson = await cli(["stats", "--json", "--db", file]);
    expect(asJson.code).toBe(2);
    expect(JSON.parse(asJson.stdout)).toMatchObject({ error: { code: "usage", message: expect.stringContaining("no CairnQ tables") } });
    expect(readFileSync(file).equals(before)).toBe(true);
    expect(readdirSync(dir).sort()).toEqual(["app.db"]);
    expect(tables(file)).toEqual(["users"]);

    const migrated = await cli(["migrate", "--json", "--db", file]);
    expect(migrated.code, migrated.stderr).toBe(0);
    expect(tables(file)).toEqual(expect.arrayContaining(["users", "cairnq_tasks"]));
    const stats = await cli(["stats", "--json", "--db", file]);
    expect(stats.code, stats.stderr).toBe(0);
    expect(JSON.parse(stats.stdout)).toMatchObject({ queues: {}, totals: { total: 0 } });
  });

  it("refuses an empty file and leaves it empty", async () => {
    const file = join(dir, "typo.db");
    writeFileSync(file, "");
    const run = await cli(["list", "--db", file]);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain("no CairnQ tables in SQLite file");
    expect(readFileSync(file).length).toBe(0);
    expect(existsSync(`${file}-wal`)).toBe(false);
  });

  it("refuses a SQLite URI filename with exit 2, for migrate too, and creates nothing", async () => {
    for (const command of ["stats", "migrate"]) {
      const run = await cli([command, "--db", "file:./s1.db"], { cwd: dir });
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr).toContain("is a SQLite URI filename ('file:…'), which is not supported since not every driver reads them; give a plain path instead");
    }
    expect(existsSync(join(dir, "file:."))).toBe(false);
  });
});
