/**
 * Random durable-step programs for the seeded randomized tests of durable
 * steps (`packages/testing/test/steps-fuzz.test.ts` on the virtual clock,
 * `packages/cairnq/test/integration/steps-fuzz-*.test.ts` on Postgres and
 * MariaDB): a generator, and the model of what a program returns when it
 * runs without interruptions. `step-program-run.ts` runs them.
 *
 * Words used here:
 * - a **program** is the list of ops a parent task's handler runs in order
 *   (`step`, `parallel` steps under `Promise.all`, `sleep`, `wait`, `spawn`,
 *   `join`), with the **interruptions** injected into its runs: a **crash**
 *   (the worker is stopped without settling, the handler freezes, the lease
 *   runs out and a new worker takes over), a **pause** (the same, but the
 *   handler goes on after the lease ran out, as a paused process would: a
 *   zombie whose writes must all be refused) or a **throw** (the handler
 *   fails between two ops, once, and the task is retried), each on the n-th
 *   time a run reaches an op;
 * - a **visit** of an op is one run of the handler reaching it (a replayed
 *   op is visited again on every later run);
 * - the **expected result** is what the handler returns in a run without
 *   interruptions: one entry per op (see {@link expectedResult}).
 */
import { Rng } from "./seeded.js";

/** JSON values of the shapes a step may return. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** How a message for a wait is sent: before the task starts, `delayMs` after the wait parked, or never. */
export type Send = { at: "before" } | { at: "after"; delayMs: number } | { at: "never" };

export type ChildOutcome = "succeed" | "fail" | "cancel";

/** A spawned child: `steps` step values it records, some failing once, then an outcome. */
export interface ChildSpec {
  readonly tag: string;
  readonly steps: readonly { readonly value: Json; readonly failOnce: boolean }[];
  readonly outcome: ChildOutcome;
}

/** A step: its name, the value its body returns, whether its first run throws. */
export interface StepSpec {
  readonly name: string;
  readonly value: Json;
  readonly failOnce: boolean;
}

export type Op =
  | ({ readonly kind: "step" } & StepSpec)
  | { readonly kind: "parallel"; readonly steps: readonly StepSpec[] }
  | { readonly kind: "sleep"; readonly name: string; readonly ms: number }
  | { readonly kind: "wait"; readonly name: string; readonly timeoutMs: number | null; readonly send: Send; readonly payload: Json }
  | { readonly kind: "spawn"; readonly name: string; readonly child: ChildSpec }
  | { readonly kind: "join"; readonly name: string; readonly of: readonly number[] };

/**
 * An interruption of the `visit`-th run (1-based) that reaches op `op`: before the op runs (`throw`, `crash`,
 * `pause`) or inside its (first) step body after the body's side effect (`crash-in-step`).
 */
export interface Interruption {
  readonly kind: "crash" | "pause" | "throw" | "crash-in-step";
  readonly op: number;
  readonly visit: number;
}

export interface Program {
  readonly seed: number;
  readonly ops: readonly Op[];
  readonly interruptions: readonly Interruption[];
}

/** What the generator may produce: the real-time backends leave out sends whose outcome hinges on a few milliseconds. */
export interface GenerateOptions {
  /** The longest sleep, in ms. */
  readonly maxSleepMs: number;
  /** Wait timeouts and send delays are drawn as multiples of this. */
  readonly timeUnitMs: number;
  /** Whether a send may come after a timeout, or near one. */
  readonly racySends: boolean;
}

export { Rng };

const NAMES = ["a", "b", "c"];

function json(rng: Rng, depth = 0): Json {
  switch (rng.int(0, depth > 1 ? 4 : 6)) {
    case 0:
      return null;
    case 1:
      return rng.chance(0.5);
    case 2:
      return rng.chance(0.5) ? rng.int(-1000, 1000) : rng.int(0, 1_000_000) / 8;
    case 3:
      return rng.pick(["", "x", "héllo wörld", 'quote " and \\ back', "emoji 🎲", "line\nbreak"]);
    case 4:
      return rng.int(-5, 5);
    case 5:
      return Array.from({ length: rng.int(0, 3) }, () => json(rng, depth + 1));
    default: {
      const out: { [key: string]: Json } = {};
      for (let i = rng.int(0, 3); i > 0; i--) out[rng.pick(["k", "v", "nested", "ümlaut", "0"])] = json(rng, depth + 1);
      return out;
    }
  }
}

function child(rng: Rng, tag: string): ChildSpec {
  const steps = Array.from({ length: rng.int(0, 2) }, () => ({ value: json(rng), failOnce: rng.chance(0.25) }));
  return { tag, steps, outcome: rng.pick<ChildOutcome>(["succeed", "succeed", "fail", "cancel"]) };
}

function send(rng: Rng, timeoutMs: number | null, options: GenerateOptions): Send {
  const unit = options.timeUnitMs;
  if (timeoutMs === null) return rng.chance(0.4) ? { at: "before" } : { at: "after", delayMs: rng.int(0, 6) * unit };
  const roll = rng.int(0, 3);
  if (roll === 0) return { at: "before" };
  if (roll === 1) return { at: "never" };
  // Within the timeout (a unit clear of it on the real-time backends), or after it.
  if (roll === 2 || !options.racySends) return { at: "after", delayMs: rng.int(0, Math.max(0, timeoutMs / unit - (options.racySends ? 1 : 3))) * unit + (options.racySends ? rng.int(0, unit - 1) : 0) };
  return { at: "after", delayMs: timeoutMs + 1 + rng.int(0, 3) * unit };
}

/** A random program of 1–`maxOps` ops and 0–2 interruptions. */
export function generateProgram(seed: number, options: GenerateOptions, maxOps = 9): Program {
  const rng = new Rng(seed);
  const ops: Op[] = [];
  const spawns: number[] = [];
  let waits = 0;
  for (let i = rng.int(1, maxOps); i > 0; i--) {
    const roll = rng.int(0, 9);
    if (roll <= 2) ops.push({ kind: "step", name: rng.pick(NAMES), value: json(rng), failOnce: rng.chance(0.2) });
    else if (roll === 3) {
      // Distinct names: two steps of one name at once are refused.
      const names = NAMES.filter(() => rng.chance(0.7));
      ops.push({ kind: "parallel", steps: names.map((name) => ({ name, value: json(rng), failOnce: rng.chance(0.2) })) });
    }
    else if (roll === 4) ops.push({ kind: "sleep", name: rng.pick(NAMES), ms: rng.chance(0.2) ? 0 : rng.int(1, options.maxSleepMs) });
    else if (roll <= 6) {
      const timeoutMs = rng.chance(0.35) ? null : rng.int(2, 8) * options.timeUnitMs;
      ops.push({ kind: "wait", name: `m${waits++}`, timeoutMs, send: send(rng, timeoutMs, options), payload: json(rng) });
    } else if (roll <= 8) {
      spawns.push(ops.length);
      ops.push({ kind: "spawn", name: rng.pick(NAMES), child: child(rng, `child${spawns.length}`) });
    } else {
      const of = spawns.filter(() => rng.chance(0.7));
      ops.push({ kind: "join", name: rng.pick(NAMES), of: rng.chance(0.5) ? of : [...of].reverse() });
    }
  }
  // Every child is joined at the end, so the parent's result shows each one's terminal state.
  if (spawns.length > 0) ops.push({ kind: "join", name: "all", of: spawns });
  const interruptions: Interruption[] = [];
  for (let i = rng.int(0, 2); i > 0; i--) {
    const op = rng.int(0, ops.length - 1);
    const target = ops[op];
    const inStep = (target?.kind === "step" || (target?.kind === "parallel" && target.steps.length > 0)) && rng.chance(0.4);
    const kind = inStep ? "crash-in-step" : rng.pick(["crash", "crash", "pause", "throw"] as const);
    if (!interruptions.some((it) => it.op === op && it.kind === kind)) interruptions.push({ kind, op, visit: rng.int(1, 2) });
  }
  return { seed, ops, interruptions };
}

/** What a join returns for each child, as the handler reports it: its status and its result or error message. */
export function childSummary(spec: ChildSpec): [string, Json] {
  if (spec.outcome === "succeed") return ["succeeded", { tag: spec.tag, values: spec.steps.map((s) => s.value) }];
  if (spec.outcome === "fail") return ["failed", `${spec.tag} fails`];
  return ["canceled", null];
}

/**
 * What the handler returns when nothing interrupts it, one entry per op: a
 * step's value (a parallel group's values, in order), `slept <ms>`, a
 * wait's payload (`null` after a timeout), `spawned <tag>`, and a join's
 * child summaries in the order given.
 */
export function expectedResult(program: Program): Json[] {
  return program.ops.map((op): Json => {
    switch (op.kind) {
      case "step":
        return op.value;
      case "parallel":
        return op.steps.map((s) => s.value);
      case "sleep":
        return `slept ${op.ms}`;
      case "wait":
        return op.send.at === "before" || (op.send.at === "after" && (op.timeoutMs === null || op.send.delayMs < op.timeoutMs)) ? op.payload : null;
      case "spawn":
        return `spawned ${op.child.tag}`;
      case "join":
        return op.of.map((i) => childSummary((program.ops[i] as Extract<Op, { kind: "spawn" }>).child));
    }
  });
}

/** A program as a reader reproduces it: one op a line, then the interruptions. */
export function describeProgram(program: Program): string {
  const lines = program.ops.map((op, i) => `  ${i}: ${JSON.stringify(op)}`);
  for (const it of program.interruptions) lines.push(`  ${it.kind} at op ${it.op}, visit ${it.visit}`);
  return `seed ${program.seed}:\n${lines.join("\n")}`;
}

/**
 * The seeds a randomized test runs: `fixed`, then `CAIRNQ_FUZZ_SEEDS` more
 * (default 0) from `CAIRNQ_FUZZ_FROM` (default: drawn from the time, and
 * printed so that a failure can be run again).
 */
export function fuzzSeeds(fixed: readonly number[], env: NodeJS.ProcessEnv = process.env): number[] {
  const n = Number(env.CAIRNQ_FUZZ_SEEDS ?? 0);
  if (!Number.isInteger(n) || n <= 0) return [...fixed];
  const from = env.CAIRNQ_FUZZ_FROM === undefined ? Date.now() % 1_000_000_000 : Number(env.CAIRNQ_FUZZ_FROM);
  if (!Number.isInteger(from)) throw new Error(`CAIRNQ_FUZZ_FROM must be an integer seed, got ${env.CAIRNQ_FUZZ_FROM}`);
  console.log(`randomized test: ${n} more seeds from ${from} (CAIRNQ_FUZZ_FROM=${from})`);
  return [...fixed, ...Array.from({ length: n }, (_, i) => from + i)];
}
