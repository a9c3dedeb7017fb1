import { execFile } from "node:child_process";
import { createRequire } from "node:module";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const here = dirname(fileURLToPath(import.meta.url));
const packageDir = join(here, "..", "..");
// tsx is resolved from here: the example runs in a scratch cwd that has no node_modules.
const tsxLoader = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
const readme = readFileSync(join(packageDir, "..", "..", "README.md"), "utf8");

/** The first TypeScript block of the root README: the example a new user copies. */
function firstTsBlock(markdown: string): string {
  const match = /```ts\n([\s\S]*?)```/.exec(markdown);
  if (match?.[1] === undefined) throw new Error("README.md has no ```ts block");
  return match[1];
}

describe("the root README's first example", () => {
  it("runs as written against the built package and prints what its comments promise", async () => {
    // The example writes ./cairnq.db: run it in a scratch directory, but from a
    // file inside this package so that `import … from "cairnq"` resolves to it.
    const work = mkdtempSync(join(tmpdir(), "cairnq-readme-"));
    const script = join(packageDir, `.readme-example-${process.pid}.mts`);
    writeFileSync(script, firstTsBlock(readme));
    try {
      const { stdout } = await promisify(execFile)(process.execPath, ["--import", tsxLoader, script], { cwd: work, timeout: 60_000 });
      expect(stdout).toBe("6400\nsucceeded { bytes: 3200 }\n");
    } finally {
      rmSync(script, { force: true });
      rmSync(work, { recursive: true, force: true });
    }
  }, 90_000);
});
