import { describe, expect, it } from "vitest";
import { redactConnectionString } from "../src/redact-connection-string.ts";

describe("redactConnectionString", () => {
  it.each([
    ["the user part's password", "postgres://app:hunter2@db:5432/app", '"postgres://app:***@db:5432/app"'],
    ["a MySQL URL's", "mysql://root:hunter2@127.0.0.1:abc/x", '"mysql://root:***@127.0.0.1:abc/x"'],
    ["a password holding an unescaped @", "postgres://app:hun@ter2@db/app", '"postgres://app:***@db/app"'],
    ["a password holding an unescaped /", "postgres://app:hun/ter2@db/app", '"postgres://app:***@db/app"'],
    ["a password query parameter", "postgres://db:543O/app?password=hunter2", '"postgres://db:543O/app?password=***"'],
    ["a later one, and sslpassword", "mysql://db/app?connectTimeout=5&password=hunter2&sslpassword=hunter2", '"mysql://db/app?connectTimeout=5&password=***&sslpassword=***"'],
    ["a percent-encoded parameter name", "postgres://db/app?pass%77ord=hunter2", '"postgres://db/app?pass%77ord=***"'],
    ["a socket: URL's password", "socket://app:hunter2@/var/run/postgresql?db=app", '"socket://app:***@/var/run/postgresql?db=app"'],
    ["a libpq key=value string's", "host=db password=hunter2 dbname=app", '"host=db password=*** dbname=app"'],
  ])("hides %s", (_what, dsn, shown) => {
    expect(redactConnectionString(dsn)).toBe(shown);
    expect(redactConnectionString(dsn)).not.toContain("hunter2");
  });

  it.each([
    "postgres://app@db:5432/app?application_name=a@b",
    "postgres://db:5432/app?application_name=a@b",
    "postgres://app@/app?host=/var/run/postgresql",
    "/var/run/postgresql app",
    "host=db dbname=app",
  ])("keeps %s, which holds no password, as it is", (dsn) => {
    expect(redactConnectionString(dsn)).toBe(JSON.stringify(dsn));
  });

  it("cuts a long string to 120 characters", () => {
    expect(JSON.parse(redactConnectionString(`postgres://db/${"a".repeat(200)}`))).toHaveLength(120);
  });
});
