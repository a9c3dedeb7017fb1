import { readdirSync, readFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
import type { TestProjectInlineConfiguration } from "vitest/config";
import { INTEGRATION_TESTS } from "./vitest.shared.ts";

/**
 * The fast tier (`pnpm test:fast`, and the first test phase of `pnpm test`):
 * every package's tests outside test/integration/, in one vitest run, as one
 * project per package so each keeps its own config (setup files, timeouts).
 * Nothing here needs a build, a server or another process (docs/testing.md).
 * The examples and tests/consumer have no fast tier.
 */
const root = fileURLToPath(new URL(".", import.meta.url));

function packageDirs(): string[] {
  const inPackages = readdirSync(`${root}packages`, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => `packages/${entry.name}`);
  return ["conformance", ...inPackages].filter((dir) => readdirSync(`${root}${dir}`).includes("vitest.config.ts"));
}

const projects: TestProjectInlineConfiguration[] = packageDirs().map((dir) => ({
  extends: `${root}${dir}/vitest.config.ts`,
  test: {
    name: (JSON.parse(readFileSync(`${root}${dir}/package.json`, "utf8")) as { name: string }).name,
    root: `${root}${dir}`,
    exclude: [INTEGRATION_TESTS],
  },
}));

export default defineConfig({
  test: {
    projects,
    // Fast tests wait on timers and file I/O more than they compute: one worker more than there are
    // cores keeps the cores busy (vitest's default is one fewer). On 2 cores, 3 workers measured
    // 20-25% faster than 2 (docs/testing.md).
    maxWorkers: availableParallelism() + 1,
  },
});
