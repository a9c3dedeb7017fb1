/**
 * The suite's own machinery: the case catalog, data-driven skips and the
 * per-case store lifecycle.
 */
import { existsSync } from "node:fs";
import type { TaskStore } from "@cairnq/protocol";
import type { ConformanceContext, ConformanceRunner, SkippedCase } from "@cairnq/conformance";
import { CONFORMANCE_CASES, defineConformanceSuite, MemoryStore } from "@cairnq/conformance";
import { describe, expect, it } from "vitest";

interface Registered {
  name: string;
  fn: () => Promise<void>;
}

function collectingRunner(into: Registered[]): ConformanceRunner {
  return { describe: (_name, fn) => fn(), it: (name, fn) => void into.push({ name, fn }), expect };
}

/** The extension cases, skipped unless `flowControl` / `schedules` / `groups` is declared. */
const EXTENSION_CASES = CONFORMANCE_CASES.map((c) => c.id).filter((id) => id.startsWith("flow-") || id.startsWith("schedule-") || id.startsWith("group-"));
/** The cases of `RefCompleteTaskStore.completeRef`, run only for stores declaring `capabilities.completeRef`. */
const COMPLETE_REF_CASES = CONFORMANCE_CASES.map((c) => c.id).filter((id) => id.startsWith("complete-ref-"));
/** The cases of `ClaimInput.reprobe`, run only for stores declaring `capabilities.claimReprobe`. */
const REPROBE_CASES = CONFORMANCE_CASES.map((c) => c.id).filter((id) => id.startsWith("claim-reprobe-"));
/** The cases of `TaskStepStore`, run only for stores declaring `capabilities.durableSteps`. */
const STEP_CASES = CONFORMANCE_CASES.map((c) => c.id).filter((id) => id.startsWith("steps-"));

describe("case catalog", () => {
  it("has one case per §14 scenario 1–38, in order, and unique kebab-case ids", () => {
    const ids = CONFORMANCE_CASES.map((c) => c.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) expect(id).toMatch(/^[a-z0-9]+(-[a-z0-9]+)*$/);
    const scenarios = ids.filter((id) => /^s\d\d-/.test(id)).map((id) => Number(id.slice(1, 3)));
    expect(scenarios).toEqual(Array.from({ length: 38 }, (_, i) => i + 1));
    for (const c of CONFORMANCE_CASES) {
      expect(c.title.length).toBeGreaterThan(10);
      expect(c.spec).toMatch(/§|store\.ts/);
    }
  });
});

describe("defineConformanceSuite", () => {
  it("registers every case; skips come only from the skip map and capabilities, each visible with its reason", async () => {
    const registered: Registered[] = [];
    const reported: SkippedCase[] = [];
    const suite = defineConformanceSuite({
      name: "probe",
      createStore: () => new MemoryStore(),
      runner: collectingRunner(registered),
      skip: { "s03-json-round-trip": "the backend stores JSON as text without non-ASCII support" },
      onSkip: (s) => reported.push(s),
    });
    expect(registered).toHaveLength(CONFORMANCE_CASES.length);
    expect(suite.ran.length + suite.skipped.length).toBe(CONFORMANCE_CASES.length);
    expect(suite.skipped.map((s) => s.id).sort()).toEqual(["complete-in", "push-signals", "s03-json-round-trip", ...REPROBE_CASES, ...COMPLETE_REF_CASES, ...EXTENSION_CASES, ...STEP_CASES].sort());
    expect(STEP_CASES).toHaveLength(14);
    expect(EXTENSION_CASES).toHaveLength(40);
    expect(COMPLETE_REF_CASES).toHaveLength(3);
    expect(REPROBE_CASES).toHaveLength(3);
    const entry = registered.find((r) => r.name.startsWith("s03-json-round-trip"));
    expect(entry?.name).toBe("s03-json-round-trip — SKIPPED (explicitly skipped: the backend stores JSON as text without non-ASCII support)");
    await entry?.fn();
    expect(reported.map((s) => s.id)).toEqual(["s03-json-round-trip"]);
  });

  it("runs capability-gated cases once the capability is declared", () => {
    const suite = defineConformanceSuite({
      name: "probe",
      createStore: () => new MemoryStore(),
      runner: collectingRunner([]),
      capabilities: { pushWakeups: true },
    });
    expect(suite.ran).toContain("push-signals");
    expect(suite.skipped.map((s) => s.id)).toEqual([...REPROBE_CASES, ...COMPLETE_REF_CASES, "subscribe-without-push-is-silent", "complete-in", ...EXTENSION_CASES, ...STEP_CASES]);
  });

  it("fails the capabilities case when the declaration does not match the store", async () => {
    const registered: Registered[] = [];
    defineConformanceSuite({ name: "liar", createStore: () => new MemoryStore(), runner: collectingRunner(registered), capabilities: { databaseClock: true } });
    const entry = registered.find((r) => r.name.startsWith("capabilities-declared"));
    await expect(entry?.fn()).rejects.toThrow();
  });

  it("rejects a skip map naming an unknown case or giving no reason", () => {
    const base = { name: "probe", createStore: () => new MemoryStore(), runner: collectingRunner([]) };
    expect(() => defineConformanceSuite({ ...base, skip: { "s99-nope": "typo" } })).toThrow(/not a case id/);
    expect(() => defineConformanceSuite({ ...base, skip: { "s01-submit-returns-queued": " " } })).toThrow(/needs a reason/);
  });

  it("gives each case a fresh temp dir and id, destroys the store and removes the dir, pass or fail", async () => {
    const registered: Registered[] = [];
    const contexts: ConformanceContext[] = [];
    const destroyed: TaskStore[] = [];
    defineConformanceSuite({
      name: "lifecycle",
      createStore: (ctx) => {
        contexts.push(ctx);
        expect(existsSync(ctx.tempDir)).toBe(true);
        return new MemoryStore();
      },
      destroyStore: (store) => void destroyed.push(store),
      runner: collectingRunner(registered),
    });
    const pick = (id: string) => registered.find((r) => r.name.startsWith(id))?.fn ?? (() => Promise.reject(new Error(id)));
    await pick("s01-submit-returns-queued")();
    await pick("s02-claim-progress-succeed")();
    expect(contexts.map((c) => c.caseId)).toEqual(["s01-submit-returns-queued", "s02-claim-progress-succeed"]);
    expect(new Set(contexts.map((c) => c.testId)).size).toBe(2);
    for (const c of contexts) {
      expect(c.testId).toMatch(/^[a-z0-9_]{1,40}$/);
      expect(existsSync(c.tempDir)).toBe(false);
    }
    expect(destroyed).toHaveLength(2);
  });

  it("reports the case's failure, not a later cleanup failure", async () => {
    const registered: Registered[] = [];
    defineConformanceSuite({
      name: "broken",
      createStore: () => {
        const store = new MemoryStore();
        store.submit = () => Promise.reject(new Error("submit is broken"));
        return store;
      },
      destroyStore: () => Promise.reject(new Error("cleanup is broken")),
      runner: collectingRunner(registered),
    });
    await expect(registered.find((r) => r.name.startsWith("s01-"))?.fn()).rejects.toThrow("submit is broken");
    await expect(registered.find((r) => r.name.startsWith("read-unknown-returns-null"))?.fn()).rejects.toThrow("submit is broken");
    await expect(registered.find((r) => r.name.startsWith("input-bad-queue-depth"))?.fn()).rejects.toThrow(/destroyStore failed/);
  });
});
