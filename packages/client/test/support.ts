/**
 * Test helpers: a recording MemoryStore and a few worker moves (claim,
 * complete, fail) made directly on the store, as a worker process would.
 */
import { MemoryStore } from "@cairnq/conformance";
import type { StoreSignal, Task, TaskRef, TaskStore } from "@cairnq/protocol";
import { newWorkerId } from "@cairnq/protocol/adapter";

export { MemoryStore };

/** One call a {@link RecordingStore} saw. */
export interface Call {
  readonly method: string;
  readonly args: readonly unknown[];
  /** `performance.now()` at the call. */
  readonly at: number;
}

/**
 * A MemoryStore that records the calls the client cares about, can emit push
 * signals, and can replace the wake sleep (to observe the wait intervals
 * without sleeping).
 */
export class RecordingStore extends MemoryStore {
  readonly calls: Call[] = [];
  readonly listeners = new Set<(signal: StoreSignal) => void>();
  /** When set, `taskDoneWake` calls this instead of sleeping. */
  onWake: ((taskId: string, timeoutMs: number) => Promise<void> | void) | null = null;
  /** When set, runs before `queueDepth` answers (may throw). */
  beforeQueueDepth: ((queue: string, maxDepth: number) => void) | null = null;
  /** Events of the store's life cycle, in order. */
  readonly events: string[];

  constructor(events: string[] = []) {
    super();
    this.events = events;
  }

  #record(method: string, args: unknown[]): void {
    this.calls.push({ method, args, at: performance.now() });
  }

  count(method: string): number {
    return this.calls.filter((c) => c.method === method).length;
  }

  override async connect(): Promise<void> {
    this.#record("connect", []);
    this.events.push("store.connect");
  }

  override async close(): Promise<void> {
    this.#record("close", []);
    this.events.push("store.close");
  }

  override async getStatus(id: string): Promise<TaskRef | null> {
    this.#record("getStatus", [id]);
    return super.getStatus(id);
  }

  override async getStatusByKey(key: string): Promise<TaskRef | null> {
    this.#record("getStatusByKey", [key]);
    return super.getStatusByKey(key);
  }

  override async get(id: string): Promise<Task | null> {
    this.#record("get", [id]);
    return super.get(id);
  }

  override async getByKey(key: string): Promise<Task | null> {
    this.#record("getByKey", [key]);
    return super.getByKey(key);
  }

  override async queueDepth(queue: string, maxDepth: number): Promise<number> {
    this.#record("queueDepth", [queue, maxDepth]);
    this.beforeQueueDepth?.(queue, maxDepth);
    return super.queueDepth(queue, maxDepth);
  }

  override async taskDoneWake(taskId: string, timeoutMs: number, signal?: AbortSignal): Promise<void> {
    this.#record("taskDoneWake", [taskId, timeoutMs]);
    if (this.onWake !== null) return this.onWake(taskId, timeoutMs);
    return super.taskDoneWake(taskId, timeoutMs, signal);
  }

  override subscribe(listener: (signal: StoreSignal) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  emit(signal: StoreSignal): void {
    for (const listener of this.listeners) listener(signal);
  }
}

/** Claims the next task of `queue` as a fresh worker; fails the test if none is claimable. */
export async function claimOne(store: TaskStore, queue = "default", leaseMs = 30_000): Promise<Task & { workerId: string }> {
  const workerId = newWorkerId();
  const [task] = await store.claim({ queues: [queue], workerId, leaseMs });
  if (task === undefined) throw new Error(`nothing claimable on queue '${queue}'`);
  return { ...task, workerId };
}

/** Waits (polling every 2 ms) until a task of `queue` can be claimed, then claims it. */
export async function claimWhenQueued(store: TaskStore, queue = "default"): Promise<Task & { workerId: string }> {
  const workerId = newWorkerId();
  for (let i = 0; i < 1000; i += 1) {
    const [task] = await store.claim({ queues: [queue], workerId });
    if (task !== undefined) return { ...task, workerId };
    await delay(2);
  }
  throw new Error(`no task appeared on queue '${queue}'`);
}

/** Real sleep for tests; a ref'd timer so vitest waits for it. */
export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Settles as soon as `promise` does, or reports it still pending after `ms`. */
export async function isPendingAfter(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let settled = false;
  void promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  await delay(ms);
  return !settled;
}
