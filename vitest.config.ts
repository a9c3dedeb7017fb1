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
    // One worker per core (vitest's default leaves one for its main process, which here mostly
    // waits). Not more: some fast tests renew leases of 30-60 ms every 10-15 ms, and a worker
    // waiting for a core longer than that loses its lease (seen with 3 workers on 2 cores).
    maxWorkers: availableParallelism(),
  },
});
