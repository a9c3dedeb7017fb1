import { assertInvariants, InvariantViolation, MemoryStore } from "@cairnq/conformance";
import { describe, expect, it } from "vitest";

/** A row as a store returns it, read back from the in-memory store and then moved to `status` by hand. */
async function rowWith(fields: Record<string, unknown>): Promise<Record<string, unknown>> {
  const store = new MemoryStore();
  const task = await store.submit({ name: "invariants", payload: null });
  return { ...(await store.get(task.id)), ...fields };
}

describe("assertInvariants: times against created_at_ms", () => {
  it("rejects a succeeded row updated and completed before it was created", async () => {
    const base = await rowWith({});
    const created = base.created_at_ms as number;
    const row = await rowWith({ status: "succeeded", progress: 1, result: 1, worker_id: "w", attempt: 1, created_at_ms: created, updated_at_ms: created - 40, completed_at_ms: created - 40 });
    let caught: unknown;
    try {
      assertInvariants(row);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(InvariantViolation);
    expect((caught as InvariantViolation).invariant).toBe("updated-after-created");
  });

  it("accepts a canceled row stamped before its creation (§2.1: a replacing submit's cancel reads its transaction start, which may precede the insert it waited for)", async () => {
    const base = await rowWith({});
    const created = base.created_at_ms as number;
    const row = await rowWith({ status: "canceled", created_at_ms: created, updated_at_ms: created - 40, completed_at_ms: created - 40 });
    expect(() => assertInvariants(row)).not.toThrow();
  });

  it("keeps a queued row's check", async () => {
    const base = await rowWith({});
    const row = await rowWith({ updated_at_ms: (base.created_at_ms as number) - 40 });
    expect(() => assertInvariants(row)).toThrow(/updated-after-created/);
  });
});
