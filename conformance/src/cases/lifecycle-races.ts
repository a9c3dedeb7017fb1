/**
 * Races of the randomized lifecycle walk (`lifecycle-random.ts`): two
 * operations on one task sent at once — a cancel against its worker's
 * complete, fail or heartbeat, two settlements of one attempt, a retry
 * against a cancel or a purge. Every transition is atomic (§5.0), so the
 * answers and the rows after must be those of one of the two orders the
 * rules give when the operations run one after the other.
 */
import type { Task } from "@cairnq/protocol";
import { AlreadyExists, LostLease } from "@cairnq/protocol";
import type { Params, RowTransition } from "@cairnq/protocol/adapter";
import { applyBranches, CANCEL, COMPLETE, completeParams, decideRow, DRAW, FAIL, failParams, HEARTBEAT, heartbeatParams, PURGE, purgeParams, RETRY, retryParams, selectRows } from "@cairnq/protocol/adapter";
import type { Entry, Window } from "./lifecycle-model.js";
import { decoded, rowDiff, SLACK_MS, timed } from "./lifecycle-model.js";
import type { Walk } from "./lifecycle-random.js";
import * as op from "./lifecycle-ops.js";

/** The model's rows at the window's two ends, as one order of the race leaves them. */
interface States {
  readonly lo: Map<string, Task>;
  readonly hi: Map<string, Task>;
}

interface Answer {
  readonly value?: unknown;
  readonly error?: unknown;
}

/** One side of a race: its call, and what it does to the rows in a given order (with a check of its answer there). */
interface Racer {
  readonly what: string;
  readonly call: () => Promise<unknown>;
  apply(states: States, window: Window): (answer: Answer) => string | null;
}

function thrown(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

/** A single-row transition as a racer: `decideRow` on the task's row in that order. */
function rowRacer(what: string, id: string, rule: RowTransition, params: Params, call: () => Promise<Task | null>): Racer {
  return {
    what,
    call,
    apply(states, window) {
      const lo = decideRow(rule, states.lo.get(id) ?? null, params, window.lo);
      const hi = decideRow(rule, states.hi.get(id) ?? null, params, window.hi);
      if (lo.kind === "applied" && hi.kind === "applied") {
        states.lo.set(id, lo.row);
        states.hi.set(id, hi.row);
      }
      return ({ value, error }) => {
        if (lo.kind !== hi.kind) return "the outcome depends on the clock";
        if (lo.kind === "applied" && hi.kind === "applied") {
          if (error !== undefined) return `threw ${thrown(error)}, expected branch ${lo.branch}`;
          if (value === null || value === undefined) return `answered null, expected branch ${lo.branch}`;
          return rowDiff(lo.row, hi.row, value as Task);
        }
        if (lo.kind === "lost-lease") return error instanceof LostLease ? null : `expected LostLease, got ${error === undefined ? "a row" : thrown(error)}`;
        if (error !== undefined) return `threw ${thrown(error)}, expected null`;
        return value === null ? null : "answered a row, expected null";
      };
    },
  };
}

/** A purge of the walk's finished tasks of one name (cutoff now): deletes, in that order, what `PURGE` selects. */
function purgeRacer(w: Walk, name: string): Racer {
  const input = { name, olderThanMs: 0, limit: 1000 };
  const params = purgeParams(input);
  return {
    what: `purge ${name.slice(name.lastIndexOf("-") + 1)}`,
    call: () => w.t.store.purge(input),
    apply(states, window) {
      const doomed = selectRows(PURGE.selection, states.lo.values(), params, window.lo).map((row) => row.id);
      for (const id of doomed) {
        states.lo.delete(id);
        states.hi.delete(id);
      }
      return ({ value, error }) => {
        if (error !== undefined) return `threw ${thrown(error)}`;
        const got = [...(value as string[])].sort().join(" ");
        return got === [...doomed].sort().join(" ") ? null : `deleted ${w.model.labels(value as string[])}, expected ${w.model.labels(doomed)}`;
      };
    },
  };
}

/** Sends both racers at once; the answers and the task's row must be those of one of the two orders. */
async function race(w: Walk, a: Racer, b: Racer, touched: readonly string[]): Promise<void> {
  const [ra, rb] = await Promise.all([timed(a.call), timed(b.call)]);
  const window: Window = { lo: Math.min(ra.window.lo, rb.window.lo), hi: Math.max(ra.window.hi, rb.window.hi) };
  const brief = (r: Answer): string =>
    r.error !== undefined ? thrown(r.error).split(":")[0] ?? "error" : Array.isArray(r.value) ? w.model.labels(r.value as string[]) : r.value === null ? "null" : ((r.value as Task).status ?? "?");
  w.log.push(`race ${a.what} -> ${brief(ra)} | ${b.what} -> ${brief(rb)}`);
  if (ra.error instanceof AlreadyExists || rb.error instanceof AlreadyExists) w.fail("a race threw AlreadyExists");
  const problems: string[] = [];
  for (const [first, second, label] of [[a, b, "a then b"], [b, a, "b then a"]] as const) {
    const states: States = { lo: new Map(w.model.rows().map((row) => [row.id, row])), hi: new Map(w.model.rows().map((row) => [row.id, row])) };
    const checkFirst = first.apply(states, window);
    const checkSecond = second.apply(states, window);
    const answers = first === a ? [ra, rb] : [rb, ra];
    const problem = checkFirst(answers[0] as Answer) ?? checkSecond(answers[1] as Answer);
    if (problem !== null) {
      problems.push(`${label}: ${problem}`);
      continue;
    }
    // The answers fit this order: so must the rows.
    for (const id of touched) {
      const row = await w.t.store.get(id);
      const lo = states.lo.get(id);
      const hi = states.hi.get(id);
      const other = w.model.tasks.get(id) as Entry;
      if (lo === undefined || hi === undefined) {
        if (row !== null) w.fail(`race ${a.what} / ${b.what} (${label}): ${other.label} is still there, the order deletes it`);
        w.model.purge(id);
        continue;
      }
      if (row === null) w.fail(`race ${a.what} / ${b.what} (${label}): ${other.label} is gone`);
      const diff = rowDiff(lo, hi, row);
      if (diff !== null) w.fail(`race ${a.what} / ${b.what} (${label}): ${other.label} ${diff}`);
      other.row = row;
    }
    return;
  }
  w.fail(`race ${a.what} / ${b.what} answered as no order of the two does: ${problems.join("; ")}`);
}

/**
 * A burst: operations on distinct tasks (settlements, heartbeats, cancels, retries, some by the wrong worker) and
 * plain submits, all sent at once, as many workers settling together do (a store may combine such writes into one
 * statement). Distinct tasks do not interact, so each answer is checked as if it ran alone.
 */
export async function burst(w: Walk): Promise<void> {
  const { rng } = w;
  const entries = [...w.model.tasks.values()].filter(() => rng.chance(0.3)).slice(0, rng.int(2, 8));
  const calls: Promise<void>[] = [];
  for (const entry of entries) {
    const roll = rng.next();
    if (entry.row.status === "running") {
      if (roll < 0.35) calls.push(op.complete(w, entry));
      else if (roll < 0.6) calls.push(op.fail(w, entry));
      else if (roll < 0.8) calls.push(op.heartbeatTask(w, entry));
      else calls.push(op.cancelTask(w, entry));
    } else if (entry.row.status === "queued") {
      if (roll < 0.5) calls.push(op.cancelTask(w, entry));
    } else if (roll < 0.6) {
      calls.push(op.retryTask(w, entry, rng.chance(0.3)));
    }
  }
  for (let i = rng.int(0, 3); i > 0; i--) {
    calls.push(op.submit(w, { name: rng.pick(w.names), queue: rng.pick(w.queues), priority: rng.pick([0, 1]), maxAttempts: rng.pick([1, 3]), delayMs: 0, key: null }));
  }
  w.log.push(`burst of ${calls.length}:`);
  await Promise.all(calls);
}

/** A race on one task, chosen by the seed. */
export async function raceOne(w: Walk): Promise<void> {
  const { rng, t, model } = w;
  const finished = model.of("failed").concat(model.of("canceled"));
  if (finished.length > 0 && rng.chance(0.3)) {
    // A retry against a cancel, or against a purge of its name.
    const entry = rng.pick(finished);
    const id = entry.row.id;
    const retry = rowRacer(`retry ${entry.label}`, id, RETRY, retryParams(id), () => t.store.retry(id));
    if (rng.chance(0.5)) {
      await race(w, retry, rowRacer(`cancel ${entry.label}`, id, CANCEL, { taskId: id }, () => t.store.cancel(id)), [id]);
      return;
    }
    // Every finished task of the name is past the purge's cutoff before it runs.
    const latest = Math.max(...model.rows().map((row) => row.completed_at_ms ?? 0));
    if (latest + 2 * SLACK_MS >= Date.now()) await t.sleep(latest + 2 * SLACK_MS + 1 - Date.now());
    const doomed = model.rows().filter((row) => row.name === entry.row.name && row.completed_at_ms !== null).map((row) => row.id);
    await race(w, retry, purgeRacer(w, entry.row.name), doomed);
    return;
  }
  const running = model.of("running").filter((e) => e.row.lease_until_ms !== null && e.row.lease_until_ms > Date.now() + 1000);
  if (running.length === 0) return;
  const entry = rng.pick(running);
  const id = entry.row.id;
  const workerId = entry.row.worker_id as string;
  const settle = (): Racer => {
    const roll = rng.next();
    if (roll < 0.4) {
      const input = { taskId: id, workerId, result: { raced: entry.label } };
      return rowRacer(`complete ${entry.label}`, id, COMPLETE, decoded(completeParams(input)), () => t.store.complete(input));
    }
    if (roll < 0.8) {
      const input = { taskId: id, workerId, error: { raced: entry.label }, retryable: rng.chance(0.7) };
      return rowRacer(`fail ${entry.label}${input.retryable ? "" : " final"}`, id, FAIL, decoded(failParams(input)), () => t.store.fail(input));
    }
    const input = { taskId: id, workerId, leaseMs: 120_000 };
    return rowRacer(`heartbeat ${entry.label}`, id, HEARTBEAT, heartbeatParams(input), () => t.store.heartbeat(input));
  };
  const other = rng.chance(0.7) ? rowRacer(`cancel ${entry.label}`, id, CANCEL, { taskId: id }, () => t.store.cancel(id)) : settle();
  await race(w, settle(), other, [id]);
}

/**
 * Two claims at once over the same queues and names, by two workers, while nothing is near its due time or its
 * lease's end. Concurrent claims never take the same row (§13), each takes only due tasks of its filters, within its
 * limit, and from the top of the claim order: a due task ranked above the last one a claim took, or any due task when
 * it took fewer than its limit, went to the other claim (a claim skips only rows the other takes, as the hand-written
 * `claim-concurrent-leave-nothing-due` checks). The rows taken are checked as `DRAW` leases them.
 */
export async function claimPair(w: Walk): Promise<void> {
  const { rng, t, model } = w;
  const queues = rng.chance(0.5) ? w.queues : [rng.pick(w.queues)];
  const names = rng.chance(0.5) ? null : [rng.pick(w.names)];
  // Often a backlog first, so the two claims contend.
  for (let i = rng.chance(0.6) ? rng.int(2, 6) : 0; i > 0; i--) {
    await op.submit(w, { name: names?.[0] ?? rng.pick(w.names), queue: rng.pick(queues), priority: rng.pick([0, 0, 1]), maxAttempts: 3, delayMs: 0, key: null });
  }
  // Tasks submitted a moment ago: surely due once the store's clock (within the slack of ours) has passed them too.
  const recent = Math.max(0, ...model.of("queued").map((e) => e.row.run_at_ms).filter((at) => at <= Date.now()));
  if (recent > Date.now() - 2 * SLACK_MS) await t.sleep(recent + 2 * SLACK_MS + 1 - Date.now());
  const now = Date.now();
  const rows = model.rows();
  if (rows.some((row) => (row.status === "queued" && row.run_at_ms > now - 2 * SLACK_MS && row.run_at_ms < now + 300) || (row.status === "running" && (row.lease_until_ms as number) < now + 1000))) return;
  const [wa, wb] = [t.w1, t.w2];
  const [la, lb] = [rng.int(1, 4), rng.int(1, 4)];
  const params = (workerId: string, limit: number) => ({ queues, names, limit, workerId, leaseMs: 120_000 });
  const candidates = selectRows(DRAW.selection, rows, { ...params(wa, 0), limit: null }, now).map((row) => row.id);
  const claimOf = (workerId: string, limit: number) => timed(() => t.store.claim({ queues, names, limit, workerId, leaseMs: 120_000 }));
  const [ra, rb] = await Promise.all([claimOf(wa, la), claimOf(wb, lb)]);
  const what = `claims at once [${queues.map((q) => q.slice(q.lastIndexOf("-") + 1)).join(",")}] names ${names === null ? "*" : names.map((n) => n.slice(n.lastIndexOf("-") + 1)).join(",")} limits ${la}/${lb}`;
  if (ra.error !== undefined || rb.error !== undefined) return w.fail(`${what} threw ${thrown(ra.error ?? rb.error)}`);
  const a = (ra.value as Task[]).map((row) => row.id);
  const b = (rb.value as Task[]).map((row) => row.id);
  w.log.push(`${what} -> w1 ${model.labels(a)} w2 ${model.labels(b)}`);
  for (const [mine, theirs, limit, who] of [[a, b, la, "w1"], [b, a, lb, "w2"]] as const) {
    if (mine.length > limit) w.fail(`${what}: ${who} took ${mine.length}, above its limit`);
    for (const id of mine) {
      if (!candidates.includes(id)) w.fail(`${what}: ${who} took ${model.label(id)}, not a due task of the claim`);
      if (theirs.includes(id)) w.fail(`${what}: both claims took ${model.label(id)}`);
    }
    const last = Math.max(-1, ...mine.map((id) => candidates.indexOf(id)));
    const skipped = candidates.filter((id, i) => !mine.includes(id) && (i < last || mine.length < limit) && !theirs.includes(id));
    if (skipped.length > 0) w.fail(`${what}: ${who} took ${model.labels(mine)} and left ${model.labels(skipped)}, which go first, to nobody (claim order ${model.labels(candidates)})`);
  }
  for (const [values, workerId, limit, window] of [[ra.value as Task[], wa, la, ra.window], [rb.value as Task[], wb, lb, rb.window]] as const) {
    for (const row of values) {
      const entry = model.tasks.get(row.id) as Entry;
      const diff = rowDiff(applyBranches(DRAW.branches, entry.row, params(workerId, limit), window.lo).row, applyBranches(DRAW.branches, entry.row, params(workerId, limit), window.hi).row, row);
      if (diff !== null) w.fail(`${what}: ${entry.label} ${diff}`);
      entry.row = row;
    }
  }
}
