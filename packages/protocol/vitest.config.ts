import { defineConfig, mergeConfig } from "vitest/config";
import { sharedConfig } from "../../vitest.shared.ts";

// Every rule of the protocol lives here, so every branch of it is tested by
// this package's own tests: a run with --coverage (this package's `test`
// script, which `pnpm test` runs) fails if coverage drops below 100%.
export default mergeConfig(
  sharedConfig,
  defineConfig({
    test: {
      coverage: {
        provider: "v8",
        include: ["src/**/*.ts"],
        reporter: ["text-summary"],
        thresholds: { statements: 100, branches: 100, functions: 100, lines: 100 },
      },
    },
  }),
);
