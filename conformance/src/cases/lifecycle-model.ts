/**
 * A model of the core task lifecycle (docs/protocol.md §4–§5), kept by the
 * randomized lifecycle case (`lifecycle-random.ts`) from what it did and what
 * the store answered, and checked after every operation.
 *
 * The model holds each task's whole row as the store last confirmed it. It
 * predicts the next row with the rules of `@cairnq/protocol` (`decideRow`,
 * `applyBranches`, `selectRows`, `buildInsert` over `SUBMIT`, `CANCEL`,
 * `RETRY`, `HEARTBEAT`, `COMPLETE`, `FAIL`, `RECOVER`, `DRAW`, `PURGE`, the
 * bulk batches and the debounce update) — it never re-derives them — and
 * compares: every column exactly, except the instants a rule computes from
 * the clock (`now`), which must lie between the rule's value at the local
 * clock read just before the call and its value at the read just after,
 * each widened by {@link SLACK_MS} (the store's clock is this host's, §2.1;
 * every instant a rule writes is `now` plus a constant, so it grows with
 * `now`). Once a row passes, the model takes it as the store's, so later
 * predictions start from the instants the store really wrote.
 *
 * A decision that itself depends on the clock (is a task due, has a lease run
 * out, did a task finish before a purge's cutoff) is made at every instant in
 * that window where it can change, and the store's answer must be one of
 * those outcomes (see {@link instantsBetween}).
 */
import type { Task } from "@cairnq/protocol";
import type { Params } from "@cairnq/protocol/adapter";
import { TASK_COLUMNS } from "@cairnq/protocol/adapter";
import { isDeepStrictEqual } from "node:util";

/** A delay no walk outlives. */
export const FAR_MS = 3_600_000;

/** Clock difference allowed between the store's clock and this process's (same host). */
export const SLACK_MS = 10;

/** The columns a rule may set from the clock: compared within the window, not exactly. */
const CLOCK_COLUMNS: ReadonlySet<string> = new Set(["run_at_ms", "lease_until_ms", "cancel_requested_at_ms", "created_at_ms", "updated_at_ms", "completed_at_ms"]);

/** The JSON parameters the rules bind as encoded text; the model holds them decoded, as a row read back has them. */
const JSON_PARAMS = ["payload", "metadata", "result", "error"] as const;

/** A rule's parameters with their JSON decoded, as a database stores them. */
export function decoded(params: Params): Params {
  const out: Record<string, unknown> = { ...params };
  for (const name of JSON_PARAMS) {
    const value = out[name];
    if (typeof value === "string") out[name] = JSON.parse(value);
  }
  return out;
}

/** The window of one call: the local clock just before and just after, widened by the slack. */
export interface Window {
  readonly lo: number;
  readonly hi: number;
}

/** Times `call`: its result (or what it threw) and its window. */
export async function timed<T>(call: () => Promise<T>): Promise<{ value?: T; error?: unknown; window: Window }> {
  const before = Date.now();
  try {
    const value = await call();
    return { value, window: { lo: before - SLACK_MS, hi: Date.now() + SLACK_MS } };
  } catch (error) {
    return { error, window: { lo: before - SLACK_MS, hi: Date.now() + SLACK_MS } };
  }
}

/**
 * The instants in `window` at which a decision over `rows` can change: its start, and each instant in it where
 * one of the rows' clock columns (shifted by `offset`, as a purge's cutoff is) is passed. Deciding at each of them
 * gives every outcome the store may have reached.
 */
export function instantsBetween(window: Window, rows: Iterable<Task>, column: "run_at_ms" | "lease_until_ms" | "completed_at_ms", offset = 0): number[] {
  const out = new Set<number>([window.lo, window.hi]);
  for (const row of rows) {
    const at = row[column];
    if (at === null) continue;
    // `run_at_ms ≤ now`, `lease_until_ms ≤ now`: the outcome changes at the value; `completed_at_ms < now − offset`: one after.
    for (const instant of [at + offset, at + offset + 1]) if (instant > window.lo && instant < window.hi) out.add(instant);
  }
  return [...out].sort((a, b) => a - b);
}

/** What differs between `actual` and the rule's rows at the window's ends, or `null`. */
export function rowDiff(atLo: Task, atHi: Task, actual: Task): string | null {
  const problems: string[] = [];
  for (const column of TASK_COLUMNS) {
    const lo = atLo[column];
    const hi = atHi[column];
    const got = actual[column];
    if (CLOCK_COLUMNS.has(column) && typeof lo === "number" && typeof hi === "number") {
      if (typeof got !== "number" || got < Math.min(lo, hi) || got > Math.max(lo, hi)) problems.push(`${column} ${String(got)}, expected within [${lo}, ${hi}]`);
    } else if (!isDeepStrictEqual(lo, hi) ? !isDeepStrictEqual(got, lo) && !isDeepStrictEqual(got, hi) : !isDeepStrictEqual(got, lo)) {
      problems.push(`${column} ${JSON.stringify(got)}, expected ${JSON.stringify(lo)}`);
    }
  }
  return problems.length === 0 ? null : problems.join("; ");
}

/** One task of the walk. */
export interface Entry {
  /** `name#n`, for the operation log. */
  readonly label: string;
  /** The row as the store last confirmed it. */
  row: Task;
  /** The key it was submitted under, if any. */
  readonly key: string | null;
}

/** The model of one walk: every task it submitted (purged ones removed) and where each key points. */
export class LifecycleModel {
  readonly tasks = new Map<string, Entry>();
  readonly keys = new Map<string, string>();
  /** Ids the walk purged: `get` must answer `null`. */
  readonly purged = new Set<string>();
  #labels = 0;

  add(row: Task, key: string | null): Entry {
    const entry: Entry = { label: `${row.name.slice(row.name.lastIndexOf("-") + 1)}#${++this.#labels}`, row, key };
    this.tasks.set(row.id, entry);
    if (key !== null) this.keys.set(key, row.id);
    return entry;
  }

  /** The task `key` points at, or `null`. */
  byKey(key: string): Entry | null {
    const id = this.keys.get(key);
    return id === undefined ? null : (this.tasks.get(id) ?? null);
  }

  rows(): Task[] {
    return [...this.tasks.values()].map((entry) => entry.row);
  }

  of(status: Task["status"]): Entry[] {
    return [...this.tasks.values()].filter((entry) => entry.row.status === status);
  }

  label(id: string): string {
    return this.tasks.get(id)?.label ?? id;
  }

  labels(ids: Iterable<string>): string {
    return `[${[...ids].map((id) => this.label(id)).join(" ")}]`;
  }

  /** Deletes a purged task; its key goes with it (the key row cascades, §5.9). */
  purge(id: string): void {
    this.tasks.delete(id);
    this.purged.add(id);
    for (const [key, target] of this.keys) if (target === id) this.keys.delete(key);
  }

  /** One line per task, for a failure message. */
  describe(): string {
    return [...this.tasks.values()]
      .map(({ label, row, key }) =>
        `${label} ${row.id} ${row.queue} ${row.status} p${row.priority} attempt ${row.attempt}/${row.max_attempts} run_at ${row.run_at_ms}` +
        `${row.lease_until_ms === null ? "" : ` lease ${row.lease_until_ms} ${row.worker_id ?? ""}`}${row.cancel_requested_at_ms === null ? "" : " flag"}${key === null ? "" : ` key ${key}`}`,
      )
      .join("\n");
  }
}
