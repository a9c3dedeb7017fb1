/**
 * A fake of the slice of a store the §7 wait loop reads, shared by the wait
 * tests (`wait.test.ts`, `wait-read-failures.test.ts`).
 */
import { expect } from "vitest";
import { TaskTimeout } from "../src/errors.js";
import type { TaskStore } from "../src/store.js";
import type { Task, TaskRef } from "../src/task.js";
import { NOW } from "./fixtures.js";

/**
 * The slice of a store the wait loop reads, over a mutable row table and key
 * map, on a fake monotonic clock that only `taskDoneWake` and the injected
 * sleep advance. `onBeat` runs before every status probe (poll number 1, 2, …),
 * so a test scripts what the task does between polls.
 */
export function fakeStore(rows: Task[] = [], keys: Record<string, string> = {}) {
  const table = new Map(rows.map((r) => [r.id, r]));
  const keyed = new Map(Object.entries(keys));
  const calls: { method: string; args: unknown[] }[] = [];
  const clock = { ms: 0 };
  const state = { polls: 0, onBeat: (_poll: number): void => {} };
  const ref = (row: Task | undefined): TaskRef | null => (row === undefined ? null : { id: row.id, status: row.status });
  const store = {
    async getStatus(id: string) {
      calls.push({ method: "getStatus", args: [id] });
      state.polls += 1;
      state.onBeat(state.polls);
      return ref(table.get(id));
    },
    async getStatusByKey(key: string) {
      calls.push({ method: "getStatusByKey", args: [key] });
      state.polls += 1;
      state.onBeat(state.polls);
      const id = keyed.get(key);
      return ref(id === undefined ? undefined : table.get(id));
    },
    async get(id: string) {
      calls.push({ method: "get", args: [id] });
      return table.get(id) ?? null;
    },
    async getByKey(key: string) {
      calls.push({ method: "getByKey", args: [key] });
      const id = keyed.get(key);
      return (id === undefined ? undefined : table.get(id)) ?? null;
    },
    async taskDoneWake(id: string, ms: number, signal?: AbortSignal) {
      calls.push({ method: "taskDoneWake", args: [id, ms, signal] });
      clock.ms += ms;
    },
  };
  const sleeps: number[] = [];
  const deps = {
    now: () => clock.ms,
    wallNow: () => NOW,
    sleep: async (ms: number) => {
      sleeps.push(ms);
      clock.ms += ms;
    },
  };
  return {
    store: store as unknown as TaskStore,
    table,
    keyed,
    clock,
    state,
    deps,
    sleeps,
    count: (method: string) => calls.filter((c) => c.method === method).length,
    wakes: () => calls.filter((c) => c.method === "taskDoneWake").map((c) => [c.args[0], c.args[1]]),
  };
}

/** The `TaskTimeout` a wait rejects with; any other outcome fails the test. */
export async function timeoutOf(wait: Promise<Task>): Promise<TaskTimeout> {
  try {
    await wait;
  } catch (error) {
    expect(error).toBeInstanceOf(TaskTimeout);
    return error as TaskTimeout;
  }
  return expect.unreachable("the wait resolved instead of timing out");
}
