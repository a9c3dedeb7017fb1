import type { TaskStatus } from "./statuses.js";
import { isTerminalStatus } from "./statuses.js";

/**
 * What a keyed submit does when its key already points at a task (§5.1):
 * - `reuse` (default): return a queued or running task unchanged;
 * - `reuse-succeeded`: as `reuse`, and also return a succeeded task;
 * - `reject`: raise `AlreadyExists` whatever the task's status;
 * - `replace`: always create a new task (a live old one is canceled).
 */
export type Conflict = "reuse" | "reuse-succeeded" | "reject" | "replace";

/** Every {@link Conflict} strategy. */
export const CONFLICTS: readonly Conflict[] = ["reuse", "reuse-succeeded", "reject", "replace"];

/** True when `value` names a conflict strategy. */
export function isConflict(value: unknown): value is Conflict {
  return typeof value === "string" && (CONFLICTS as readonly string[]).includes(value);
}

/**
 * The decision for a keyed submit, given the task the key points at (or
 * `null` when the key is free or its task was purged):
 * - `insert`: create the new task and point the key at it; when
 *   `cancelExisting` is set, first cancel the declined live task (§5.7);
 * - `reuse`: return the existing task, write nothing;
 * - `reject`: raise `AlreadyExists`, write nothing.
 * No strategy ever returns a failed or canceled task.
 */
export type KeyDecision =
  | { readonly kind: "insert"; readonly cancelExisting: boolean }
  | { readonly kind: "reuse" }
  | { readonly kind: "reject" };

/** Resolves a key conflict as §5.1 step 4 prescribes. */
export function resolveKeyConflict(conflict: Conflict, existing: { readonly status: TaskStatus } | null): KeyDecision {
  if (existing === null) return { kind: "insert", cancelExisting: false };
  if (conflict === "reject") return { kind: "reject" };
  const live = !isTerminalStatus(existing.status);
  if (conflict !== "replace") {
    if (live) return { kind: "reuse" };
    if (conflict === "reuse-succeeded" && existing.status === "succeeded") return { kind: "reuse" };
  }
  return { kind: "insert", cancelExisting: live };
}
