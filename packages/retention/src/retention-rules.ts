/**
 * Terminology: a *policy* is what the caller writes under `olderThanMs` (one
 * cutoff, a per-status map, or a list of rules); a *rule* is one independent
 * purge filter with its own cutoff; a *cutoff* is `olderThanMs`, measured from
 * a task's `completed_at_ms` on the store's clock (protocol v1 §5.9).
 *
 * Everything here is pure: it validates a policy once, at construction, and
 * turns it into the list of rules a sweep drains one after the other.
 */
import type { TerminalStatus } from "@cairnq/protocol";
import { InvalidArgument, isTerminalStatus, TERMINAL_STATUSES } from "@cairnq/protocol";
import { describe, requireCutoffMs, requireLimitedText, requireTerminalStatus } from "@cairnq/protocol/adapter";

/**
 * One independent purge: terminal tasks matching every given filter whose
 * `completed_at_ms` is more than `olderThanMs` in the past are deleted.
 *
 * A filter left out matches everything; a rule without `status` covers all
 * three terminal statuses (purge never touches `queued` or `running` rows).
 *
 * @example
 * ```ts
 * const rule: RetentionRule = { queue: "emails", status: "succeeded", olderThanMs: 24 * 3_600_000 };
 * ```
 */
export interface RetentionRule {
  /** Only tasks in this queue. @default every queue */
  readonly queue?: string;
  /** Only tasks that ended with this terminal status. @default every terminal status */
  readonly status?: TerminalStatus;
  /** Only tasks with this handler name. @default every name */
  readonly name?: string;
  /** Delete tasks that finished more than this many milliseconds ago (finite, ≥ 0). */
  readonly olderThanMs: number;
}

/**
 * A cutoff per terminal status. A status left out is never swept, so
 * `{ succeeded: DAY }` keeps failed and canceled tasks for ever.
 *
 * @example
 * ```ts
 * const DAY = 24 * 3_600_000;
 * const keep: RetentionStatusMap = { succeeded: DAY, failed: 30 * DAY, canceled: 7 * DAY };
 * ```
 */
export type RetentionStatusMap = { readonly [S in TerminalStatus]?: number };

/**
 * What to delete: one cutoff for every terminal status, a cutoff per status,
 * or a non-empty list of independent rules.
 *
 * @example
 * ```ts
 * const DAY = 24 * 3_600_000;
 * const everything: RetentionPolicy = 7 * DAY;
 * const perStatus: RetentionPolicy = { succeeded: DAY, failed: 30 * DAY };
 * const rules: RetentionPolicy = [
 *   { queue: "emails", olderThanMs: DAY },
 *   { status: "failed", olderThanMs: 90 * DAY },
 * ];
 * ```
 */
export type RetentionPolicy = number | RetentionStatusMap | readonly RetentionRule[];

const RULE_KEYS: ReadonlySet<string> = new Set(["queue", "status", "name", "olderThanMs"]);


// A rule's cutoff, status and filters are checked by the protocol's own purge
// checks (requireCutoffMs, requireTerminalStatus, requireLimitedText: the ones
// `store.purge` applies), so a policy accepted here is one every purge
// accepts; only the policy's shape is retention's to check.
function filterText(value: unknown, field: "queue" | "name", argument: string): string | undefined {
  return value === undefined ? undefined : requireLimitedText(value, field, argument);
}

function ruleAt(value: unknown, index: number): RetentionRule {
  const at = `olderThanMs[${index}]`;
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new InvalidArgument(at, `retention rule ${at} must be an object { queue?, status?, name?, olderThanMs }, got ${describe(value)}`);
  }
  for (const key of Object.keys(value)) {
    if (!RULE_KEYS.has(key)) {
      throw new InvalidArgument(`${at}.${key}`, `retention rule ${at} has an unknown field ${JSON.stringify(key)}; a rule takes queue, status, name and olderThanMs`);
    }
  }
  const raw = value as Record<string, unknown>;
  const rule: { -readonly [K in keyof RetentionRule]: RetentionRule[K] } = { olderThanMs: requireCutoffMs(raw.olderThanMs, `${at}.olderThanMs`) };
  const queue = filterText(raw.queue, "queue", `${at}.queue`);
  if (queue !== undefined) rule.queue = queue;
  if (raw.status !== undefined) rule.status = requireTerminalStatus(raw.status, `${at}.status`);
  const name = filterText(raw.name, "name", `${at}.name`);
  if (name !== undefined) rule.name = name;
  return Object.freeze(rule);
}

/**
 * Validates a {@link RetentionPolicy} and returns the rules a sweep drains,
 * in order, frozen.
 *
 * A number becomes one rule without a status filter (one purge statement
 * covers all three terminal statuses); a map becomes one rule per status it
 * names, in `succeeded, failed, canceled` order; a list is validated rule by
 * rule. Throws `InvalidArgument` naming the offending field for a negative or
 * non-finite cutoff, a non-terminal status, an unknown field, or a policy
 * that would purge nothing (an empty list or map).
 *
 * @example
 * ```ts
 * normalizeRetentionPolicy({ succeeded: 60_000 });
 * // → [{ status: "succeeded", olderThanMs: 60000 }]
 * ```
 */
export function normalizeRetentionPolicy(policy: unknown): readonly RetentionRule[] {
  if (typeof policy === "number") return Object.freeze([Object.freeze({ olderThanMs: requireCutoffMs(policy, "olderThanMs") })]);
  if (Array.isArray(policy)) {
    if (policy.length === 0) {
      throw new InvalidArgument(
        "olderThanMs",
        "retention rule list is empty, so it would never delete anything; give at least one rule { queue?, status?, name?, olderThanMs }, or leave retention out",
      );
    }
    return Object.freeze(policy.map((rule: unknown, index) => ruleAt(rule, index)));
  }
  if (typeof policy === "object" && policy !== null) {
    const raw = policy as Record<string, unknown>;
    for (const key of Object.keys(raw)) {
      if (!isTerminalStatus(key)) {
        throw new InvalidArgument(
          `olderThanMs.${key}`,
          `retention olderThanMs.${key}: ${JSON.stringify(key)} is not a terminal status; a per-status map takes ${TERMINAL_STATUSES.join(", ")} (queued and running tasks are never purged)`,
        );
      }
    }
    const rules: RetentionRule[] = [];
    for (const status of TERMINAL_STATUSES) {
      if (raw[status] === undefined) continue;
      rules.push(Object.freeze({ status, olderThanMs: requireCutoffMs(raw[status], `olderThanMs.${status}`) }));
    }
    if (rules.length === 0) {
      throw new InvalidArgument(
        "olderThanMs",
        `retention per-status map names no status, so it would never delete anything; give a cutoff for at least one of ${TERMINAL_STATUSES.join(", ")}`,
      );
    }
    return Object.freeze(rules);
  }
  throw new InvalidArgument(
    "olderThanMs",
    `retention olderThanMs must be a cutoff in ms (e.g. 7 * 24 * 3_600_000), a per-status map ({ succeeded: ms, failed: ms, canceled: ms }) or a non-empty list of rules ({ queue?, status?, name?, olderThanMs }), got ${describe(policy)}`,
  );
}
