/**
 * The retention a client owns: a hook it starts with itself and stops in
 * `close()`, before the store closes.
 */
import type { TaskStore } from "@cairnq/protocol";
import { InvalidArgument } from "@cairnq/protocol";
import type { RetentionSweeperOptions } from "@cairnq/retention";
import { RetentionSweeper } from "@cairnq/retention";
import type { CairnQOptions } from "./client-options.js";

/**
 * Something that deletes old terminal tasks on a schedule — in practice a
 * `RetentionSweeper` from `@cairnq/retention` — whose life cycle the client
 * owns.
 *
 * The client calls `start()` once, at the end of its constructor, and awaits
 * `stop()` in `close()` *before* closing the store, so a sweep in flight never
 * runs against a closed store. Any object with these two methods fits.
 */
export interface RetentionHook {
  /** Starts the schedule; must not throw for an already-started hook. */
  start(): void;
  /** Stops the schedule and resolves once a sweep in flight has finished. */
  stop(): Promise<void>;
}

/**
 * The client's retention: `null` when unset, the hook itself when it has
 * `start()` and `stop()`, else a `RetentionSweeper` built from the options
 * (which it validates, naming the bad field).
 */
export function retentionHook(store: TaskStore, retention: CairnQOptions["retention"]): RetentionHook | null {
  if (retention === undefined || retention === null) return null;
  if (typeof retention !== "object") {
    throw new InvalidArgument(
      "retention",
      `retention must be sweeper options such as { olderThanMs: 7 * 24 * 3600_000 }, or a RetentionSweeper, got ${typeof retention}`,
    );
  }
  const hook = retention as Partial<RetentionHook>;
  if (typeof hook.start === "function" && typeof hook.stop === "function") return retention as RetentionHook;
  return new RetentionSweeper(store, retention as RetentionSweeperOptions);
}
