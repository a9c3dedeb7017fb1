/**
 * Test fixtures: tasks driven to each status through the store's own calls
 * (submit, claim, complete, fail, cancel), and wrapper stores that count,
 * delay or break `purge`.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MemoryStore } from "@cairnq/conformance";
import type { PurgeInput, Task, TaskStatus, TaskStore } from "@cairnq/protocol";
import { SQLiteStore } from "@cairnq/store-sqlite";
import type { RetentionStore } from "../src/index.ts";

/** A store opened for one test, and how to release it (after the test's sweepers stopped). */
export interface OpenStore {
  store: TaskStore;
  close(): Promise<void>;
}

/** A backend the behavioural tests run on: a fresh, isolated store per call. */
export interface Backend {
  label: string;
  open(options?: { clock?: () => number }): Promise<OpenStore>;
}

/** The in-memory store of the conformance kit: fast, one process. */
export const MEMORY: Backend = {
  label: "memory",
  async open(options) {
    const store = new MemoryStore(options);
    return { store, close: () => store.close() };
  },
};

/** SQLite on a temp file per test (not `:memory:`), so WAL and locking behave as in production. */
export const SQLITE: Backend = {
  label: "sqlite",
  async open(options) {
    const dir = await mkdtemp(join(tmpdir(), "cairnq-retention-"));
    const store = new SQLiteStore(join(dir, "tasks.db"), options);
    return {
      store,
      async close() {
        await store.close();
        await rm(dir, { recursive: true, force: true });
      },
    };
  },
};

// Postgres joins this list once its test database helper lands.
export const BACKENDS: readonly Backend[] = [MEMORY, SQLITE];

/** Above any priority a test submits otherwise, so the next claim takes exactly this task. */
const JUMP_THE_QUEUE = 1_000_000;

export interface TaskSpec {
  name?: string;
  queue?: string;
  status: TaskStatus;
}

/**
 * Submits one task and drives it to `status` through the store: `running` is
 * claimed, `succeeded` claimed and completed, `failed` claimed and failed
 * without retry, `canceled` canceled while queued.
 */
export async function taskIn(store: TaskStore, spec: TaskSpec): Promise<Task> {
  const queue = spec.queue ?? "default";
  const name = spec.name ?? "job";
  if (spec.status === "queued") return store.submit({ name, queue });
  if (spec.status === "canceled") {
    const task = await store.submit({ name, queue });
    return (await store.cancel(task.id))!;
  }
  const task = await store.submit({ name, queue, priority: JUMP_THE_QUEUE });
  const [claimed] = await store.claim({ queues: [queue], workerId: "test-worker", limit: 1 });
  if (claimed?.id !== task.id) throw new Error(`expected to claim ${task.id}, got ${claimed?.id}`);
  switch (spec.status) {
    case "running":
      return claimed;
    case "succeeded":
      return store.complete({ taskId: task.id, workerId: "test-worker", result: { ok: true } });
    case "failed":
      return store.fail({ taskId: task.id, workerId: "test-worker", error: { type: "Boom", code: "boom", message: "boom", retryable: false, details: {} }, retryable: false });
  }
}

/** Every task id still in the store, by status. */
export async function idsByStatus(store: TaskStore): Promise<Record<TaskStatus, string[]>> {
  const out: Record<TaskStatus, string[]> = { queued: [], running: [], succeeded: [], failed: [], canceled: [] };
  for (const task of await store.list({ limit: 1_000_000 })) out[task.status].push(task.id);
  for (const list of Object.values(out)) list.sort();
  return out;
}

/** Records every purge call (input and rows deleted) and can delay or fail them. */
export class PurgeProbe implements RetentionStore {
  readonly calls: { input: PurgeInput; deleted: number; durationMs: number }[] = [];
  /** Resolves the next purge early when set; tests use it to hold a purge in flight. */
  gate: Promise<void> | null = null;
  /** Throws this from the next purge calls while set. */
  failWith: Error | undefined = undefined;
  /** Called synchronously at the start of each purge. */
  onPurge: ((input: PurgeInput) => void) | null = null;
  inFlight = 0;

  constructor(readonly inner: RetentionStore) {}

  async purge(input?: PurgeInput): Promise<string[]> {
    this.inFlight += 1;
    try {
      this.onPurge?.(input ?? {});
      if (this.gate !== null) await this.gate;
      if (this.failWith !== undefined) throw this.failWith;
      const started = performance.now();
      const ids = await this.inner.purge(input);
      this.calls.push({ input: input ?? {}, deleted: ids.length, durationMs: performance.now() - started });
      return ids;
    } finally {
      this.inFlight -= 1;
    }
  }
}

/** A promise plus its resolver, for holding a purge in flight. */
export function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}
