/**
 * Runs one random program (`step-programs.ts`) through workers and checks
 * what happened against the model. The host says what time is: a test
 * queue's virtual clock (`@cairnq/testing`), or real time on Postgres and
 * MariaDB.
 *
 * - The parent runs on its own worker (concurrency 1), so that a **crash**
 *   stops exactly that worker: it is stopped with `stopTimeoutMs: 0`
 *   (nothing settled, heartbeats stop), the frozen handler never continues,
 *   and a new worker takes the task over once the lease ran out. A
 *   **pause** stops it the same way, but its handler goes on after the
 *   lease ran out, a zombie. Children run on a worker that never crashes.
 * - A message sent "after" a wait is a timer started when a live run
 *   reaches the wait, which parks at once (on the virtual clock at that very
 *   instant), so it arrives `delayMs` after the park whatever came before.
 * - Each step body counts its side effects and returns, and checks before
 *   its side effect that the journal holds no result for it (a zombie may:
 *   its record is then refused). A step's result is **recorded** by a run
 *   when the body ran in that run and `ctx.step` resolved: exactly once per
 *   step.
 *
 * Only the methods called here are named (`StepHandlerContext`,
 * `ProgramClient`), so this file needs neither the worker nor the client.
 */
import type { StepRecord, Task } from "@cairnq/protocol";
import { InvalidArgument, stepKey } from "@cairnq/protocol";
import type { ChildSpec, Json, Op, Program, StepSpec } from "./step-programs.js";
import { childSummary, describeProgram, expectedResult } from "./step-programs.js";

/** The `ctx` methods a program's handlers call. */
export interface StepHandlerContext {
  readonly taskId: string;
  readonly attempt: number;
  step<T>(name: string, fn: () => Promise<T>): Promise<T>;
  sleep(name: string, ms: number): Promise<void>;
  waitFor<T>(name: string, options?: { timeoutMs?: number }): Promise<T | null>;
  spawn(name: string, task: string, payload: unknown, options?: { maxAttempts?: number }): Promise<string>;
  join(name: string, ids: readonly string[]): Promise<(Task | null)[]>;
}

/** The client methods the runner calls. */
export interface ProgramClient {
  submit(name: string, payload: unknown, options: { runAtDelayMs: number; maxAttempts: number }): Promise<{ id: string }>;
  send(taskId: string, name: string, payload: unknown): Promise<unknown>;
  cancel(id: string): Promise<unknown>;
  get(id: string): Promise<Task | null>;
  list(filter: Record<string, never>): Promise<Task[]>;
  steps(taskId: string): Promise<StepRecord[]>;
  purge(options: { olderThanMs: number }): Promise<string[]>;
}

export type ProgramHandler = (ctx: StepHandlerContext, payload: unknown) => Promise<unknown>;

/** Workers, a client and time, virtual or real. */
export interface ProgramHost {
  readonly client: ProgramClient;
  /** The parent's lease (a crashed run's task is taken over this long after its last heartbeat). */
  readonly leaseMs: number;
  /** Starts a worker of `concurrency` slots for these handlers, with `stopTimeoutMs: 0`, quiet, and a short retry backoff. */
  startWorker(options: { concurrency: number; leaseMs: number }, handlers: Readonly<Record<string, ProgramHandler>>): { stop(): Promise<void> };
  /** Calls `callback` `ms` from now. */
  startTimer(callback: () => void, ms: number): void;
  /** Waits `ms` (inside a handler). */
  sleep(ms: number): Promise<void>;
  /** Lets `ms` pass and what is due run (the test's side). */
  advance(ms: number): Promise<unknown>;
}

/** What the handlers saw, for the checks. */
interface Seen {
  /** Per step counter: side effects, returns of the body, throws, crashes inside it, results recorded by a live run. */
  effects: Map<string, number>;
  returns: Map<string, number>;
  throws: Map<string, number>;
  crashesIn: Map<string, number>;
  recorded: Map<string, number>;
  /** What each visit of a parent op resolved with, per op. */
  values: Map<number, Json[]>;
  spawnIds: Map<number, string>;
  visits: number[];
  /** Interruptions fired (by index) and waits whose message timer started (by `-1 - op`). */
  fired: Set<number>;
  /** A child's handler reaching its outcome, per tag. */
  childEnds: Map<string, number>;
  violations: string[];
  pending: Promise<unknown>[];
}

/** One handler run: a zombie after a pause. */
interface Run {
  readonly id: number;
  zombie: boolean;
  readonly executed: Set<string>;
}

const NEVER = new Promise<never>(() => {});

function bump(map: Map<string, number>, key: string): number {
  const n = (map.get(key) ?? 0) + 1;
  map.set(key, n);
  return n;
}

/** The journal keys of each op, in call order (all step-family methods share one name space per run). */
function keysOf(ops: readonly Op[]): string[][] {
  const occurrences = new Map<string, number>();
  const key = (name: string): string => stepKey(name, bump(occurrences, name));
  return ops.map((op) => (op.kind === "parallel" ? op.steps.map((s) => key(s.name)) : [key(op.name)]));
}

function summary(row: Task | null): [string, Json] {
  if (row === null) return ["purged", null];
  if (row.status === "succeeded") return [row.status, row.result as Json];
  if (row.status === "failed") return [row.status, ((row.error ?? {}) as { message?: string }).message ?? null];
  return [row.status, null];
}

/** JSON with every object's keys sorted. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === "object" && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v,
  );
}

function childMaxAttempts(spec: ChildSpec): number {
  return spec.steps.filter((s) => s.failOnce).length + 2;
}

/** Options of {@link runProgram}. */
export interface RunProgramOptions {
  /** The parent's start is delayed this long, so the messages sent "before" are there first. */
  readonly startDelayMs: number;
  /** A canceled child is canceled this long after its spawn. */
  readonly cancelAfterMs: number;
  /** The driver moves time in steps of this long until the parent is terminal, at most `rounds` times. */
  readonly roundMs: number;
  readonly rounds: number;
}

/**
 * Runs `program` on `host` to the end and returns what went wrong: empty
 * for a pass, else the program (to reproduce it) and each violation.
 */
export async function runProgram(host: ProgramHost, program: Program, options: RunProgramOptions): Promise<string[]> {
  const { ops, interruptions } = program;
  const keys = keysOf(ops);
  const seen: Seen = {
    effects: new Map(),
    returns: new Map(),
    throws: new Map(),
    crashesIn: new Map(),
    recorded: new Map(),
    values: new Map(),
    spawnIds: new Map(),
    visits: ops.map(() => 0),
    fired: new Set(),
    childEnds: new Map(),
    violations: [],
    pending: [],
  };
  const { client } = host;
  let runs = 0;
  const interruption = (op: number, visit: number, kinds: readonly string[]): number =>
    interruptions.findIndex((it, i) => it.op === op && it.visit === visit && kinds.includes(it.kind) && !seen.fired.has(i));

  let parentWorker: { stop(): Promise<void> };
  const replaceParentWorker = (): void => {
    void parentWorker.stop();
    parentWorker = host.startWorker({ concurrency: 1, leaseMs: host.leaseMs }, { parent: parentHandler });
  };

  const stepBody =
    (run: Run, counter: string, taskId: string, key: string, spec: StepSpec, crashAt: number) =>
    async (): Promise<Json> => {
      const entry = (await client.steps(taskId)).find((e) => e.name === key);
      if (entry?.status === "done" && !run.zombie) seen.violations.push(`step ${counter} (${key}) ran again although the journal has its result ${JSON.stringify(entry.result)}`);
      if (spec.failOnce && (seen.throws.get(counter) ?? 0) === 0) {
        bump(seen.throws, counter);
        throw new Error(`${counter} fails once`);
      }
      bump(seen.effects, counter);
      if (crashAt >= 0) {
        seen.fired.add(crashAt);
        bump(seen.crashesIn, counter);
        replaceParentWorker();
        return NEVER;
      }
      run.executed.add(counter);
      bump(seen.returns, counter);
      return spec.value;
    };

  const step = async (run: Run, ctx: StepHandlerContext, counter: string, key: string, spec: StepSpec, crashAt: number): Promise<Json> => {
    const value = await ctx.step(spec.name, stepBody(run, counter, ctx.taskId, key, spec, crashAt));
    if (run.executed.has(counter) && !run.zombie) bump(seen.recorded, counter);
    if (run.zombie && run.executed.has(counter)) seen.violations.push(`step ${counter} (${key}) was recorded by a zombie run, after its lease ran out`);
    return value;
  };

  const parentHandler = async (ctx: StepHandlerContext): Promise<Json[]> => {
    const run: Run = { id: ++runs, zombie: false, executed: new Set() };
    const out: Json[] = [];
    const ids: string[] = [];
    for (let i = 0; i < ops.length; i++) {
      const op = ops[i] as Op;
      const key = (keys[i] as string[])[0] as string;
      const visit = run.zombie ? 0 : (seen.visits[i] = (seen.visits[i] ?? 0) + 1);
      const before = interruption(i, visit, ["crash", "pause", "throw"]);
      if (before >= 0) {
        seen.fired.add(before);
        const kind = interruptions[before]?.kind;
        if (kind === "throw") throw new Error(`injected failure before op ${i}`);
        replaceParentWorker();
        if (kind === "crash") return NEVER;
        // A pause: the run goes on once its lease ran out and the task was taken over.
        run.zombie = true;
        await host.sleep(host.leaseMs * 2);
      }
      const crashAt = run.zombie ? -1 : interruption(i, visit, ["crash-in-step"]);
      let value: Json;
      switch (op.kind) {
        case "step":
          value = await step(run, ctx, `op${i}`, key, op, crashAt);
          break;
        case "parallel":
          value = await Promise.all(op.steps.map((s, j) => step(run, ctx, `op${i}.${j}`, keys[i]?.[j] as string, s, j === 0 ? crashAt : -1)));
          break;
        case "sleep": {
          await ctx.sleep(op.name, op.ms);
          const entry = (await client.steps(ctx.taskId)).find((e) => e.name === key);
          // The store computes a sleep's status with its own clock: `done` once its wake time has come.
          if (entry?.status !== "done") seen.violations.push(`sleep op ${i} (${key}) ended, and the journal reads ${JSON.stringify(entry)}`);
          if (op.ms > 0 && (entry?.wakeAtMs ?? null) === null) seen.violations.push(`sleep op ${i} (${key}) of ${op.ms} ms ended without a recorded wake time`);
          if (entry !== undefined && entry.wakeAtMs !== null && entry.wakeAtMs < entry.atMs + op.ms) {
            seen.violations.push(`sleep op ${i} (${key}) of ${op.ms} ms parked at ${entry.atMs} with wake time ${entry.wakeAtMs}`);
          }
          value = `slept ${op.ms}`;
          break;
        }
        case "wait": {
          if (op.send.at === "after" && !run.zombie && !seen.fired.has(-1 - i)) {
            seen.fired.add(-1 - i);
            const id = ctx.taskId;
            // The wait may time out and the task succeed before the message comes: send then refuses it.
            host.startTimer(() => seen.pending.push(client.send(id, op.name, op.payload).catch(lateSend)), op.send.delayMs);
          }
          value = (await ctx.waitFor<Json>(op.name, op.timeoutMs === null ? {} : { timeoutMs: op.timeoutMs })) ?? null;
          break;
        }
        case "spawn": {
          const id = await ctx.spawn(op.name, "child", op.child, { maxAttempts: childMaxAttempts(op.child) });
          const first = seen.spawnIds.get(i);
          if (first === undefined) {
            seen.spawnIds.set(i, id);
            if (op.child.outcome === "cancel") host.startTimer(() => seen.pending.push(client.cancel(id)), options.cancelAfterMs);
          } else if (first !== id) seen.violations.push(`spawn op ${i} (${key}) returned ${id} on a replay, ${first} the first time`);
          ids[i] = id;
          value = `spawned ${op.child.tag}`;
          break;
        }
        case "join":
          value = (await ctx.join(op.name, op.of.map((s) => ids[s] as string))).map(summary);
          break;
      }
      const values = seen.values.get(i) ?? [];
      values.push(value);
      seen.values.set(i, values);
      out.push(value);
    }
    return out;
  };

  const childHandler = async (ctx: StepHandlerContext, payload: unknown): Promise<unknown> => {
    const spec = payload as ChildSpec;
    const run: Run = { id: ++runs, zombie: false, executed: new Set() };
    const values: Json[] = [];
    for (let j = 0; j < spec.steps.length; j++) {
      values.push(await step(run, ctx, `${spec.tag}.${j}`, stepKey("s", j + 1), { ...(spec.steps[j] as ChildSpec["steps"][number]), name: "s" }, -1));
    }
    if (spec.outcome === "cancel") {
      await ctx.waitFor("never");
      seen.violations.push(`${spec.tag} was to be canceled while it waits, and its wait returned`);
    }
    bump(seen.childEnds, spec.tag);
    if (spec.outcome === "fail") throw new Error(`${spec.tag} fails`);
    return { tag: spec.tag, values };
  };

  parentWorker = host.startWorker({ concurrency: 1, leaseMs: host.leaseMs }, { parent: parentHandler });
  const children = host.startWorker({ concurrency: 4, leaseMs: host.leaseMs * 4 }, { child: childHandler });
  try {
    const parent = await client.submit("parent", null, { runAtDelayMs: options.startDelayMs, maxAttempts: 100 });
    for (const op of ops) if (op.kind === "wait" && op.send.at === "before") await client.send(parent.id, op.name, op.payload);
    for (let round = 0; round < options.rounds; round++) {
      await host.advance(options.roundMs);
      const row = await client.get(parent.id);
      if (row?.status !== "queued" && row?.status !== "running") break;
    }
    // The last messages and cancels (a message sent after its wait timed out may come after the end).
    await host.advance(options.roundMs);
    await Promise.all(seen.pending);
    await host.advance(options.roundMs);
    return await check(host, program, parent.id, keys, seen);
  } finally {
    await Promise.all([parentWorker.stop(), children.stop()]);
  }
}

async function check(host: ProgramHost, program: Program, parentId: string, keys: readonly string[][], seen: Seen): Promise<string[]> {
  const { client } = host;
  const problems = [...seen.violations];
  const expected = expectedResult(program);
  const row = await client.get(parentId);
  if (row?.status !== "succeeded") problems.push(`the parent ended ${row?.status ?? "missing"} (${JSON.stringify(row?.error)}), not succeeded`);
  // Key order aside: a task's result is stored as jsonb on Postgres, which orders keys its own way. What the
  // handler saw (below) keeps the order: the journal stores a step's result as text.
  else if (canonical(row.result) !== canonical(expected)) {
    problems.push(`the parent returned\n    ${JSON.stringify(row.result)}\n  a run without interruptions returns\n    ${JSON.stringify(expected)}`);
  }

  program.ops.forEach((op, i) => {
    for (const value of seen.values.get(i) ?? []) {
      if (JSON.stringify(value) !== JSON.stringify(expected[i])) problems.push(`op ${i} (${keys[i]?.join(", ")}) resolved with ${JSON.stringify(value)} on some run; expected ${JSON.stringify(expected[i])}`);
    }
    if (op.kind === "step") problems.push(...stepCounts(`op${i}`, op.failOnce, true, seen));
    if (op.kind === "parallel") op.steps.forEach((s, j) => problems.push(...stepCounts(`op${i}.${j}`, s.failOnce, true, seen)));
    if (op.kind === "spawn") op.child.steps.forEach((s, j) => problems.push(...stepCounts(`${op.child.tag}.${j}`, s.failOnce, op.child.outcome !== "cancel", seen)));
  });

  const all = await client.list({});
  const spawns = program.ops.flatMap((op) => (op.kind === "spawn" ? [op] : []));
  const childRows = all.filter((t) => t.name === "child");
  if (childRows.length !== spawns.length) problems.push(`${childRows.length} children were submitted for ${spawns.length} spawns`);
  for (const [i, id] of seen.spawnIds) {
    const op = program.ops[i] as Extract<Op, { kind: "spawn" }>;
    const child = all.find((t) => t.id === id) ?? null;
    const [status] = childSummary(op.child);
    if (child?.status !== status) problems.push(`child ${op.child.tag} ended ${child?.status ?? "missing"}, expected ${status}`);
    if (child !== null && (child.parent_id !== parentId || child.root_id !== parentId)) problems.push(`child ${op.child.tag} has parent ${child.parent_id}, root ${child.root_id}`);
    // A failing child reaches its outcome on each attempt on which none of its steps failed.
    const stepThrows = op.child.steps.reduce((sum, _s, j) => sum + (seen.throws.get(`${op.child.tag}.${j}`) ?? 0), 0);
    const wanted = op.child.outcome === "succeed" ? 1 : op.child.outcome === "fail" ? (child?.attempt ?? 0) - stepThrows : 0;
    const ends = seen.childEnds.get(op.child.tag) ?? 0;
    if (ends !== wanted) problems.push(`child ${op.child.tag}'s handler reached its outcome ${ends} times, expected ${wanted}`);
  }
  for (const task of all) if (task.status === "queued" || task.status === "running") problems.push(`task ${task.name} ${task.id} is left ${task.status}`);
  for (const entry of await client.steps(parentId)) if (entry.status !== "done") problems.push(`journal entry ${entry.name} is left ${entry.status}`);

  // Deleted tasks leave no journal behind.
  await host.advance(2);
  const purged = await client.purge({ olderThanMs: 0 });
  if (purged.length !== all.length) problems.push(`purge deleted ${purged.length} of ${all.length} tasks`);
  for (const task of all) if ((await client.steps(task.id)).length > 0) problems.push(`task ${task.name} ${task.id} was purged and its journal is still there`);

  return problems.length === 0 ? [] : [describeProgram(program), ...problems];
}

/**
 * A step's result is recorded once by a live run (`reached`: it must have been; a child canceled early may
 * never run); one failing once threw once; a side effect repeats only after a crash inside its body, or in a
 * zombie whose record was refused.
 */
function stepCounts(counter: string, failOnce: boolean, reached: boolean, seen: Seen): string[] {
  const recorded = seen.recorded.get(counter) ?? 0;
  const returns = seen.returns.get(counter) ?? 0;
  const throws = seen.throws.get(counter) ?? 0;
  const effects = seen.effects.get(counter) ?? 0;
  const crashes = seen.crashesIn.get(counter) ?? 0;
  const out: string[] = [];
  if (recorded > 1 || (reached && recorded !== 1)) out.push(`step ${counter}'s result was recorded by ${recorded} runs`);
  if (failOnce && recorded > 0 && throws !== 1) out.push(`step ${counter} threw ${throws} times`);
  if (effects !== returns + crashes) out.push(`step ${counter} did its side effect ${effects} times for ${returns} returns and ${crashes} crashes inside it`);
  return out;
}

/** A message sent after its task succeeded is refused (no wait of it can run again); anything else is a failure. */
function lateSend(err: unknown): void {
  if (err instanceof InvalidArgument && err.argument === "taskId" && /has succeeded/.test(err.message)) return;
  throw err;
}
