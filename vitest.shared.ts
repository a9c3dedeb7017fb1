import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const root = fileURLToPath(new URL(".", import.meta.url));

/**
 * A package's integration tier: the test files under test/integration/ (real
 * processes, Postgres, Chromium, a build, seconds of real time). Every other
 * test file under test/ is fast. See docs/testing.md for the criterion.
 */
export const INTEGRATION_TESTS = "test/integration/**";

/**
 * Shared vitest settings. Workspace packages resolve to their TypeScript
 * sources so tests never run against a stale build; the published entry of
 * each package is still the one file named here (its `src/index.ts` barrel).
 */
export const sharedConfig = defineConfig({
  resolve: {
    alias: [
      { find: /^cairnq$/, replacement: `${root}packages/cairnq/src/index.ts` },
      { find: /^@cairnq\/conformance\/vitest$/, replacement: `${root}conformance/src/vitest.ts` },
      { find: /^@cairnq\/conformance$/, replacement: `${root}conformance/src/index.ts` },
      { find: /^@cairnq\/protocol\/(adapter|sdk)$/, replacement: `${root}packages/protocol/src/$1.ts` },
      { find: /^@cairnq\/test-support\/([a-z-]+)$/, replacement: `${root}packages/test-support/src/$1.ts` },
      { find: /^@cairnq\/([a-z-]+)$/, replacement: `${root}packages/$1/src/index.ts` },
    ],
  },
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 20_000,
    hookTimeout: 30_000,
  },
});
