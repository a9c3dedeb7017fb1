/**
 * Runs sweepers.ts's `stopSweepersAndStores` after each test: the sweepers a test built stop, then the stores under
 * them close. Registered here, in a setup file vitest runs for every test file, rather than at the top of
 * sweepers.ts: a hook at a helper module's top level runs only for the first file that imports it wherever files
 * share modules (isolate: false), as the worker's and store-sqlite's test helpers found (their setup files).
 */
import { afterEach } from "vitest";
import { stopSweepersAndStores } from "./sweepers.ts";

afterEach(stopSweepersAndStores);
