/**
 * What a conformance case is, and the context it runs in.
 *
 * A case uses only the `TaskStore` contract (through {@link CheckedStore},
 * which checks every answer) plus the small helpers below.
 */
import type { ClaimInput, StoreCapabilities, SubmitInput, Task, TaskStore } from "@cairnq/protocol";
import { newWorkerId } from "@cairnq/protocol/adapter";
import { CheckedStore } from "./checked-store.js";
import type { Expect } from "./runner.js";

/** The lease of an ordinary claim in the scenarios (§14: "lease 5000 ms unless stated"). */
export const LEASE_MS = 5000;
/** A lease meant to run out during the case (§14.17, §14.18). */
export const SHORT_LEASE_MS = 150;
/** How long to wait for a {@link SHORT_LEASE_MS} lease to be past (§14.17, §14.18). */
export const EXPIRY_WAIT_MS = 300;
/**
 * A delay (a task's `run_at_ms`, a fail's `delayMs`) that must outlast the calls a case makes before it waits the
 * delay out: a second, so that a loaded machine's slow calls do not see the task come due before the case's last
 * "not yet" check.
 */
export const DUE_LATER_MS = 1000;

/** One behavior of the contract, run against a fresh store. */
export interface ConformanceCase {
  /** Stable id, used in test names and skip maps, e.g. `s01-submit-returns-queued`. */
  readonly id: string;
  /** What the case checks, in one line. */
  readonly title: string;
  /** The protocol sections the case follows, e.g. `"§14.1, §5.1"`. */
  readonly spec: string;
  /**
   * Given the store's declared capabilities, a reason to skip the case, or
   * `null` to run it. Cases that need a capability declare it here, so the
   * skip comes from data, not from the case's own judgement.
   */
  readonly skipUnless?: (capabilities: StoreCapabilities) => string | null;
  readonly run: (t: CaseContext) => Promise<void>;
}

/** An assertion the kit makes without the runner (rejections, presence). */
export class ConformanceFailure extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "ConformanceFailure";
  }
}

type ErrorClass<E> = abstract new (...args: never[]) => E;

/** What a case receives: the checked store, the runner's `expect`, and helpers. */
export class CaseContext {
  /** Three distinct worker ids (`worker_` + ULID), fresh per case. */
  readonly w1 = newWorkerId();
  readonly w2 = newWorkerId();
  readonly w3 = newWorkerId();

  #openPeer: (() => Promise<TaskStore>) | null;
  #peer: CheckedStore | null = null;

  constructor(
    readonly store: CheckedStore,
    readonly expect: Expect,
    readonly capabilities: StoreCapabilities,
    openPeer: (() => Promise<TaskStore>) | null = null,
  ) {
    this.#openPeer = openPeer;
  }

  /**
   * A second instance on the store's database (the suite's `createPeerStore`), checked as {@link store} is, opened on
   * first use and closed by the suite after the case; {@link store} itself when the suite has no `createPeerStore`.
   */
  async peer(): Promise<CheckedStore> {
    if (this.#openPeer === null) return this.store;
    this.#peer ??= new CheckedStore(await this.#openPeer());
    return this.#peer;
  }

  /** Whether {@link peer} is a second instance (the suite gave `createPeerStore`). */
  get hasPeer(): boolean {
    return this.#openPeer !== null;
  }

  /** Real time passing; only where leases or cutoffs must be crossed (conventions: tens of ms). */
  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => setTimeout(resolve, ms));
  }

  /** `submit({ name, ...extra })`. */
  submit(name: string, extra: Omit<SubmitInput, "name"> = {}): Promise<Task> {
    return this.store.submit({ name, ...extra });
  }

  /** A claim cycle on `default` (unless `queues` is given) with the scenarios' 5000 ms lease. */
  claim(workerId: string, extra: Partial<Omit<ClaimInput, "workerId">> = {}): Promise<Task[]> {
    return this.store.claim({ queues: ["default"], leaseMs: LEASE_MS, ...extra, workerId });
  }

  /** A claim that must take exactly one task; returns it. */
  async claimOne(workerId: string, extra: Partial<Omit<ClaimInput, "workerId">> = {}): Promise<Task> {
    const rows = await this.claim(workerId, { limit: 1, ...extra });
    this.expect(rows.length).toBe(1);
    return rows[0] as Task;
  }

  /** Submits `name` and claims it as `workerId`; the claimed row. */
  async submitAndClaim(workerId: string, name = "job", extra: Omit<SubmitInput, "name"> = {}, leaseMs = LEASE_MS): Promise<Task> {
    const task = await this.submit(name, extra);
    const claimed = await this.claimOne(workerId, { queues: [task.queue], names: [name], leaseMs });
    this.expect(claimed.id).toBe(task.id);
    return claimed;
  }

  /** `get(id)`, which must find the row. */
  async get(id: string): Promise<Task> {
    const row = await this.store.get(id);
    if (row === null) throw new ConformanceFailure(`get(${id}) returned null, but the task must exist`);
    return row;
  }

  /** Asserts the listed fields of `row` (an object diff on failure names them). */
  fields(row: Task | null, expected: Partial<Record<keyof Task, unknown>>): void {
    if (row === null) throw new ConformanceFailure(`expected a row with ${JSON.stringify(expected)}, got null`);
    const picked: Record<string, unknown> = {};
    for (const key of Object.keys(expected)) picked[key] = (row as unknown as Record<string, unknown>)[key];
    this.expect(picked).toEqual(expected);
  }

  /**
   * Awaits `promise`, which must reject with an instance of `cls`
   * (`instanceof` is brand-based for CairnQ errors, so any copy of
   * `@cairnq/protocol` qualifies); returns the error.
   */
  async rejects<E>(promise: Promise<unknown>, cls: ErrorClass<E>, what: string): Promise<E> {
    let value: unknown;
    try {
      value = await promise;
    } catch (err) {
      if (err instanceof cls) return err;
      throw new ConformanceFailure(`${what}: expected a ${cls.name} rejection, got ${describeError(err)}`, { cause: err });
    }
    throw new ConformanceFailure(`${what}: expected a ${cls.name} rejection, but it resolved with ${preview(value)}`);
  }

  /** Awaits `promise`, which must reject with any `Error`; returns it. */
  async rejectsAny(promise: Promise<unknown>, what: string): Promise<Error> {
    return this.rejects(promise, Error, what);
  }

  /** Every row of the store (the suite's stores are fresh per case). */
  async all(): Promise<Task[]> {
    return this.store.list({ limit: 10_000 });
  }
}

function describeError(err: unknown): string {
  if (err instanceof Error) return `${err.name}: ${err.message}`;
  return preview(err);
}

function preview(value: unknown): string {
  try {
    const text = JSON.stringify(value);
    return text === undefined ? String(value) : text.length > 300 ? `${text.slice(0, 300)}…` : text;
  } catch {
    return String(value);
  }
}

/** `rows[i]`, which must exist. */
export function at<T>(rows: readonly T[], i: number): T {
  if (i < 0 || i >= rows.length) throw new ConformanceFailure(`expected at least ${i + 1} rows, got ${rows.length}`);
  return rows[i] as T;
}

/** Ids of `rows`, in order. */
export function ids(rows: readonly { id: string }[]): string[] {
  return rows.map((row) => row.id);
}

/** Ids of `rows`, sorted (for order-insensitive comparisons). */
export function sortedIds(rows: readonly { id: string }[] | readonly string[]): string[] {
  return rows.map((row) => (typeof row === "string" ? row : row.id)).sort();
}
