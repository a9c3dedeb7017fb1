/** The README's "Created or existing, and bulk operations" example, run as written in its own process. */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

let dir: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "cairnq-bulk-"));
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe("the README", () => {
  it("runs the 'Created or existing, and bulk operations' example as written", async () => {
    const readme = readFileSync(join(dirname(fileURLToPath(import.meta.url)), "..", "..", "README.md"), "utf8");
    const section = readme.slice(readme.indexOf("### Created or existing, and bulk operations"));
    const code = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
    expect(code).toContain("client.cancelMany(");
    const db = join(dir, "readme.db");
    // Written inside the package so its imports resolve as the README's reader's would.
    const file = join(dirname(fileURLToPath(import.meta.url)), `.readme-bulk-${process.pid}.mjs`);
    writeFileSync(file, (code as string).replace('"cairnq.db"', JSON.stringify(db)));
    try {
      const { stdout } = await promisify(execFile)(process.execPath, [file]);
      expect(stdout.trim().split("\n")).toEqual(["201 200 true", "5", "5"]);
    } finally {
      rmSync(file, { force: true });
    }
  });
});
