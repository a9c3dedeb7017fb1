/**
 * The test runner the kit is given (vitest, jest, bun:test, …): only the
 * calls and matchers it uses, as structural types, so the kit never imports
 * a runner.
 */

/** The matchers the kit uses; every mainstream `expect` has them. */
export interface Matchers {
  toBe(expected: unknown): void;
  toEqual(expected: unknown): void;
  toBeNull(): void;
  toBeGreaterThan(expected: number): void;
  toBeGreaterThanOrEqual(expected: number): void;
  toBeLessThan(expected: number): void;
  toBeLessThanOrEqual(expected: number): void;
  toHaveLength(expected: number): void;
  toMatch(expected: RegExp): void;
  toContain(expected: unknown): void;
  readonly not: Omit<Matchers, "not">;
}

/** `expect(actual)`, called with one argument only (jest rejects a second). */
export type Expect = (actual: unknown) => Matchers;

/**
 * The runner's registration functions.
 *
 * The kit registers one `describe` per suite and one `it` per case; each case
 * creates and destroys its own store inside its body, so a failing factory is
 * reported against the case that needed it and no hook ordering is assumed.
 * `beforeEach`/`afterEach` are accepted so a runner module can be passed
 * whole, but the kit does not need them.
 */
export interface ConformanceRunner {
  describe(name: string, fn: () => void): void;
  it(name: string, fn: () => Promise<void>, timeoutMs?: number): void;
  expect: Expect;
  beforeEach?: unknown;
  afterEach?: unknown;
}
