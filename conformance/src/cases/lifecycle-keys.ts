/**
 * Concurrent keyed submits of the randomized lifecycle walk
 * (`lifecycle-random.ts`): several submits of one key, each with its own
 * conflict strategy, sent at once — split between the case's store and, when
 * the suite gives `createPeerStore`, a second instance on the same database.
 * Keyed submits serialise on the key lock (§5.0), so the answers, the key's
 * task afterwards and every row they touched must be those of one order of
 * the submits run one after the other under §5.1: at most one live task per
 * key, every `reuse` gets the key's task of that moment back (`created:
 * false`), every `reject` of a taken key throws `AlreadyExists`, and a key
 * frees exactly when its task is declined (failed, canceled, succeeded under
 * `reuse`, replaced, or purged).
 */
import type { Conflict, SubmitInput, SubmitOutcome, Task } from "@cairnq/protocol";
import { AlreadyExists } from "@cairnq/protocol";
import { buildInsert, CANCEL, CONFLICTS, decideRow, normalizeSubmit, resolveKeyConflict, SUBMIT } from "@cairnq/protocol/adapter";
import type { CheckedStore } from "../checked-store.js";
import type { Entry, Window } from "./lifecycle-model.js";
import { decoded, rowDiff, timed } from "./lifecycle-model.js";
import type { Walk } from "./lifecycle-random.js";
import { check, reread } from "./lifecycle-ops.js";

let payloads = 0;

/** One submit of the burst: its input, which instance sent it, and what it answered. */
interface Call {
  readonly input: SubmitInput;
  readonly conflict: Conflict;
  readonly peer: boolean;
  readonly value?: SubmitOutcome;
  readonly error?: unknown;
}

/** The key's task in one order: the walk's existing task, or the task a call of the burst created. */
type Current = { readonly kind: "old"; readonly entry: Entry } | { readonly kind: "new"; readonly call: number } | null;

/** What one order of the burst does: which calls created, which task each replaced, and where the key points at the end. */
interface Outcome {
  /** The creating calls, in the order's order. */
  readonly created: number[];
  /** The creating calls whose task a later creator of the order declined while it was live (so it was cancelled). */
  readonly replacedNew: Set<number>;
  /** Whether the walk's existing task was declined while live (a `replace`, or a reuse strategy's decline: never live). */
  readonly oldCanceled: boolean;
  readonly last: Current;
}

function thrown(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

function permutations(n: number): number[][] {
  if (n === 0) return [[]];
  return permutations(n - 1).flatMap((rest) => Array.from({ length: n }, (_, i) => [...rest.slice(0, i), n - 1, ...rest.slice(i)]));
}

/** The predicted new row of call `i` at `nowMs` (the insert of §5.1). */
function inserted(calls: readonly Call[], i: number, nowMs: number): Task {
  const call = calls[i] as Call;
  const id = (call.value as SubmitOutcome).task.id;
  return buildInsert(SUBMIT, decoded({ ...normalizeSubmit(call.input, id).params }), nowMs);
}

/**
 * Plays the answers in `order` under §5.1: `null` when some answer does not fit, else what that order did. The rows
 * of the key's task only matter through their status, which no clock decides here (new tasks are `queued`).
 */
function play(calls: readonly Call[], order: readonly number[], existing: Entry | null): Outcome | null {
  let current: Current = existing === null ? null : { kind: "old", entry: existing };
  let oldStatus = existing?.row.status ?? null;
  const created: number[] = [];
  const replacedNew = new Set<number>();
  let oldCanceled = false;
  for (const i of order) {
    const call = calls[i] as Call;
    const status = current === null ? null : current.kind === "old" ? oldStatus : replacedNew.has(current.call) ? "canceled" : "queued";
    const decision = resolveKeyConflict(call.conflict, status === null ? null : { status });
    if (decision.kind === "reject") {
      if (!(call.error instanceof AlreadyExists)) return null;
      continue;
    }
    if (call.error !== undefined || call.value === undefined) return null;
    if (decision.kind === "reuse") {
      if (call.value.created) return null;
      const want = current === null ? null : current.kind === "old" ? current.entry.row.id : ((calls[current.call] as Call).value?.task.id ?? null);
      if (call.value.task.id !== want) return null;
      continue;
    }
    if (!call.value.created) return null;
    if (decision.cancelExisting && current !== null) {
      if (current.kind === "old") {
        oldCanceled = true;
        // A queued task ends canceled; a running one is flagged and stays running (it ends canceled when settled).
        if (oldStatus === "queued") oldStatus = "canceled";
      } else replacedNew.add(current.call);
    }
    created.push(i);
    current = { kind: "new", call: i };
  }
  return { created, replacedNew, oldCanceled, last: current };
}

/**
 * A burst of keyed submits of one key (2 to 4, each `reuse`, `reuse-succeeded`, `reject` or `replace`, often all
 * the same), sent at once from the store and its peer; checked against every order of them (§5.1 under the key lock).
 */
export async function keyBurst(w: Walk): Promise<void> {
  const { rng, t, model } = w;
  const key = rng.pick(w.keys);
  const existing = model.byKey(key);
  const peer: CheckedStore = await t.peer();
  const same = rng.chance(0.4) ? rng.pick(CONFLICTS) : null;
  const specs = Array.from({ length: rng.int(2, 4) }, () => ({
    input: {
      name: rng.pick(w.names),
      queue: rng.pick(w.queues),
      priority: rng.pick([0, 0, 1]),
      maxAttempts: rng.pick([1, 2, 3]),
      payload: { burst: ++payloads },
      key,
      runAtDelayMs: rng.chance(0.8) ? 0 : rng.int(20, 150),
      conflict: same ?? rng.pick(CONFLICTS),
    } satisfies SubmitInput,
    peer: t.hasPeer && rng.chance(0.5),
  }));
  const answers = await Promise.all(specs.map((spec) => timed(() => (spec.peer ? peer : t.store).submitOutcome(spec.input))));
  const window: Window = { lo: Math.min(...answers.map((a) => a.window.lo)), hi: Math.max(...answers.map((a) => a.window.hi)) };
  const calls: Call[] = specs.map((spec, i) => {
    const answer = answers[i] as (typeof answers)[number];
    return { input: spec.input, conflict: spec.input.conflict, peer: spec.peer, ...(answer.error === undefined ? { value: answer.value as SubmitOutcome } : { error: answer.error }) };
  });
  const short = key.slice(key.lastIndexOf("-") + 1);
  const brief = (call: Call): string =>
    `${call.conflict}${call.peer ? "@peer" : ""} -> ${call.error !== undefined ? (thrown(call.error).split(":")[0] ?? "error") : `${call.value?.created === true ? "new" : "same"} ${model.label(call.value?.task.id ?? "")}`}`;
  const what = `key burst ${short} (${existing === null ? "free" : `${existing.label} ${existing.row.status}`}): ${calls.map(brief).join(" | ")}`;
  w.log.push(what);
  for (const call of calls) if (call.error !== undefined && !(call.error instanceof AlreadyExists)) w.fail(`${what}: a submit threw ${thrown(call.error)}`);
  const newIds = calls.filter((c) => c.value?.created === true).map((c) => (c.value as SubmitOutcome).task.id);
  if (new Set(newIds).size !== newIds.length) w.fail(`${what}: two submits answered the same task as new`);
  for (const id of newIds) if (model.tasks.has(id) || model.purged.has(id)) w.fail(`${what}: answered ${model.label(id)}, an existing task, as new`);
  // The key's task now, which the last creating submit of the order must have made.
  const byKey = await t.store.getByKey(key);
  const outcomes = permutations(calls.length)
    .map((order) => play(calls, order, existing))
    .filter((o): o is Outcome => o !== null)
    .filter((o) => {
      const want = o.last === null ? null : o.last.kind === "old" ? o.last.entry.row.id : (calls[o.last.call]?.value?.task.id ?? null);
      return (byKey?.id ?? null) === want;
    });
  const outcome = outcomes[0];
  if (outcome === undefined) return w.fail(`${what}: no order of the submits gives these answers and the key's task ${model.label(byKey?.id ?? "none")} (§5.1 under the key lock)`);
  // Every order that fits agrees on what was created and replaced (only the creators' order matters): take the first.
  for (const i of outcome.created) {
    const call = calls[i] as Call;
    const task = (call.value as SubmitOutcome).task;
    const entry = model.add(inserted(calls, i, window.lo), key);
    check(w, entry, inserted(calls, i, window.lo), inserted(calls, i, window.hi), task, `${what}: the new task ${entry.label}`);
  }
  // A reuse answered the key's task of its moment: a task of the burst as inserted, or the walk's task as the model has it.
  for (const call of calls) {
    if (call.value === undefined || call.value.created) continue;
    const i = calls.findIndex((c) => c.value?.created === true && c.value.task.id === call.value?.task.id);
    const lo = i >= 0 ? inserted(calls, i, window.lo) : (existing as Entry).row;
    const hi = i >= 0 ? inserted(calls, i, window.hi) : (existing as Entry).row;
    const diff = rowDiff(lo, hi, call.value.task);
    if (diff !== null) w.fail(`${what}: a reuse answered ${model.label(call.value.task.id)} ${diff}`);
  }
  // The rows afterwards: replaced tasks of the burst canceled, the walk's task canceled (queued) or flagged (running) if replaced.
  for (const i of outcome.created) {
    const entry = model.tasks.get((calls[i] as Call).value?.task.id as string) as Entry;
    if (!outcome.replacedNew.has(i)) await reread(w, entry, `${what}: ${entry.label} after the burst`);
    else await reread(w, entry, `${what}: ${entry.label}, replaced in the burst`, ...canceled(entry.row, window));
  }
  if (existing !== null) {
    if (outcome.oldCanceled) await reread(w, existing, `${what}: ${existing.label}, which the burst replaced`, ...canceled(existing.row, window));
    else await reread(w, existing, `${what}: ${existing.label}, which the burst kept`);
  }
}

/** `row` after `CANCEL` at the window's two ends. */
function canceled(row: Task, window: Window): [Task, Task] {
  const lo = decideRow(CANCEL, row, { taskId: row.id }, window.lo);
  const hi = decideRow(CANCEL, row, { taskId: row.id }, window.hi);
  if (lo.kind !== "applied" || hi.kind !== "applied") return [row, row];
  return [lo.row, hi.row];
}
