/**
 * What the state-machine tests share: the error envelopes they fail with,
 * and the way a store runs a set transition (select, then apply).
 */
import { expect } from "vitest";
import { applyBranches, selectRows } from "../src/decide.js";
import type { Decision, Params } from "../src/decide.js";
import type { SetTransition } from "../src/rules.js";
import type { Task } from "../src/task.js";
import { NOW, W2, ownedParams } from "./fixtures.js";
/** The lease-expired envelope, exactly as §5.10 step 4 spells it. */
export const LEASE_EXPIRED_TEXT =
  '{"type":"LeaseExpired","code":"lease_expired","message":"task lease expired and max attempts reached","retryable":false,"details":{}}';

export const ERROR = { type: "TaskError", code: "boom", message: "it broke", retryable: true, details: { n: 1 } };

export function applied(decision: Decision): { branch: string; row: Task } {
  expect(decision.kind).toBe("applied");
  if (decision.kind !== "applied") throw new Error("unreachable");
  return decision;
}

/** Runs a set transition the way a store does: select, then apply to each selected row. */
export function runSet(transition: SetTransition, rows: Task[], params: Params, nowMs = NOW): { branch: string; row: Task }[] {
  return selectRows(transition.selection, rows, params, nowMs).map((row) => applyBranches(transition.branches, row, params, nowMs));
}

export function failParams(extra: Record<string, unknown> = {}): Params {
  return ownedParams({ error: ERROR, retryable: true, delayMs: 0, ...extra });
}

export function drawParams(extra: Record<string, unknown> = {}): Params {
  return { queues: ["default"], names: null, limit: 10, workerId: W2, leaseMs: 5_000, ...extra };
}

export function purgeParams(extra: Record<string, unknown> = {}): Params {
  return { olderThanMs: 0, queue: null, status: null, name: null, limit: 1000, ...extra };
}
