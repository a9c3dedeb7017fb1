import { readdirSync, readFileSync } from "node:fs";
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
    // Most fast tests wait on timers, not on the CPU: two workers on two cores overlap those waits.
    maxWorkers: 2,
  },
});
