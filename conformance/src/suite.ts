/**
 * `defineConformanceSuite`: registers every conformance case with the given
 * runner, each against a fresh store from the caller's factory.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { StoreCapabilities, TaskStore } from "@cairnq/protocol";
import type { ConformanceCase } from "./case.js";
import { CaseContext } from "./case.js";
import { CONFORMANCE_CASES } from "./cases/index.js";
import { CheckedStore } from "./checked-store.js";
import type { ConformanceRunner } from "./runner.js";

/** The capability flags' documented defaults: a store without a declaration has none. */
export const DEFAULT_STORE_CAPABILITIES: Readonly<StoreCapabilities> = Object.freeze({
  pushWakeups: false,
  transactionalComplete: false,
  databaseClock: false,
  flowControl: false,
  schedules: false,
});

/** What the store factory gets for one case: enough to build an isolated store. */
export interface ConformanceContext {
  /** The case about to run, e.g. `"s01-submit-returns-queued"`. */
  readonly caseId: string;
  /**
   * Unique per case run, safe as a file, database or schema name
   * (`[a-z0-9_]`, at most 40 characters), e.g. `"cq_s01_3f9a0c2e71b4"`.
   */
  readonly testId: string;
  /** A fresh empty directory for this case (e.g. for a SQLite file); removed after `destroyStore`. */
  readonly tempDir: string;
}

/** A case the suite did not run, and why. */
export interface SkippedCase {
  readonly id: string;
  readonly title: string;
  readonly reason: string;
}

/** Options of {@link defineConformanceSuite}. */
export interface ConformanceSuiteOptions<S extends TaskStore = TaskStore> {
  /** Names the store in the report, e.g. `"SQLiteStore"`. */
  name: string;
  /**
   * Returns a fresh, isolated, empty store for one case. Called once per
   * case, inside the case's test, so a failing factory fails that case.
   */
  createStore: (ctx: ConformanceContext) => Promise<S> | S;
  /**
   * Releases what `createStore` made (drop a schema, close a pool). Called
   * after every case, pass or fail.
   * @default (store) => store.close()
   */
  destroyStore?: (store: S, ctx: ConformanceContext) => Promise<void> | void;
  /**
   * Returns a second instance on the same database as the store
   * `createStore(ctx)` made for this case (another process would open the
   * same), for the cases that race two instances; called at most once per
   * case, only by a case that asks for it, and closed (`close()`) after the
   * case, before `destroyStore`. Without it those cases race one instance.
   * @default none
   */
  createPeerStore?: (ctx: ConformanceContext) => Promise<S> | S;
  /** The test runner: `describe`, `it`, `expect` (vitest, jest, bun:test, …). */
  runner: ConformanceRunner;
  /**
   * What the store declares in its `capabilities` (the case
   * `capabilities-declared` checks the store agrees). Cases that need a
   * capability are skipped, with that reason, when it is false.
   * @default all false (DEFAULT_STORE_CAPABILITIES)
   */
  capabilities?: Partial<StoreCapabilities>;
  /**
   * Explicit opt-outs: case id → why this store cannot pass it. Every id
   * must exist and every reason must be non-empty; the run reports each
   * skip as its own visible entry.
   * @default {}
   */
  skip?: Readonly<Record<string, string>>;
  /** Per-case timeout handed to the runner's `it`. @default the runner's default */
  caseTimeoutMs?: number;
  /**
   * Reports a skipped case when its entry runs.
   * @default writes one line to `console.warn`
   */
  onSkip?: (skipped: SkippedCase) => void;
}

/** What {@link defineConformanceSuite} registered. */
export interface ConformanceSuite {
  /** The ids of the cases registered to run. */
  readonly ran: readonly string[];
  /** The cases registered as skipped, with reasons. */
  readonly skipped: readonly SkippedCase[];
}

let runCounter = 0;

function testIdFor(caseId: string): string {
  runCounter += 1;
  const prefix = caseId.replace(/[^a-z0-9]+/g, "_").slice(0, 16).replace(/_+$/, "");
  return `cq_${prefix}_${runCounter.toString(36)}${randomBytes(4).toString("hex")}`.slice(0, 40);
}

function reasonToSkip(c: ConformanceCase, capabilities: StoreCapabilities, skip: Readonly<Record<string, string>>): string | null {
  if (Object.hasOwn(skip, c.id)) return `explicitly skipped: ${skip[c.id] as string}`;
  const missing = c.skipUnless?.(capabilities) ?? null;
  return missing === null ? null : `capability: ${missing}`;
}

/**
 * Registers the CairnQ protocol v1 conformance suite with a test runner:
 * one `describe` for the store and one `it` per case, each run against a
 * fresh store from `createStore` through a wrapper that checks the §4
 * invariants on every row the store returns.
 *
 * Skips come from data only — the store's declared `capabilities` or the
 * `skip` map — and each skipped case is still registered, as a passing
 * entry named `<id> — SKIPPED (<reason>)` that reports itself through
 * `onSkip`, so the run shows what was not checked and why.
 *
 * @throws Error when `skip` names an unknown case or gives an empty reason.
 * @example
 * ```ts
 * import { describe, expect, it } from "vitest";
 * import { defineConformanceSuite } from "@cairnq/conformance";
 *
 * defineConformanceSuite({
 *   name: "MyStore",
 *   createStore: (ctx) => new MyStore(`${ctx.tempDir}/db`),
 *   runner: { describe, it, expect },
 * });
 * ```
 */
export function defineConformanceSuite<S extends TaskStore>(options: ConformanceSuiteOptions<S>): ConformanceSuite {
  const { runner, name } = options;
  const capabilities: StoreCapabilities = { ...DEFAULT_STORE_CAPABILITIES, ...options.capabilities };
  const skip = options.skip ?? {};
  const known = new Set(CONFORMANCE_CASES.map((c) => c.id));
  for (const [id, reason] of Object.entries(skip)) {
    if (!known.has(id)) throw new Error(`conformance suite '${name}': skip names '${id}', which is not a case id; see CONFORMANCE_CASES for the ids`);
    if (typeof reason !== "string" || reason.trim() === "") throw new Error(`conformance suite '${name}': skipping '${id}' needs a reason (a non-empty string)`);
  }
  const onSkip = options.onSkip ?? ((s: SkippedCase) => console.warn(`[cairnq conformance] ${name}: ${s.id} skipped — ${s.reason}`));
  const ran: string[] = [];
  const skipped: SkippedCase[] = [];

  runner.describe(`${name}: CairnQ protocol v1 conformance`, () => {
    for (const c of CONFORMANCE_CASES) {
      const reason = reasonToSkip(c, capabilities, skip);
      if (reason !== null) {
        const entry: SkippedCase = { id: c.id, title: c.title, reason };
        skipped.push(entry);
        runner.it(`${c.id} — SKIPPED (${reason})`, () => {
          onSkip(entry);
          return Promise.resolve();
        });
        continue;
      }
      ran.push(c.id);
      runner.it(`${c.id} — ${c.title}`, () => runCase(c, options, capabilities), options.caseTimeoutMs);
    }
  });
  return { ran, skipped };
}

async function runCase<S extends TaskStore>(c: ConformanceCase, options: ConformanceSuiteOptions<S>, capabilities: StoreCapabilities): Promise<void> {
  const tempDir = await mkdtemp(join(tmpdir(), "cairnq-conformance-"));
  const ctx: ConformanceContext = { caseId: c.id, testId: testIdFor(c.id), tempDir };
  let store: S | undefined;
  let peer: Promise<S> | undefined;
  let failure: { error: unknown } | null = null;
  const createPeer = options.createPeerStore;
  const openPeer =
    createPeer === undefined
      ? null
      : async (): Promise<TaskStore> => {
          peer ??= Promise.resolve(createPeer(ctx));
          return peer;
        };
  try {
    store = await options.createStore(ctx);
    await c.run(new CaseContext(new CheckedStore(store), options.runner.expect, capabilities, openPeer));
  } catch (error) {
    failure = { error };
  }
  try {
    if (peer !== undefined) await (await peer).close();
  } catch (error) {
    failure ??= { error: new Error(`conformance case ${c.id}: closing the peer store failed after the case passed`, { cause: error }) };
  }
  try {
    if (store !== undefined) await (options.destroyStore === undefined ? store.close() : options.destroyStore(store, ctx));
  } catch (error) {
    // The case's own failure is the one worth reading; a cleanup failure only surfaces alone.
    failure ??= { error: new Error(`conformance case ${c.id}: destroyStore failed after the case passed`, { cause: error }) };
  } finally {
    await rm(tempDir, { recursive: true, force: true });
  }
  if (failure !== null) throw failure.error;
}
