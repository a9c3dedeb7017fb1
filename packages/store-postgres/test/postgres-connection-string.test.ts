import { describe, expect, it } from "vitest";
import { InvalidArgument } from "@cairnq/protocol";
import { PostgresStore } from "../src/index.js";

// Construction only: no statement runs, so no connection opens. pg would read each refused string only when it
// connects, with an error that looks like the server being down — a worker would retry it forever.
describe("the connection string, checked when the store is built", () => {
  it.each([
    ["a port that is not a number", "postgres://app@127.0.0.1:543O/app", /it is not a valid URL \(is the port a number\?\)/],
    ["a port out of range", "postgresql://app@db:99999/app", /it is not a valid URL/],
    ["another database's URL", "mysql://root@127.0.0.1:3306/app", /its scheme is mysql:, not postgres:\/\/ or postgresql:\/\//],
    ["an http URL", "http://127.0.0.1:5432/app", /its scheme is http:/],
    ["a bare database name", "app", /"app" cannot be used: it is not a URL/],
    ["a key=value string", "host=db dbname=app", /it is not a URL/],
  ])("refuses %s with InvalidArgument", (_what, dsn, message) => {
    expect(() => new PostgresStore(dsn)).toThrow(InvalidArgument);
    expect(() => new PostgresStore(dsn)).toThrow(message);
    expect(() => new PostgresStore(dsn)).toThrow(/Write it as postgres:\/\/user:password@host:5432\/database/);
  });

  it("never shows the password", () => {
    const error = (() => {
      try {
        new PostgresStore("mysql://root:hunter2@db:3306/app");
      } catch (err) {
        return err as InvalidArgument;
      }
      return null;
    })();
    expect(error?.argument).toBe("connectionString");
    expect(error?.message).toContain('"mysql://root:***@db:3306/app"');
    expect(error?.message).not.toContain("hunter2");
  });

  it("never shows a password given as a query parameter, which pg reads as one", () => {
    expect(() => new PostgresStore("postgres://db:543O/app?password=hunter2")).toThrow('"postgres://db:543O/app?password=***" cannot be used: it is not a valid URL');
    expect(() => new PostgresStore("postgres://db:543O/app?password=hunter2")).not.toThrow(/hunter2/);
    expect(() => new PostgresStore("postgres://app@db/app", { listen: "postgres://db:543O/app?sslmode=require&password=hunter2" })).toThrow(
      /got "postgres:\/\/db:543O\/app\?sslmode=require&password=\*\*\*": it is not a valid URL/,
    );
  });

  it.each([
    "postgres://app:secret@db:5432/app",
    "postgresql://app@db/app",
    "POSTGRES://app@db/app",
    "postgres://app@[::1]:5432/app?sslmode=require",
    "postgres://app@/app?host=/var/run/postgresql",
    "postgresql:///app?host=/tmp",
    "postgres://app@%2Fvar%2Frun%2Fpostgresql/app",
    "postgres://app:p%ss word@db/app",
    "socket:/var/run/postgresql?db=app",
    "/var/run/postgresql app",
  ])("accepts %s, a form pg reads", (dsn) => {
    expect(() => new PostgresStore(dsn)).not.toThrow();
  });

  it("takes the same forms for listen, and refuses the same mistakes", () => {
    expect(() => new PostgresStore("postgres://app@db/app", { listen: "postgres://app@/app?host=/var/run/postgresql" })).not.toThrow();
    expect(() => new PostgresStore("postgres://app@db/app", { listen: "postgres://app:secret@db:543O/app" })).toThrow(
      'listen must be a connection string pg reads (a postgres:// or postgresql:// URL, a socket: URL, or "<socket directory> [database]"), a function returning a connected pg.Client, or false, got "postgres://app:***@db:543O/app": it is not a valid URL',
    );
    // The forms that message names are the ones taken.
    for (const listen of ["postgresql://app@db/app", "socket:/var/run/postgresql?db=app", "/var/run/postgresql app"]) {
      expect(() => new PostgresStore("postgres://app@db/app", { listen })).not.toThrow();
    }
    expect(() => new PostgresStore("postgres://app@db/app", { listen: 5432 as never })).toThrow(
      'listen must be a connection string pg reads (a postgres:// or postgresql:// URL, a socket: URL, or "<socket directory> [database]"), a function returning a connected pg.Client, or false, got number 5432',
    );
  });
});

describe("the onError hook, checked when the store is built", () => {
  it.each([5, "log", { error: () => {} }])("refuses %j: connection and LISTEN failures would be reported nowhere", (hook) => {
    const build = () => new PostgresStore("postgres://app@127.0.0.1:5432/app", { onError: hook as never });
    expect(build).toThrow(InvalidArgument);
    expect(build).toThrow(/onError must be a function \(err, \{ source \}\) => void, got /);
  });
});
