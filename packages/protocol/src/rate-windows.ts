/**
 * Rate windows as the database holds them — what `explain` reads to say that
 * a task waits because a `rateLimit` (per name) or `groupRateLimit` (per name
 * and group) window is full. An extension of protocol v1, like the limits
 * themselves (`flow-control.ts`, `groups.ts`).
 *
 * Terminology:
 * - **recorded limit**: the `rateLimit` (or `groupRateLimit`) of a name that
 *   the last claim which recorded claims of it enforced. A claim carries the
 *   limits (`ClaimInput.flowControl`), so a store keeps the last one it used
 *   beside the recorded claims, as it keeps the `groupConcurrency` last
 *   enforced (`TaskGroupInfo`); the window counted under it is the one that
 *   held the claims back. Every worker claiming a limited name must declare
 *   the same limits, so it is the limit in force.
 * - **window**: the recorded claims of the name (or of the name and group) at
 *   `claimed_at_ms > now − perMs` ({@link inRateWindow}).
 * - **room again**: a window of `claims ≥ max` has room for one claim once
 *   fewer than `max` of its claims remain, i.e. when its `max`-th newest
 *   claim leaves it, at that claim's `claimed_at_ms + perMs`
 *   ({@link rateWindowOf}). Claims only ever leave a window (a claim recorded
 *   later is counted in a later window).
 */
import type { RateLimit } from "./flow-control.js";
import { inRateWindow } from "./flow-control.js";

/** One rate window as a store reads it ({@link FlowReadStore.rateWindow}, `TaskGroupInfo.groupRateWindow`). */
export interface RateWindow {
  /** The recorded limit: what the last claim that recorded claims in this window enforced. */
  readonly limit: RateLimit;
  /** Recorded claims in the window `(now − perMs, now]`, on the store's clock. */
  readonly claims: number;
  /** When the window has room again (its `max`-th newest claim leaves it), epoch ms; `null` when it has room now. */
  readonly roomAtMs: number | null;
}

/**
 * The window of `limit` holding `claims` recorded claims, the `max`-th newest of them recorded at
 * `maxthNewestAtMs` (`null` when there are fewer than `max`): room again when that claim leaves it.
 * What a store that counts in SQL builds from its two numbers.
 */
export function rateWindowOf(limit: RateLimit, claims: number, maxthNewestAtMs: number | null): RateWindow {
  const roomAtMs = claims < limit.max || maxthNewestAtMs === null ? null : maxthNewestAtMs + limit.perMs;
  return { limit, claims, roomAtMs };
}

/** The window of `limit` ending at `nowMs` over claims recorded at `claimedAtMs` (any order, any age): what a store that holds the instants builds. */
export function rateWindowAt(limit: RateLimit, claimedAtMs: readonly number[], nowMs: number): RateWindow {
  const inWindow = claimedAtMs.filter((at) => inRateWindow(at, nowMs, limit.perMs)).sort((a, b) => b - a);
  return rateWindowOf(limit, inWindow.length, inWindow[limit.max - 1] ?? null);
}

/** Whether `window` is full at `nowMs`: at its limit, and not yet at the instant it has room again. */
export function rateWindowFull(window: RateWindow | null, nowMs: number): window is RateWindow & { readonly roomAtMs: number } {
  return window !== null && window.roomAtMs !== null && window.roomAtMs > nowMs;
}

/**
 * The read a store with `capabilities.flowControl` offers to show a name's
 * rate window: `explain` ("2 of 2 claims of 'send' in its 1 s window").
 */
export interface FlowReadStore {
  /** The rate window of task name `name` under its recorded `rateLimit`, or `null` when no claim recorded one. */
  rateWindow(name: string): Promise<RateWindow | null>;
}

/** Whether `store` offers the flow-control read (declares `capabilities.flowControl` and has `rateWindow`). */
export function hasFlowReads(store: { readonly capabilities: { readonly flowControl?: boolean } }): store is typeof store & FlowReadStore {
  const s = store as Partial<FlowReadStore> & { readonly capabilities: { readonly flowControl?: boolean } };
  return s.capabilities.flowControl === true && typeof s.rateWindow === "function";
}
