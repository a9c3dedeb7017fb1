import { describe, expect, it } from "vitest";
import { DEFAULT_LEASE_MS } from "../src/inputs.js";
import { defaultHeartbeatIntervalMs, WORKER_DEFAULTS } from "../src/worker-defaults.js";

describe("worker defaults (§8.1)", () => {
  it("are the table's numbers, frozen", () => {
    expect(WORKER_DEFAULTS).toEqual({
      queues: ["default"],
      concurrency: 1,
      leaseMs: 30_000,
      pollIntervalMs: 500,
      claimErrorSleepMs: 250,
      retryBackoffMs: 1000,
      retryBackoffMaxMs: 30_000,
      minHeartbeatIntervalMs: 50,
    });
    expect(WORKER_DEFAULTS.leaseMs).toBe(DEFAULT_LEASE_MS);
    expect(Object.isFrozen(WORKER_DEFAULTS)).toBe(true);
    expect(Object.isFrozen(WORKER_DEFAULTS.queues)).toBe(true);
  });

  it("derive the heartbeat interval from the lease: max(50, floor(lease / 3))", () => {
    expect(defaultHeartbeatIntervalMs(30_000)).toBe(10_000);
    expect(defaultHeartbeatIntervalMs(600)).toBe(200);
    expect(defaultHeartbeatIntervalMs(1000)).toBe(333);
    expect(defaultHeartbeatIntervalMs(150)).toBe(50);
    expect(defaultHeartbeatIntervalMs(100)).toBe(50);
  });
});
