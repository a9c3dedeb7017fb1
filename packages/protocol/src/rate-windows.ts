/**
 * Rate windows as the database holds them — what `explain` reads to say that
 * a task waits because a `rateLimit` (per name) or `groupRateLimit` (per name
 * and group) window is full. An extension of protocol v1, like the limits
 * themselves (`flow-control.ts`, `groups.ts`).
 *
 * Terminology:
 * - **recorded limit**: a `rateLimit` (or `groupRateLimit`) of a name that a
 *   claim which recorded claims of it enforced lately. A claim carries the
 *   limits (`ClaimInput.flowControl`), so a store keeps one it used beside
 *   the recorded claims (a SQL store rewrites it when it changes, and else at
 *   most once a minute: {@link RATE_LIMIT_REFRESH_MS}, {@link rateLimitRowDue});
 *   the window counted under it is the one that held the claims back. Every
 *   worker claiming a limited name must declare the same limits, so it is the
 *   limit in force.
 * - **window**: the recorded claims of the name (or of the name and group) at
 *   `claimed_at_ms > now − perMs` ({@link inRateWindow}).
 * - **room again**: a window of `claims ≥ max` has room for one claim once
 *   fewer than `max` of its claims remain, i.e. when its `max`-th newest
 *   claim leaves it, at that claim's `claimed_at_ms + perMs`
 *   ({@link rateWindowOf}). Claims only ever leave a window (a claim recorded
 *   later is counted in a later window).
 * - **read at**: the store's clock when it counted the window, read with it
 *   (in the same statement on a SQL store). A window is full exactly when it
 *   has a room-again instant, and how long until then is measured on that
 *   clock, never against a client's: the two may differ by more than a
 *   window's length.
 * - **scope**: which limit of a name a recorded limit is ({@link RATE_LIMIT_SCOPES}):
 *   `name` (its `rateLimit`) or `group` (its `groupRateLimit`, the same for
 *   every group of the name).
 */
import type { RateLimit } from "./flow-control.js";
import { inRateWindow } from "./flow-control.js";

/** The scopes of recorded limits, as stores keep them (the `scope` column of `cairnq_ext_rate_limits`). */
export const RATE_LIMIT_SCOPES = Object.freeze({ name: "name", group: "group" } as const);

/** One of {@link RATE_LIMIT_SCOPES}. */
export type RateLimitScope = (typeof RATE_LIMIT_SCOPES)[keyof typeof RATE_LIMIT_SCOPES];

/** One rate window as a store reads it ({@link FlowReadStore.rateWindows}). */
export interface RateWindow {
  /** The recorded limit: one a claim of the name enforced within about a minute ({@link rateLimitRowDue}). */
  readonly limit: RateLimit;
  /** Recorded claims in the window `(readAtMs − perMs, readAtMs]`. */
  readonly claims: number;
  /** When the window has room again (its `max`-th newest claim leaves it), epoch ms on the store's clock; `null` when it has room at `readAtMs`. */
  readonly roomAtMs: number | null;
  /** The store's clock when it read the window, epoch ms: what `roomAtMs` is measured from. */
  readonly readAtMs: number;
}

/** A task name's two rate windows, as one read gives them ({@link FlowReadStore.rateWindows}). */
export interface RateWindows {
  /** The name's window under its recorded `rateLimit`, or `null` when no claim recorded one. */
  readonly name: RateWindow | null;
  /** The group's window under the name's recorded `groupRateLimit`, or `null` when none is recorded or no group was asked for. */
  readonly group: RateWindow | null;
}

/**
 * The window of `limit` holding `claims` recorded claims counted at `readAtMs`, the `max`-th newest of them
 * recorded at `maxthNewestAtMs` (`null` when there are fewer than `max`): room again when that claim leaves it.
 * What a store that counts in SQL builds from the three numbers its statement returns.
 */
export function rateWindowOf(limit: RateLimit, claims: number, maxthNewestAtMs: number | null, readAtMs: number): RateWindow {
  const roomAtMs = claims < limit.max || maxthNewestAtMs === null ? null : maxthNewestAtMs + limit.perMs;
  return { limit, claims, roomAtMs, readAtMs };
}

/** The window of `limit` ending at `nowMs` over claims recorded at `claimedAtMs` (any order, any age): what a store that holds the instants builds. */
export function rateWindowAt(limit: RateLimit, claimedAtMs: readonly number[], nowMs: number): RateWindow {
  const inWindow = claimedAtMs.filter((at) => inRateWindow(at, nowMs, limit.perMs)).sort((a, b) => b - a);
  return rateWindowOf(limit, inWindow.length, inWindow[limit.max - 1] ?? null, nowMs);
}

/** Whether `window` was full when the store read it: at its limit, with an instant it has room again. */
export function rateWindowFull(window: RateWindow | null): window is RateWindow & { readonly roomAtMs: number } {
  return window !== null && window.roomAtMs !== null;
}

/** The full window that holds a task back ({@link holdingRateWindow}), and which limit it is. */
export interface HoldingRateWindow {
  /** Which limit: the name's `rateLimit` or its group's `groupRateLimit`. */
  readonly of: RateLimitScope;
  /** The window, full. */
  readonly window: RateWindow & { readonly roomAtMs: number };
}

/**
 * Which full rate window holds a due task back, given its name's window and its group's: a claim needs room
 * in both, so when both are full it is the one that has room last (on a tie, the group's); `null` when
 * neither is full.
 */
export function holdingRateWindow(name: RateWindow | null, group: RateWindow | null): HoldingRateWindow | null {
  const ofGroup = rateWindowFull(group) ? { of: RATE_LIMIT_SCOPES.group, window: group } : null;
  const ofName = rateWindowFull(name) ? { of: RATE_LIMIT_SCOPES.name, window: name } : null;
  if (ofGroup === null || ofName === null) return ofGroup ?? ofName;
  return ofName.window.roomAtMs > ofGroup.window.roomAtMs ? ofName : ofGroup;
}

/**
 * The read a store with `capabilities.flowControl` offers to show a name's
 * rate windows: `explain` ("2 of 2 claims of 'send' in its 1 s window").
 */
export interface FlowReadStore {
  /**
   * The rate window of task name `name` under its recorded `rateLimit` and, when `group` is given, that group's
   * window under the name's recorded `groupRateLimit`: one read of both (`null` for a window whose limit no
   * claim recorded). Creates nothing.
   */
  rateWindows(name: string, group: string | null): Promise<RateWindows>;
}

/** Whether `store` offers the flow-control read (declares `capabilities.flowControl` and has `rateWindows`). */
export function hasFlowReads(store: { readonly capabilities: { readonly flowControl?: boolean } }): store is typeof store & FlowReadStore {
  const s = store as Partial<FlowReadStore> & { readonly capabilities: { readonly flowControl?: boolean } };
  return s.capabilities.flowControl === true && typeof s.rateWindows === "function";
}

/** How long a limit row a store wrote stands before a claim under the same limit writes it again: 60 s. */
export const RATE_LIMIT_REFRESH_MS = 60_000;

/**
 * Whether a claim that took tasks under `limit` should write the name's limit row, given what its store last
 * wrote for that name and scope and when (`last`, on a monotonic clock, `undefined` when it wrote none since it
 * started): when it wrote none, wrote another limit, or wrote it {@link RATE_LIMIT_REFRESH_MS} ago or more — so
 * the row is a limit a claim of the name enforced within about a minute, written at once when the limit changes.
 */
export function rateLimitRowDue(last: { readonly max: number; readonly perMs: number; readonly atMs: number } | undefined, limit: RateLimit, nowMs: number): boolean {
  return last === undefined || last.max !== limit.max || last.perMs !== limit.perMs || nowMs - last.atMs >= RATE_LIMIT_REFRESH_MS;
}
