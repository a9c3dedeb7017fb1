/**
 * Runs one random program (`step-programs.ts`) through workers of a test
 * queue on the virtual clock and checks what happened against the model.
 *
 * - The parent runs on its own worker (concurrency 1) so that a **crash**
 *   stops exactly that worker: it is stopped with `stopTimeoutMs: 0` (nothing
 *   settled, heartbeats stop), the frozen handler never continues, and a
 *   new worker takes the task over once the lease ran out on the virtual
 *   clock. Children run on a worker that never crashes.
 * - Messages sent "after" a wait are timers of the virtual clock started
 *   when the handler reaches the wait (the wait parks at that very instant:
 *   virtual time does not move inside a drain), so they arrive exactly
 *   `delayMs` after the park whatever the crashes before.
 * - Each step body counts its side effects and returns; a body also checks,
 *   before its side effect, that the journal has no recorded result for it.
 */
import type { StepRecord, Task } from "@cairnq/protocol";
import { stepKey } from "@cairnq/protocol";
import type { TestQueue } from "@cairnq/testing";
import type { Worker } from "@cairnq/worker";
import type { ChildSpec, Json, Op, Program } from "./step-programs.ts";
import { childSummary, describeProgram, expectedResult } from "./step-programs.ts";

/** The parent's lease: a crashed run's task is taken over this long after its last heartbeat. */
export const LEASE_MS = 1000;
const RETRY_BACKOFF_MS = 5;
const NEVER = new Promise<never>(() => {});

/** What the handlers saw, for the checks. */
interface Seen {
  /** Step body side effects (before a crash inside the body) and returns, per counter key. */
  effects: Map<string, number>;
  returns: Map<string, number>;
  throws: Map<string, number>;
  crashesIn: Map<string, number>;
  /** What each visit of a parent op resolved with, per op. */
  values: Map<number, Json[]>;
  spawnIds: Map<number, string>;
  visits: number[];
  fired: Set<number>;
  /** A child's handler returning or throwing its outcome, per tag. */
  childEnds: Map<string, number>;
  violations: string[];
  pending: Promise<unknown>[];
}

function bump(map: Map<string, number>, key: string): number {
  const n = (map.get(key) ?? 0) + 1;
  map.set(key, n);
  return n;
}

/** The journal key of each op (all step-family methods share one name space per run). */
function keysOf(ops: readonly Op[]): string[] {
  const occurrences = new Map<string, number>();
  return ops.map((op) => stepKey(op.name, bump(occurrences, op.name)));
}

function summary(row: Task | null): [string, Json] {
  if (row === null) return ["purged", null];
  if (row.status === "succeeded") return [row.status, row.result as Json];
  if (row.status === "failed") return [row.status, ((row.error ?? {}) as { message?: string }).message ?? null];
  return [row.status, null];
}

function childMaxAttempts(spec: ChildSpec): number {
  return spec.steps.filter((s) => s.failOnce).length + 2;
}

/**
 * Runs `program` on `queue` (fresh, with no workers yet) to the end and
 * returns the violations found; an empty list is a pass. Each violation
 * names the program, so a failure prints what to reproduce.
 */
export async function runProgram(queue: TestQueue, program: Program, timeUnitMs: number): Promise<string[]> {
  const { ops, interruptions } = program;
  const keys = keysOf(ops);
  const seen: Seen = {
    effects: new Map(),
    returns: new Map(),
    throws: new Map(),
    crashesIn: new Map(),
    values: new Map(),
    spawnIds: new Map(),
    visits: ops.map(() => 0),
    fired: new Set(),
    childEnds: new Map(),
    violations: [],
    pending: [],
  };
  const clock = queue.clock;
  const store = queue.store as unknown as { steps(id: string): Promise<StepRecord[]> };
  let parentId = "";
  const journalEntry = async (taskId: string, key: string): Promise<StepRecord | undefined> => (await store.steps(taskId)).find((e) => e.name === key);

  const interruption = (op: number, visit: number, kinds: readonly string[]): number => {
    return interruptions.findIndex((it, i) => it.op === op && it.visit === visit && kinds.includes(it.kind) && !seen.fired.has(i));
  };

  let parentWorker: Worker;
  const crash = (): Promise<never> => {
    void parentWorker.stop();
    parentWorker = startParentWorker();
    return NEVER;
  };

  const stepBody = (counter: string, taskId: string, key: string, value: Json, failOnce: boolean, crashAt: number) => async (): Promise<Json> => {
    const entry = await journalEntry(taskId, key);
    if (entry?.status === "done") seen.violations.push(`step ${counter} (${key}) ran again although the journal has its result ${JSON.stringify(entry.result)}`);
    if (failOnce && (seen.throws.get(counter) ?? 0) === 0) {
      bump(seen.throws, counter);
      throw new Error(`${counter} fails once`);
    }
    bump(seen.effects, counter);
    if (crashAt >= 0) {
      seen.fired.add(crashAt);
      bump(seen.crashesIn, counter);
      return crash();
    }
    bump(seen.returns, counter);
    return value;
  };

  const parentHandler = async (ctx: Parameters<Parameters<Worker["task"]>[1]>[0]): Promise<Json[]> => {
    const out: Json[] = [];
    const ids: string[] = [];
    for (let i = 0; i < ops.length; i++) {
      const op = ops[i] as Op;
      const key = keys[i] as string;
      const visit = (seen.visits[i] = (seen.visits[i] ?? 0) + 1);
      const before = interruption(i, visit, ["crash", "throw"]);
      if (before >= 0) {
        seen.fired.add(before);
        if (interruptions[before]?.kind === "throw") throw new Error(`injected failure before op ${i}`);
        return crash();
      }
      let value: Json;
      switch (op.kind) {
        case "step":
          value = await ctx.step(op.name, stepBody(`op${i}`, ctx.taskId, key, op.value, op.failOnce, interruption(i, visit, ["crash-in-step"])));
          break;
        case "sleep": {
          await ctx.sleep(op.name, op.ms);
          const entry = await journalEntry(ctx.taskId, key);
          const wakeAtMs = entry?.wakeAtMs ?? null;
          if (wakeAtMs !== null && clock.now() < wakeAtMs) seen.violations.push(`sleep op ${i} (${key}) ended at ${clock.now()}, before its wake time ${wakeAtMs}`);
          if (op.ms > 0 && (entry?.wakeAtMs ?? null) === null) seen.violations.push(`sleep op ${i} (${key}) of ${op.ms} ms ended without a recorded wake time: ${JSON.stringify(entry)}`);
          if (wakeAtMs !== null && entry !== undefined && wakeAtMs < entry.atMs + op.ms - 0) {
            // atMs is the entry's last write; a sleep is written once, when it parks.
            seen.violations.push(`sleep op ${i} (${key}) of ${op.ms} ms parked at ${entry.atMs} with wake time ${wakeAtMs}`);
          }
          value = `slept ${op.ms}`;
          break;
        }
        case "wait": {
          if (op.send.at === "after" && !seen.fired.has(-1 - i)) {
            // Started when the wait is reached, i.e. at the instant it parks (see the module comment).
            seen.fired.add(-1 - i);
            const id = ctx.taskId;
            clock.startTimer(() => seen.pending.push(queue.client.send(id, op.name, op.payload)), op.send.delayMs);
          }
          value = (await ctx.waitFor<Json>(op.name, op.timeoutMs === null ? {} : { timeoutMs: op.timeoutMs })) ?? null;
          break;
        }
        case "spawn": {
          const id = await ctx.spawn(op.name, "child", op.child, { maxAttempts: childMaxAttempts(op.child) });
          const first = seen.spawnIds.get(i);
          if (first === undefined) {
            seen.spawnIds.set(i, id);
            if (op.child.outcome === "cancel") clock.startTimer(() => seen.pending.push(queue.client.cancel(id)), timeUnitMs);
          } else if (first !== id) seen.violations.push(`spawn op ${i} (${key}) returned ${id} on a replay, ${first} the first time`);
          ids[i] = id;
          value = `spawned ${op.child.tag}`;
          break;
        }
        case "join": {
          const rows = await ctx.join(op.name, op.of.map((s) => ids[s] as string));
          value = rows.map(summary);
          break;
        }
      }
      const values = seen.values.get(i) ?? [];
      values.push(value);
      seen.values.set(i, values);
      out.push(value);
    }
    return out;
  };

  const startParentWorker = (): Worker => {
    const worker = queue.worker({ concurrency: 1, leaseMs: LEASE_MS, stopTimeoutMs: 0, retryBackoffMs: RETRY_BACKOFF_MS, logger: null });
    worker.task("parent", parentHandler);
    return worker;
  };
  parentWorker = startParentWorker();

  const children = queue.worker({ concurrency: 4, retryBackoffMs: RETRY_BACKOFF_MS });
  children.task("child", async (ctx, spec: ChildSpec) => {
    const values: Json[] = [];
    for (let j = 0; j < spec.steps.length; j++) {
      const s = spec.steps[j] as ChildSpec["steps"][number];
      values.push(await ctx.step("s", stepBody(`${spec.tag}.${j}`, ctx.taskId, stepKey("s", j + 1), s.value, s.failOnce, -1)));
    }
    if (spec.outcome === "cancel") {
      await ctx.waitFor("never");
      seen.violations.push(`${spec.tag} was to be canceled while it waits, and its wait returned`);
    }
    bump(seen.childEnds, spec.tag);
    if (spec.outcome === "fail") throw new Error(`${spec.tag} fails`);
    return { tag: spec.tag, values };
  });

  const parent = await queue.client.submit("parent", null, { runAtDelayMs: 1, maxAttempts: 100 });
  parentId = parent.id;
  for (const op of ops) if (op.kind === "wait" && op.send.at === "before") await queue.client.send(parent.id, op.name, op.payload);

  let row: Task | null = null;
  for (let round = 0; round < 200; round++) {
    await queue.advance(LEASE_MS);
    row = await queue.client.get(parentId);
    if (row?.status !== "queued" && row?.status !== "running") break;
  }
  await Promise.all(seen.pending);
  await queue.advance(LEASE_MS);
  return check(queue, program, parentId, keys, seen);
}

async function check(queue: TestQueue, program: Program, parentId: string, keys: readonly string[], seen: Seen): Promise<string[]> {
  const problems = [...seen.violations];
  const expected = expectedResult(program);
  const row = await queue.client.get(parentId);
  if (row?.status !== "succeeded") problems.push(`the parent ended ${row?.status ?? "missing"} (${JSON.stringify(row?.error)}), not succeeded`);
  else if (JSON.stringify(row.result) !== JSON.stringify(expected)) problems.push(`the parent returned\n    ${JSON.stringify(row.result)}\n  a run without interruptions returns\n    ${JSON.stringify(expected)}`);

  program.ops.forEach((op, i) => {
    for (const value of seen.values.get(i) ?? []) {
      if (JSON.stringify(value) !== JSON.stringify(expected[i])) problems.push(`op ${i} (${keys[i]}) resolved with ${JSON.stringify(value)} on some run; expected ${JSON.stringify(expected[i])}`);
    }
    if (op.kind === "step") problems.push(...stepCounts(`op${i}`, op.failOnce, true, seen));
    if (op.kind === "spawn") op.child.steps.forEach((s, j) => problems.push(...stepCounts(`${op.child.tag}.${j}`, s.failOnce, op.child.outcome !== "cancel", seen)));
  });

  const all = await queue.client.list({});
  const childRows = all.filter((t) => t.name === "child");
  const spawns = program.ops.flatMap((op) => (op.kind === "spawn" ? [op] : []));
  if (childRows.length !== spawns.length) problems.push(`${childRows.length} children were submitted for ${spawns.length} spawns`);
  for (const [i, id] of seen.spawnIds) {
    const op = program.ops[i] as Extract<Op, { kind: "spawn" }>;
    const child = all.find((t) => t.id === id) ?? null;
    const [status] = childSummary(op.child);
    if (child?.status !== status) problems.push(`child ${op.child.tag} ended ${child?.status ?? "missing"}, expected ${status}`);
    if (child !== null && (child.parent_id !== parentId || child.root_id !== parentId)) problems.push(`child ${op.child.tag} has parent ${child.parent_id}, root ${child.root_id}`);
    const ends = seen.childEnds.get(op.child.tag) ?? 0;
    // A failing child reaches its outcome on each attempt that no step of it failed.
    const stepThrows = op.child.steps.reduce((sum, _s, j) => sum + (seen.throws.get(`${op.child.tag}.${j}`) ?? 0), 0);
    const wanted = op.child.outcome === "succeed" ? 1 : op.child.outcome === "fail" ? (child?.attempt ?? 0) - stepThrows : 0;
    if (ends !== wanted) problems.push(`child ${op.child.tag}'s handler reached its outcome ${ends} times, expected ${wanted}`);
  }
  for (const task of all) if (task.status === "queued" || task.status === "running") problems.push(`task ${task.name} ${task.id} is left ${task.status}`);
  const journal = await queue.client.steps(parentId);
  for (const entry of journal) if (entry.status !== "done") problems.push(`journal entry ${entry.name} is left ${entry.status}`);

  // Deleted tasks leave no journal behind.
  await queue.advance(1);
  const purged = await queue.client.purge({ olderThanMs: 0 });
  if (purged.length !== all.length) problems.push(`purge deleted ${purged.length} of ${all.length} tasks`);
  for (const task of all) if ((await queue.client.steps(task.id)).length > 0) problems.push(`task ${task.name} ${task.id} was purged and its journal is still there`);

  return problems.length === 0 ? [] : [describeProgram(program), ...problems];
}

/**
 * A step body returns once in all (`reached`: it must have; a child canceled early may never run); one
 * failing once also threw once; a side effect repeats only after a crash inside its body.
 */
function stepCounts(counter: string, failOnce: boolean, reached: boolean, seen: Seen): string[] {
  const returns = seen.returns.get(counter) ?? 0;
  const throws = seen.throws.get(counter) ?? 0;
  const effects = seen.effects.get(counter) ?? 0;
  const crashes = seen.crashesIn.get(counter) ?? 0;
  const out: string[] = [];
  if (returns > 1 || (reached && returns !== 1)) out.push(`step ${counter} returned ${returns} times`);
  if (failOnce && returns > 0 && throws !== 1) out.push(`step ${counter} threw ${throws} times`);
  if (effects !== returns + crashes) out.push(`step ${counter} did its side effect ${effects} times for ${returns} returns and ${crashes} crashes inside it`);
  return out;
}
