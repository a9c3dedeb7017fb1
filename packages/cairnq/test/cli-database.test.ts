import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { resolveDatabase } from "../src/cli/database.js";
import { UsageError } from "../src/cli/usage-error.js";

function usageErrorOf(run: () => unknown): UsageError {
  try {
    run();
  } catch (err) {
    expect(err).toBeInstanceOf(UsageError);
    return err as UsageError;
  }
  throw new Error("expected a UsageError");
}

describe("cairnq CLI --db", () => {
  it("takes a postgres:// URL with its schema, and describes it without credentials", () => {
    const target = resolveDatabase("postgres://u:secret@db.example:5432/app", "jobs", {});
    expect(target).toEqual({ kind: "postgres", target: "postgres://u:secret@db.example:5432/app", schema: "jobs", description: "Postgres db.example:5432/app (schema jobs)" });
  });

  it("takes a mysql:// URL and CAIRNQ_DB when --db is absent", () => {
    const target = resolveDatabase(undefined, undefined, { CAIRNQ_DB: "mysql://root@127.0.0.1:3306/test" });
    expect(target).toEqual({ kind: "mysql", target: "mysql://root@127.0.0.1:3306/test", schema: null, description: "MySQL 127.0.0.1:3306/test" });
  });

  it("resolves anything else as a SQLite file", () => {
    expect(resolveDatabase("./q.db", undefined, {})).toMatchObject({ kind: "sqlite", target: resolve("./q.db"), schema: null });
  });

  it("says how to write a URL that does not parse, per backend", () => {
    expect(usageErrorOf(() => resolveDatabase("postgres://u@[bad", undefined, {})).message).toBe(
      '--db "postgres://u@[bad" is not a valid URL; write it as postgres://user:password@host:5432/database',
    );
    expect(usageErrorOf(() => resolveDatabase("mysql://u@[bad", undefined, {})).message).toBe(
      '--db "mysql://u@[bad" is not a valid URL; write it as mysql://user:password@host:3306/database',
    );
  });

  it("refuses a URL of another scheme instead of taking it for a SQLite file, listing the schemes it opens", () => {
    expect(usageErrorOf(() => resolveDatabase("http://x", undefined, {})).message).toBe(
      '--db "http://x" has the URL scheme http://, which the CLI cannot open: pass a postgres://, postgresql://, mysql:// or mariadb:// URL, or a SQLite file path',
    );
    expect(usageErrorOf(() => resolveDatabase("sqlite:///tmp/q.db", undefined, {})).message).toMatch(/^--db "sqlite:\/\/\/tmp\/q\.db" has the URL scheme sqlite:\/\//);
    expect(resolveDatabase("./odd:name.db", undefined, {})).toMatchObject({ kind: "sqlite", target: resolve("./odd:name.db") });
  });

  it("refuses a SQLite URI filename ('file:…') with the store's advice, instead of resolving it as a path", () => {
    for (const given of ["file:./s1.db", "file:///tmp/q.db", "file:q.db?mode=ro", "FILE:q.db"]) {
      expect(usageErrorOf(() => resolveDatabase(given, undefined, {})).message).toBe(
        `--db ${JSON.stringify(given)} is a SQLite URI filename ('file:…'), which is not supported since not every driver reads them; give a plain path instead (for example --db ./cairnq.db)`,
      );
    }
  });

  it("refuses :memory:, which would otherwise be a file of that name", () => {
    expect(usageErrorOf(() => resolveDatabase(":memory:", undefined, {})).message).toMatch(/^--db ":memory:" names a private in-memory SQLite database, .*\(for example --db \.\/cairnq\.db\)$/);
    expect(resolveDatabase("./:memory:", undefined, {})).toMatchObject({ kind: "sqlite", target: resolve("./:memory:") });
  });

  it("refuses a MySQL URL that names no database", () => {
    for (const given of ["mysql://root@127.0.0.1:3306/", "mysql://root@127.0.0.1:3306", "mariadb://root@db"]) {
      expect(usageErrorOf(() => resolveDatabase(given, undefined, {})).message).toMatch(new RegExp(`^--db "${given.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}" names no database; put it after the host: mysql://user@`));
    }
  });

  it("refuses --schema where it does not apply, and a missing database", () => {
    expect(usageErrorOf(() => resolveDatabase("mysql://root@h/test", "jobs", {})).message).toMatch(/--schema applies to Postgres only; on MySQL/);
    expect(usageErrorOf(() => resolveDatabase("./q.db", "jobs", {})).message).toMatch(/--schema applies to Postgres only, and --db "\.\/q\.db" is a SQLite file/);
    expect(usageErrorOf(() => resolveDatabase(" ", undefined, {})).message).toMatch(/^no database given/);
  });
});
