import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Real processes, real HTTP, real polling: seconds, not milliseconds.
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
