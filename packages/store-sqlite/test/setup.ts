/**
 * Runs helpers.ts's `cleanUp` after each test: what `tempFile`, `openStore` and `spawnFixture` made goes with its
 * test. The hook is registered here, in a setup file vitest runs for every test file, not at the top of helpers.ts:
 * the fast tier shares modules between this package's files (isolate: false in the root vitest.config.ts), so a
 * helper module is evaluated once per vitest worker, and a hook at its top would clean up after the first file that
 * imported it only.
 */
import { afterEach } from "vitest";
import { cleanUp } from "./helpers.js";

afterEach(cleanUp);
