import { readdirSync, readFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { relative } from "node:path";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
import type { TestProjectInlineConfiguration } from "vitest/config";
import { BaseSequencer } from "vitest/node";
import type { TestSpecification } from "vitest/node";
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
 * protocol's 27 files: 5.7 s isolated, 2.1 s shared; the worker's 27: 31 s isolated, 12 s shared, run
 * alone); with the first four `pnpm test:fast` went from 64 s to 60 s on the 2-core dev machine.
 * A shared helper module is evaluated once per vitest worker, not once per file, so a hook at its top
 * level (`afterEach(cleanUp)`) would run for the first file that imported it only, and later files
 * would leave their workers and stores open, passing all the same: such a hook belongs in the
 * package's setup file (`setupFiles`), which vitest runs for every file (packages/worker/test/setup.ts,
 * packages/store-sqlite/test/setup.ts, packages/retention/test/setup.ts). Retention's files have not been run
 * shared: they stay isolated.
 */
const SHARED_MODULES = new Set([
  "conformance",
  "packages/protocol",
  "packages/runtime",
  "packages/store-kysely",
  "packages/client",
  "packages/worker",
  "packages/store-sqlite",
  "packages/store-mysql",
  "packages/testing",
  "packages/dashboard",
]);

const projects: TestProjectInlineConfiguration[] = packageDirs().map((dir) => ({
  extends: `${root}${dir}/vitest.config.ts`,
  test: {
    name: (JSON.parse(readFileSync(`${root}${dir}/package.json`, "utf8")) as { name: string }).name,
    root: `${root}${dir}`,
    exclude: [INTEGRATION_TESTS],
    ...(SHARED_MODULES.has(dir) ? { isolate: false } : {}),
  },
}));

/**
 * Slowest first, across packages. vitest's own order runs the projects one after another by name, so
 * the store-sqlite kit run (the longest file) started 36 s into a 64 s run and the worker's files
 * came last, leaving one core idle at the end. Here a package that shares modules is one block (its
 * files must follow each other for a worker process to take the next one with the modules loaded),
 * every other file a block of its own, and the blocks go longest first by the durations vitest kept
 * from the last run (node_modules/.vite/vitest); within a block, vitest's order (longest first).
 * Without durations (a fresh clone) the order is vitest's.
 */
class SlowestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const blocks = new Map<string, { weight: number; specs: TestSpecification[] }>();
    for (const spec of sorted) {
      const key = spec.project.config.isolate ? spec.moduleId : `project ${spec.project.name}`;
      const block = blocks.get(key) ?? { weight: 0, specs: [] };
      const cached = this.ctx.cache.getFileTestResults(`${spec.project.name}:${relative(this.ctx.config.root, spec.moduleId)}`);
      block.weight += cached?.duration ?? Number.POSITIVE_INFINITY;
      block.specs.push(spec);
      blocks.set(key, block);
    }
    // A stable sort: blocks without durations keep vitest's order, ahead of the rest (as vitest runs unknown files first).
    return [...blocks.values()].sort((a, b) => (a.weight === b.weight ? 0 : b.weight > a.weight ? 1 : -1)).flatMap((block) => block.specs);
  }
}

export default defineConfig({
  test: {
    projects,
    sequence: { sequencer: SlowestFirst },
    // One worker per core (vitest's default leaves one for its main process, which here mostly
    // waits). Not more: some fast tests renew leases of 30-60 ms every 10-15 ms, and a worker
    // waiting for a core longer than that loses its lease (seen with 3 workers on 2 cores).
    maxWorkers: availableParallelism(),
    // The compiled TypeScript stays on disk between runs (node_modules/.experimental-vitest-cache, keyed by
    // content and config): a second run compiles only what changed (docs/testing.md).
    experimental: { fsModuleCache: true },
  },
});
