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
const doc = readFileSync(join(packageDir, "..", "..", "docs", "telemetry.md"), "utf8");

/** The first TypeScript block of docs/telemetry.md, and the output its closing comment promises. */
function example(markdown: string): { code: string; promised: string } {
  const code = /```ts\n([\s\S]*?)```/.exec(markdown)?.[1];
  if (code === undefined) throw new Error("docs/telemetry.md has no ```ts block");
  const promised = code
    .trimEnd()
    .split("\n")
    .reverse()
    .filter((_line, i, lines) => lines.slice(0, i + 1).every((l) => l.startsWith("// ")))
    .reverse()
    .map((line) => line.slice(3));
  return { code, promised: `${promised.join("\n")}\n` };
}

describe("docs/telemetry.md's first example", () => {
  it("runs as written against the built package and prints the spans its closing comment lists", async () => {
    const { code, promised } = example(doc);
    expect(promised.split("\n").length).toBeGreaterThan(3);
    // The example writes ./cairnq.db: run it in a scratch directory, from a file inside this package so that
    // `import … from "cairnq"` and the OpenTelemetry packages resolve to this package's.
    const work = mkdtempSync(join(tmpdir(), "cairnq-telemetry-doc-"));
    const script = join(packageDir, `.telemetry-doc-${process.pid}.mts`);
    writeFileSync(script, code);
    try {
      const { stdout } = await promisify(execFile)(process.execPath, ["--import", tsxLoader, script], { cwd: work, timeout: 60_000 });
      expect(stdout).toBe(promised);
    } finally {
      rmSync(script, { force: true });
      rmSync(work, { recursive: true, force: true });
    }
  }, 90_000);
});
