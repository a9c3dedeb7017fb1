/**
 * Test support: an in-memory store, a spy/hook wrapper around it, and small
 * timing helpers. Leases and intervals in these tests are tens of ms.
 */
import type { Task, TaskStore } from "@cairnq/protocol";
import { MemoryStore } from "@cairnq/conformance";

export { MemoryStore };

type Method = {
  [K in keyof TaskStore]: TaskStore[K] extends (...args: never[]) => unknown ? K : never;
}[keyof TaskStore];

/** A recorded store call. */
export interface StoreCall {
  readonly method: Method;
  readonly args: unknown[];
  readonly atMs: number;
}

/** Wraps a store call: may delay, replace or fail it. */
export type Hook = (args: unknown[], next: () => Promise<unknown>) => Promise<unknown>;

export interface SpyStore {
  readonly store: TaskStore;
  readonly inner: MemoryStore;
  readonly calls: StoreCall[];
  readonly hooks: Partial<Record<Method, Hook>>;
  /** Recorded calls of one method. */
  callsOf(method: Method): StoreCall[];
}

/** A `MemoryStore` behind a proxy that records every call and lets tests hook any method. */
export function spyStore(inner: MemoryStore = new MemoryStore(), overrides: Partial<TaskStore> = {}): SpyStore {
  const calls: StoreCall[] = [];
  const hooks: Partial<Record<Method, Hook>> = {};
  const store = new Proxy(inner, {
    get(target, prop) {
      if (Object.hasOwn(overrides, prop)) return (overrides as Record<string | symbol, unknown>)[prop];
      const value = Reflect.get(target, prop, target) as unknown;
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        calls.push({ method: prop as Method, args, atMs: Date.now() });
        const next = () => (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        const hook = hooks[prop as Method];
        return hook === undefined ? next() : hook(args, next);
      };
    },
  }) as unknown as TaskStore;
  return { store, inner, calls, hooks, callsOf: (method) => calls.filter((c) => c.method === method) };
}

export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Polls `predicate` every 5 ms until it holds (or fails the test after `timeoutMs`). */
export async function waitFor(predicate: () => boolean | Promise<boolean>, timeoutMs = 3000, what = "condition"): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs}ms waiting for ${what}`);
    await delay(5);
  }
}

/** Waits until the task reaches one of `statuses` and returns it. */
export async function waitForStatus(store: TaskStore, id: string, statuses: readonly Task["status"][], timeoutMs = 3000): Promise<Task> {
  let row: Task | null = null;
  await waitFor(
    async () => {
      row = await store.get(id);
      return row !== null && statuses.includes(row.status);
    },
    timeoutMs,
    `task ${id} to be ${statuses.join("/")}`,
  );
  return row as unknown as Task;
}

/** A manually released gate. */
export function gate(): { promise: Promise<void>; open(): void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

/** Busy-waits, blocking the event loop. */
export function blockFor(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    // spin
  }
}

export { trackTimers } from "@cairnq/test-support";
