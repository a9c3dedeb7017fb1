/**
 * The claim plan of one poll (§8.3): which draws a claim cycle makes and how
 * claimed rows become handler calls. Pure functions over a snapshot of the
 * worker's counters, because the store calls the planner inside its claim
 * transaction (and may call it again from index 0 if it replays the
 * transaction).
 *
 * Terminology: a *source* is a set of task names drawn together; a *call* is
 * one handler invocation (one task, or a batch of tasks of one name); a
 * *quota* is how many calls a source may start this poll.
 */
import type { ClaimDraw, ClaimInput, Task } from "@cairnq/protocol";
import type { NormalizedFlowControl } from "@cairnq/protocol/adapter";

/** How a registered name is claimed. */
export interface NameRule {
  readonly name: string;
  /** Tasks per call; `null` for an unbatched handler (one task per call). */
  readonly batch: number | null;
  /** Calls of this name allowed at once; `null` = only the worker's concurrency. */
  readonly concurrency: number | null;
  /** The resource each call of this name holds; `null` = none. */
  readonly resource: string | null;
  /** Cross-process limits (`globalConcurrency`, `rateLimit`); absent or `null` = none. */
  readonly flowControl?: NormalizedFlowControl | null;
}

/** Names drawn by one draw. */
export interface DrawSource {
  readonly names: readonly string[];
  /** Tasks per call (1 for the shared source). */
  readonly batch: number;
  readonly concurrency: number | null;
  readonly resource: string | null;
  /**
   * Whether the source may be claimed ahead of free slots (`prefetch`). Not for a name with
   * cross-process flow control: the claim-time check counts its claimed tasks as running across the
   * fleet, so a task waiting in this worker's buffer would hold a fleet-wide slot idle. Absent = true.
   */
  readonly prefetch?: boolean;
}

/**
 * Groups names into sources: a name with `batch`, `concurrency`, `resource`
 * or cross-process flow control is its own source (so the store's per-name
 * cap never holds back other names); all other names share one source
 * (batch 1), placed where its first name was registered.
 */
export function buildSources(rules: Iterable<NameRule>): DrawSource[] {
  const sources: DrawSource[] = [];
  let shared: string[] | null = null;
  for (const rule of rules) {
    if (rule.batch === null && rule.concurrency === null && rule.resource === null && (rule.flowControl ?? null) === null) {
      if (shared === null) {
        shared = [];
        sources.push({ names: shared, batch: 1, concurrency: null, resource: null });
      }
      shared.push(rule.name);
    } else {
      const source: DrawSource = { names: [rule.name], batch: rule.batch ?? 1, concurrency: rule.concurrency, resource: rule.resource };
      sources.push((rule.flowControl ?? null) === null ? source : { ...source, prefetch: false });
    }
  }
  return sources;
}

/** `list` rotated left by `by` (so the first source changes every poll). */
export function rotate<T>(list: readonly T[], by: number): T[] {
  if (list.length === 0) return [];
  const k = ((by % list.length) + list.length) % list.length;
  return [...list.slice(k), ...list.slice(0, k)];
}

/**
 * Splits claimed rows into calls, keeping their order: a row joins the open call of its name while that call
 * holds fewer than the name's batch, else starts a new call placed where the row is. So with `batch: 1` the
 * calls are the rows in order, and a batch call sits where its first row was (the claim order, once the rows
 * are sorted by it: the buffer starts calls in this order).
 */
export function splitCalls(rows: readonly Task[], batchOf: (name: string) => number): Task[][] {
  const open = new Map<string, Task[]>();
  const calls: Task[][] = [];
  for (const row of rows) {
    const call = open.get(row.name);
    if (call !== undefined && call.length < Math.max(1, batchOf(row.name))) {
      call.push(row);
      continue;
    }
    const fresh = [row];
    open.set(row.name, fresh);
    calls.push(fresh);
  }
  return calls;
}

/** The worker's counters at the start of a poll. */
export interface PlanSnapshot {
  /** Calls this poll may take: `concurrency + prefetch − calls running or buffered` (within the in-flight bound). */
  readonly free: number;
  /**
   * Of those, the calls that would start at once (`concurrency − calls running or buffered`, at
   * least 0); the rest wait in the buffer. A source that may not prefetch draws only from these.
   * Absent = `free` (no prefetch).
   */
  readonly slots?: number;
  readonly claimBatch: number | null;
  /** Calls in flight per task name. */
  readonly nameCalls: ReadonlyMap<string, number>;
  /** Calls in flight per resource. */
  readonly resourceCalls: ReadonlyMap<string, number>;
  readonly capacities: Readonly<Record<string, number>>;
  /** Tasks per call of a name (1 when unbatched or unknown). */
  readonly batchOf: (name: string) => number;
}

/**
 * The draw planner of one claim cycle (§8.3 step 3), for `ClaimInput.draws`.
 *
 * For each source, in order, while calls are left: quota = the smallest
 * applicable ceiling — `max(1, floor(claimBatch / batch))`, the name's
 * `concurrency − calls in flight`, the resource's `capacity − calls holding it
 * − units taken earlier this poll` — else what is left; then at most what is
 * left (for a source that may not prefetch: at most what is left of the
 * snapshot's `slots`). A source with quota ≤ 0 is skipped; otherwise it draws
 * `batch × quota` rows. The rows a draw returned are split into calls to
 * update what is left and the resource tally before the next draw is planned.
 */
export function planDraws(sources: readonly DrawSource[], snapshot: PlanSnapshot): NonNullable<ClaimInput["draws"]> {
  let left = 0;
  let slotsLeft = 0;
  let next = 0;
  let seen = 0;
  let pending: DrawSource | null = null;
  let taken = new Map<string, number>();

  return (claimedSoFar: readonly Task[], index: number): ClaimDraw | null => {
    if (index === 0) {
      // A store may replay its transaction; every cycle starts from the snapshot.
      left = snapshot.free;
      slotsLeft = snapshot.slots ?? snapshot.free;
      next = 0;
      seen = 0;
      pending = null;
      taken = new Map();
    } else if (pending !== null) {
      const drawn = claimedSoFar.slice(seen);
      const calls = splitCalls(drawn, snapshot.batchOf).length;
      left -= calls;
      slotsLeft -= calls;
      if (pending.resource !== null) taken.set(pending.resource, (taken.get(pending.resource) ?? 0) + calls);
      pending = null;
    }
    seen = claimedSoFar.length;

    while (next < sources.length && left > 0) {
      const source = sources[next++] as DrawSource;
      const quota = Math.min(quotaOf(source, snapshot, taken, left), left, source.prefetch === false ? slotsLeft : left);
      if (quota <= 0) continue;
      pending = source;
      // The last source: whatever this draw claims, the next call returns null.
      return next >= sources.length ? { names: source.names, limit: source.batch * quota, last: true } : { names: source.names, limit: source.batch * quota };
    }
    return null;
  };
}

function quotaOf(source: DrawSource, snapshot: PlanSnapshot, taken: ReadonlyMap<string, number>, left: number): number {
  const ceilings: number[] = [];
  if (snapshot.claimBatch !== null) ceilings.push(Math.max(1, Math.floor(snapshot.claimBatch / source.batch)));
  if (source.concurrency !== null) {
    const name = source.names[0] as string;
    ceilings.push(source.concurrency - (snapshot.nameCalls.get(name) ?? 0));
  }
  if (source.resource !== null) {
    const capacity = snapshot.capacities[source.resource] ?? 0;
    ceilings.push(capacity - (snapshot.resourceCalls.get(source.resource) ?? 0) - (taken.get(source.resource) ?? 0));
  }
  return ceilings.length === 0 ? left : Math.min(...ceilings);
}
