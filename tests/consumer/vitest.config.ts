import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // npm installs and compiles better-sqlite3 from source (no prebuilt binaries reach this machine): about a
    // minute on an idle 2-core machine, several under load. These bounds only catch a hang.
    testTimeout: 120_000,
    hookTimeout: 600_000,
  },
});
