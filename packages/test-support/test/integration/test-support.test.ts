import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { PgAdmin, exited, killChildren, nextLine, spawnFixture } from "@cairnq/test-support";

const packageRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

afterEach(() => killChildren());

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

describe("spawnFixture", () => {
  it("runs a TypeScript fixture with the workspace packages mapped to their sources", async () => {
    const child = spawnFixture(path.join(packageRoot, "test/fixtures/echo-source.ts"), [], { cwd: packageRoot });
    const line = await nextLine(child, (l) => l.startsWith("resolved "));
    expect(line).toMatch(/packages\/runtime\/src\/index\.ts$/);
    expect(await exited(child)).toBe(0);
  });
});
