/**
 * Submits with the client's telemetry around them: with `tracing` or
 * `metrics` on, each submit is a PRODUCER span `send <queue>` whose context
 * is written with the task (metadata key `cairnq.trace`, in the same write),
 * and counts in `messaging.client.sent.messages`; with both off (`null`), the
 * store's submit as it is, nothing loaded.
 */
import type { SubmitInput, SubmitOutcome, Task, TaskStore } from "@cairnq/protocol";
import type { Telemetry } from "@cairnq/runtime";

/** `store.submit(input)`, traced and counted by `telemetry` when there is one. */
export function submitTraced(telemetry: Telemetry | null, store: TaskStore, input: SubmitInput): Promise<Task> {
  if (telemetry === null) return store.submit(input);
  return telemetry.send(input, (traced) => store.submit(traced), (row) => row);
}

/** `store.submitOutcome(input)`, traced and counted by `telemetry` when there is one. */
export function submitOutcomeTraced(telemetry: Telemetry | null, store: TaskStore, input: SubmitInput): Promise<SubmitOutcome> {
  if (telemetry === null) return store.submitOutcome(input);
  return telemetry.send(input, (traced) => store.submitOutcome(traced), (outcome) => outcome.task);
}
