/**
 * `createDashboard`'s option checks: every option is type-checked when the
 * dashboard is built, so a value from an env var or JSON that would quietly
 * change what the dashboard does (a writable dashboard for readOnly "true")
 * or break its first request is an `InvalidArgument` naming the option.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CairnQ } from "@cairnq/client";
import { createDashboard } from "@cairnq/dashboard";
import type { TaskStore } from "@cairnq/protocol";
import { InvalidArgument } from "@cairnq/protocol";
import { SQLiteStore } from "@cairnq/store-sqlite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

let dir: string;
let store: TaskStore;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "cairnq-dashboard-options-"));
  store = new SQLiteStore(join(dir, "cairnq.db"));
});

afterAll(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The `InvalidArgument` createDashboard throws for these options. */
function refusal(options: Record<string, unknown>): InvalidArgument {
  try {
    void createDashboard({ store, ...options }).close();
  } catch (err) {
    expect(err).toBeInstanceOf(InvalidArgument);
    return err as InvalidArgument;
  }
  throw new Error(`createDashboard accepted ${JSON.stringify(options)}`);
}

describe("createDashboard options", () => {
  it("refuses a readOnly that is not a boolean, naming what was given", () => {
    for (const readOnly of ["true", "false", 1, 0, null, {}]) {
      const err = refusal({ readOnly });
      expect(err.argument).toBe("readOnly");
      expect(err.message).toMatch(/^readOnly must be true or false, got /);
    }
    expect(refusal({ readOnly: "true" }).message).toContain('got "true"');
    expect(refusal({ readOnly: 1 }).message).toContain("got 1;");
  });

  it("refuses allowedHosts that is not a non-empty array of non-empty strings", () => {
    for (const allowedHosts of ["localhost:4000", [4000], ["localhost:4000", null], [], [""], { 0: "localhost:4000" }]) {
      const err = refusal({ allowedHosts });
      expect(err.argument).toBe("allowedHosts");
    }
    expect(refusal({ allowedHosts: "localhost:4000" }).message).toContain('got "localhost:4000"');
    expect(refusal({ allowedHosts: [4000] }).message).toContain("got [4000]");
  });

  it("needs exactly one of store or client: in its types, and at run time for a JS caller", () => {
    // Compile-time only: never called.
    const typed = (client: CairnQ) => [
      // @ts-expect-error neither store nor client: nothing to show
      createDashboard({}),
      // @ts-expect-error settings alone are not enough
      createDashboard({ readOnly: true, basePath: "/admin" }),
      // @ts-expect-error both: which one to show would be a guess
      createDashboard({ store, client }),
      createDashboard({ store, readOnly: true }),
      createDashboard({ client, allowedHosts: ["localhost:4000"] }),
    ];
    expect(typeof typed).toBe("function");
    for (const options of [{}, { readOnly: true }, { store, client: new CairnQ(store) }]) {
      expect(() => createDashboard(options as never)).toThrow(/exactly one of store or client/);
    }
  });

  it("refuses a store or client that is not one, and options that are not an object", () => {
    expect(refusal({ store: "./cairnq.db" }).argument).toBe("store");
    expect(() => createDashboard({ client: "sqlite:./cairnq.db" } as never)).toThrow(/client must be a CairnQ client/);
    expect(() => createDashboard([] as never)).toThrow(InvalidArgument);
    expect(() => createDashboard("store" as never)).toThrow(/options object/);
  });

  it("refuses non-integer or out-of-range durations and a non-function authorize", () => {
    expect(refusal({ pollIntervalMs: "2000" }).message).toContain('got "2000"');
    expect(refusal({ metricsCacheMs: 1.5 }).argument).toBe("metricsCacheMs");
    expect(refusal({ metricsCacheMs: -1 }).argument).toBe("metricsCacheMs");
    expect(refusal({ authorize: "admin" }).message).toContain('got "admin"');
  });

  it("accepts a basePath of unreserved characters only, as it arrives in req.url", () => {
    for (const basePath of ["/ad min", "/admin?x=1", "/admin#top", "/ad%20min", "/admin/", "admin", "/", "//admin", "/a//b", "/./admin", "/admin/..", "/caf\u00e9", 7]) {
      expect(refusal({ basePath }).argument, String(basePath)).toBe("basePath");
    }
    expect(refusal({ basePath: "/ad min" }).message).toContain('got "/ad min"');
    for (const basePath of ["", "/admin", "/api/admin", "/a-b_c.d~e/v1", "/.well-known"]) {
      expect(() => void createDashboard({ store, basePath }).close(), basePath).not.toThrow();
    }
  });

  it("accepts every option with a value of its type, and undefined for any", () => {
    const dashboard = createDashboard({
      store,
      readOnly: false,
      authorize: () => true,
      basePath: "/admin",
      allowedHosts: ["127.0.0.1:4000"],
      pollIntervalMs: 100,
      metricsCacheMs: 0,
    });
    void dashboard.close();
    void createDashboard({ store, readOnly: undefined, allowedHosts: undefined, basePath: undefined }).close();
  });
});
