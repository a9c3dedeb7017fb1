import { InvalidArgument } from "@cairnq/protocol";
import { describe, expect, it } from "vitest";
import { MySQLStore } from "../src/index.ts";
import { MYSQL_URL_PARAMETERS, parseConnectionString } from "../src/mysql-connection-string.ts";
import { connectFailure } from "../src/mysql-errors.ts";

function rejection(target: string): InvalidArgument {
  try {
    new MySQLStore(target);
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidArgument);
    return error as InvalidArgument;
  }
  throw new Error(`new MySQLStore(${target}) did not throw`);
}

describe("connection strings, read at construction", () => {
  it("reads host, port, user, password and database into mysql2 options; the address names host:port", () => {
    expect(parseConnectionString("mariadb://app:p%40ss@db.internal:3307/queue")).toEqual({
      options: { host: "db.internal", port: 3307, user: "app", password: "p@ss", database: "queue" },
      address: "db.internal:3307",
    });
    expect(parseConnectionString("mysql://root@127.0.0.1/app").address).toBe("127.0.0.1:3306");
  });

  it("another scheme is refused by parseConnectionString itself, naming the target, as Postgres's check is in its connection-string file", () => {
    for (const target of ["postgres://root@127.0.0.1:5432/app", "http://127.0.0.1/app", "app"]) {
      expect(() => parseConnectionString(target)).toThrow(InvalidArgument);
      expect(() => parseConnectionString(target)).toThrow(/^a MySQL connection string starts with mysql:\/\/ \(got /);
      expect(rejection(target).argument).toBe("target");
    }
  });

  it("a connection string without a database is an InvalidArgument naming what is missing", () => {
    for (const target of ["mysql://root@127.0.0.1:3306", "mysql://root@127.0.0.1:3306/"]) {
      const error = rejection(target);
      expect(error.argument).toBe("target");
      expect(error.message).toContain("names no database");
      expect(error.message).toContain("mysql://user@127.0.0.1:3306/app");
    }
  });

  it("a connection string that is not a URL is an InvalidArgument, its password hidden", () => {
    const error = rejection("mysql://root:hunter2@127.0.0.1:abc/x");
    expect(error.message).toContain("not a valid URL");
    expect(error.message).not.toContain("hunter2");
    expect(error.cause).toBeInstanceOf(TypeError);
  });

  it("a password given as a query parameter is hidden too", () => {
    const error = rejection("mysql://root@127.0.0.1:abc/x?connectTimeout=5&password=hunter2");
    expect(error.message).toContain("not a valid URL");
    expect(error.message).toContain('"mysql://root@127.0.0.1:abc/x?connectTimeout=5&password=***"');
    expect(error.message).not.toContain("hunter2");
  });

  it("unknown query parameters are refused, listing the accepted ones; accepted ones reach mysql2 (JSON values parsed)", () => {
    const error = rejection("mysql://root@127.0.0.1:3306/x?foo=bar&charset=latin1");
    expect(error.message).toContain("foo, charset");
    for (const name of MYSQL_URL_PARAMETERS) expect(error.message).toContain(name);
    const { options } = parseConnectionString('mysql://root@h/x?connectTimeout=2500&ssl={"rejectUnauthorized":true}');
    expect(options).toMatchObject({ connectTimeout: 2500, ssl: { rejectUnauthorized: true } });
  });
});

describe("connect failures", () => {
  it("a refused connection names host:port and keeps the driver's error as cause", async () => {
    const store = new MySQLStore("mysql://root@127.0.0.1:1/x");
    try {
      const error = (await store.submit({ name: "a", payload: {} }).then(() => null, (e: unknown) => e)) as Error & { code?: unknown };
      expect(error.name).toBe("MySQLConnectError");
      expect(error.message).toContain("could not open a connection to MySQL at 127.0.0.1:1");
      expect(error.code).toBe("ECONNREFUSED");
      expect((error.cause as { code?: unknown }).code).toBe("ECONNREFUSED");
    } finally {
      await store.close();
    }
  });

  it("a timed-out connect says so and names the connectTimeout parameter", () => {
    const error = connectFailure(Object.assign(new Error("connect ETIMEDOUT"), { code: "ETIMEDOUT" }), "10.0.0.9:3306");
    expect(error.message).toContain("10.0.0.9:3306");
    expect(error.message).toContain("?connectTimeout=");
    expect((error as Error & { code?: unknown }).code).toBe("ETIMEDOUT");
  });
});
