// Which test files run in which tier (docs/testing.md, "The two tiers"), checked
// before `pnpm test` runs anything: a test file that no tier picks up would
// otherwise never run, and nothing would say so.
//
//   fast:        packages/*/test/** and conformance/test/**, outside test/integration/,
//                in a package with a vitest.config.ts (the root vitest.config.ts runs them)
//   integration: test/integration/** of those packages, and every test file of
//                examples/* and tests/*, in a package with a `test:integration` script

import fs from "node:fs";
import path from "node:path";

const SKIP = new Set(["node_modules", "dist", ".next", ".turbo", "coverage"]);

function testFiles(dir, found = []) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (SKIP.has(entry.name)) continue;
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) testFiles(full, found);
    else if (/\.test\.[cm]?[jt]sx?$/.test(entry.name)) found.push(full);
  }
  return found;
}

function packageDirs(root) {
  const dirs = [];
  for (const parent of ["packages", "examples", "tests"]) {
    const at = path.join(root, parent);
    if (!fs.existsSync(at)) continue;
    for (const entry of fs.readdirSync(at, { withFileTypes: true })) if (entry.isDirectory()) dirs.push(path.join(parent, entry.name));
  }
  return ["conformance", ...dirs];
}

/** Test files (relative to `root`) that no tier runs, each with the reason. */
export function untieredTests(root) {
  const problems = [];
  for (const dir of packageDirs(root)) {
    const abs = path.join(root, dir);
    const manifest = path.join(abs, "package.json");
    if (!fs.existsSync(manifest)) continue;
    const scripts = JSON.parse(fs.readFileSync(manifest, "utf8")).scripts ?? {};
    const tiered = dir === "conformance" || dir.startsWith("packages/");
    for (const file of testFiles(abs)) {
      const rel = path.relative(abs, file).split(path.sep).join("/");
      const shown = `${dir}/${rel}`;
      if (!rel.startsWith("test/") || !rel.endsWith(".test.ts")) {
        problems.push(`${shown}: test files are test/**/*.test.ts`);
      } else if (!tiered || rel.startsWith("test/integration/")) {
        if (!scripts["test:integration"]) problems.push(`${shown}: ${dir} has no test:integration script`);
      } else if (!fs.existsSync(path.join(abs, "vitest.config.ts"))) {
        problems.push(`${shown}: ${dir} has no vitest.config.ts for the root config's projects`);
      }
    }
  }
  return problems;
}
