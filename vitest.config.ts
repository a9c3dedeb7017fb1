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

/**
 * Packages whose fast tests share one module graph per worker instead of a fresh one per file: fresh
 * objects per test, no module state, fake timers or globals a file leaves behind (each project passes
 * with and without isolation). Importing the graph again for each file was most of their time (the
 * protocol's 27 files: 5.7 s isolated, 2.1 s shared); with these four `pnpm test:fast` went from 64 s
 * to 60 s on the 2-core dev machine. The worker's tests do leave timers and globals: they stay isolated.
 */
const SHARED_MODULES = new Set(["packages/protocol", "packages/runtime", "packages/store-kysely", "packages/client"]);

const projects: TestProjectInlineConfiguration[] = packageDirs().map((dir) => ({
  extends: `${root}${dir}/vitest.config.ts`,
  test: {
    name: (JSON.parse(readFileSync(`${root}${dir}/package.json`, "utf8")) as { name: string }).name,
    root: `${root}${dir}`,
    exclude: [INTEGRATION_TESTS],
    ...(SHARED_MODULES.has(dir) ? { isolate: false } : {}),
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
