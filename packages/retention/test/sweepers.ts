/**
 * The stores and sweepers the retention tests build, each stopped or closed
 * after its test: every sweeper first, then the stores under them.
 */
import type { TaskStore } from "@cairnq/protocol";
import { expect, vi } from "vitest";
import type { RetentionSweeperOptions } from "../src/index.ts";
import { RetentionSweeper } from "../src/index.ts";
import type { Backend, OpenStore } from "./helpers.ts";
import { MEMORY } from "./helpers.ts";

export const SECOND = 1_000;

const opened: OpenStore[] = [];
/** A fresh store on a clock the test moves by hand, so cutoffs are exact; closed after the test's sweepers stop. */
export async function clockedStore(backend: Backend = MEMORY): Promise<{ store: TaskStore; advance: (ms: number) => Promise<void> }> {
  const open = await backend.open({ frozenAtMs: 1_700_000_000_000 });
  opened.push(open);
  return { store: open.store, advance: (ms) => open.advance(ms) };
}

const sweepers: RetentionSweeper[] = [];
/** Builds a sweeper that {@link stopSweepersAndStores} stops after its test, so no schedule outlives it. */
export function sweeperOf(store: ConstructorParameters<typeof RetentionSweeper>[0], options: RetentionSweeperOptions): RetentionSweeper {
  const sweeper = new RetentionSweeper(store, options);
  sweepers.push(sweeper);
  return sweeper;
}

/** Stops every sweeper, then closes the stores under them; test/setup.ts runs it after each test of every file. */
export async function stopSweepersAndStores(): Promise<void> {
  vi.useRealTimers();
  for (const sweeper of sweepers.splice(0)) {
    await sweeper.stop();
    expect(sweeper.running).toBe(false);
  }
  // Stores close only after every sweeper over them stopped, as a client's close() does.
  for (const open of opened.splice(0)) await open.close();
}
