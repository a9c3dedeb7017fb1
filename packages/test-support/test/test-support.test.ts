import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { PgAdmin, exited, killChildren, nextLine, pgDsn, spawnFixture, trackTimers } from "@cairnq/test-support";

const packageRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

afterEach(() => killChildren());

describe("pgDsn", () => {
  it("fails loudly, naming the variable, when CAIRNQ_TEST_PG_DSN is unset or blank", () => {
    const saved = process.env.CAIRNQ_TEST_PG_DSN;
    try {
      for (const value of [undefined, "  "]) {
        if (value === undefined) delete process.env.CAIRNQ_TEST_PG_DSN;
        else process.env.CAIRNQ_TEST_PG_DSN = value;
        expect(() => pgDsn()).toThrow(/CAIRNQ_TEST_PG_DSN is not set.*never skip/);
      }
    } finally {
      if (saved === undefined) delete process.env.CAIRNQ_TEST_PG_DSN;
      else process.env.CAIRNQ_TEST_PG_DSN = saved;
    }
  });
});

describe("PgAdmin", () => {
  it("creates a fresh schema and drops it", async () => {
    const admin = new PgAdmin();
    try {
      const schema = await admin.createSchema("cq_support");
      expect(await admin.q("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema])).toHaveLength(1);
      await admin.dropSchema(schema);
      expect(await admin.q("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema])).toHaveLength(0);
    } finally {
      await admin.close();
    }
  });
});

describe("trackTimers", () => {
  it("reports a pending timeout with where it was made, and forgets fired and cleared ones", async () => {
    const timers = trackTimers();
    try {
      const left = setTimeout(() => {}, 60_000);
      clearTimeout(setTimeout(() => {}, 60_000));
      clearInterval(setInterval(() => {}, 60_000));
      await new Promise((resolve) => setTimeout(resolve, 1));
      expect(timers.pending()).toBe(1);
      expect(timers.open()[0]).toContain("test-support.test.ts");
      clearTimeout(left);
      expect(timers.pending()).toBe(0);
    } finally {
      timers.restore();
    }
  });
});

describe("spawnFixture", () => {
  it("runs a TypeScript fixture with the workspace packages mapped to their sources", async () => {
    const child = spawnFixture(path.join(packageRoot, "test/fixtures/echo-source.ts"), [], { cwd: packageRoot });
    const line = await nextLine(child, (l) => l.startsWith("resolved "));
    expect(line).toMatch(/packages\/runtime\/src\/index\.ts$/);
    expect(await exited(child)).toBe(0);
  });
});
