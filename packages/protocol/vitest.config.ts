import { defineConfig, mergeConfig } from "vitest/config";
import { sharedConfig } from "../../vitest.shared.ts";

// Every rule of the protocol lives here, so every branch of it is tested:
// the run fails if coverage of this package drops below 100%.
export default mergeConfig(
  sharedConfig,
  defineConfig({
    test: { coverage: { thresholds: { statements: 100, branches: 100, functions: 100, lines: 100 } } },
  }),
);
