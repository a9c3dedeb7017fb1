/**
 * The client's side of durable steps: `cairnq.send` and `cairnq.steps`
 * (rules and words in `@cairnq/protocol` `steps.ts`), over a store that
 * declares `capabilities.durableSteps`.
 */
import type { SendOutcome, StepRecord, TaskStepStore, TaskStore } from "@cairnq/protocol";
import { UnsupportedBackend } from "@cairnq/protocol";

/** The store as a {@link TaskStepStore}, or `UnsupportedBackend` naming what is missing. */
export function stepStore(store: TaskStore, method: string): TaskStepStore {
  if (store.capabilities.durableSteps === true) return store as TaskStepStore;
  const name = (store as { constructor?: { name?: unknown } }).constructor?.name;
  const backend = typeof name === "string" && name !== "" && name !== "Object" ? name : "this";
  throw new UnsupportedBackend(method, backend, {
    message: `${method} needs a store with durable steps (capabilities.durableSteps: SQLiteStore, PostgresStore, MemoryStore); this ${backend} store has none`,
  });
}

/** `cairnq.send`: see `CairnQ.send`. */
export function sendMessage(store: TaskStore, taskId: string, name: string, payload: unknown): Promise<SendOutcome> {
  return stepStore(store, "send").send({ taskId, name, payload: payload === undefined ? null : payload });
}

/** `cairnq.steps`: see `CairnQ.steps`. */
export function readSteps(store: TaskStore, taskId: string): Promise<StepRecord[]> {
  return stepStore(store, "steps").steps(taskId);
}
