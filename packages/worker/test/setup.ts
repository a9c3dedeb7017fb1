/**
 * Closes the workers `makeWorker` (support/worker.ts) opened after each test. The hook is registered here, in a
 * setup file vitest runs for every test file, not at the top of support/worker.ts: the fast tier shares modules
 * between this package's files (isolate: false in the root vitest.config.ts), so a helper module is evaluated
 * once per vitest worker, and a hook at its top would close the workers of the first file that imported it only.
 */
import { afterEach } from "vitest";
import { closeWorkers } from "./support/worker.js";

afterEach(closeWorkers);
