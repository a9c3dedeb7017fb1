/**
 * Importing `cairnq` loads no database driver until a factory's store opens,
 * checked in a fresh process running the built package.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Children } from "../support/processes.ts";

describe("importing cairnq loads no database driver", () => {
  const children = new Children();
  let dir: string | undefined;

  afterEach(async () => {
    try {
      await children.reap();
    } finally {
      if (dir) await rm(dir, { recursive: true, force: true });
      dir = undefined;
    }
  });

  it("in a fresh process: neither better-sqlite3 nor pg after `import \"cairnq\"`; better-sqlite3 once CairnQ.sqlite(...) connects", async () => {
    dir = await mkdtemp(join(tmpdir(), "cairnq-umbrella-"));
    const child = children.spawn("load-check", "load-check.mjs", [join(dir, "cairnq.db")]);
    expect(await child.exitWithin(20_000), `load-check${child.tail()}`).toEqual({ code: 0, signal: null });
    const report = JSON.parse(child.stdout.trim()) as Record<string, Record<string, boolean>> & { exports: number };

    const none = { "better-sqlite3": false, pg: false, nativeSqlite: false };
    expect(report.before).toEqual(none);
    expect(report.exports, "the child imported the built cairnq").toBeGreaterThan(0);
    expect(report.afterImport, "drivers loaded by `import \"cairnq\"`").toEqual(none);
    // The positive control: the probe does see a driver once one is loaded — and SQLite never pulls in pg.
    expect(report.afterConnect).toEqual({ "better-sqlite3": true, pg: false, nativeSqlite: true });
  });
});
