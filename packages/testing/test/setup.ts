/**
 * Fails any test that leaves a timer behind — ref'd or unref'd: a sleep not
 * cleared or a watch not stopped would hold a real process open, or wake it
 * for nothing (the guard itself is `trackTimers` in @cairnq/test-support).
 */
import { afterEach, beforeEach, expect } from "vitest";
import type { TimerTracker } from "@cairnq/test-support";
import { trackTimers } from "@cairnq/test-support";

let timers: TimerTracker | null = null;

beforeEach(() => {
  timers = trackTimers();
});

afterEach(() => {
  const left = timers?.restore() ?? [];
  timers = null;
  expect(left, "timers left open by this test (created at)").toEqual([]);
});
