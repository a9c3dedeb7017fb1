// The groups figures (task options groupConcurrency / groupRateLimit, submit option group):
// what a group limit costs a drain, and what the group draw costs one claim against a large
// backlog spread over many groups. Every figure is judged against the same work without limits
// measured in the same run, on the same machine.
import { drainThroughput, fill } from "./ours.mjs";
import { median } from "./stats.mjs";
import { newWorkerId, openStore } from "./targets.mjs";

const QUEUE = "default";
const NAME = "noop";

/** The drains of the groups section: `plain` (10 groups, no limit) and one per group count with `groupConcurrency`. */
export const GROUP_DRAINS = [
  // 10 groups × 8 = 80 slots, more than the worker's 64: the limit is in force but does not starve the worker.
  { id: "groups.drain.10", groups: 10, groupConcurrency: 8 },
  // One task or two per group: every claim rotates across many groups.
  { id: "groups.drain.10k", groups: 10_000, groupConcurrency: 2 },
];

/** A c64 drain (claimBatch 64, as the plain c64 row) of tasks spread over `groups` groups, with `taskOptions`. */
export function groupDrain(backend, { n, warmup, groups, taskOptions, cpuProfDir = null, traceSql = false }) {
  return drainThroughput(backend, { n, warmup, concurrency: 64, claimBatch: 64, groups, taskOptions, cpuProfDir, traceSql });
}

/**
 * The median cost of one claim of one task with `backlog` queued tasks spread over `groups`
 * groups: `limited` with `groupConcurrency: 1` (the group draw: running counts, head, a page of groups,
 * their best tasks, the rotation), and `plain` the same claim without limits on the same
 * database (the §5.10 draw), measured after the limited claims. Each timed claim is followed
 * by an untimed complete (as in the plain claim figures).
 */
export async function groupClaimUnderBacklog(backend, { backlog, groups, samples }) {
  const { target, cleanup } = await backend.fresh(`claim-groups-${backlog}-${groups}`);
  try {
    await fill(target, backlog + 2 * (samples + 20), groups);
    const store = openStore(target);
    try {
      await store.connect();
      const workerId = newWorkerId();
      const plainInput = { queues: [QUEUE], workerId, leaseMs: 30_000, names: [NAME], limit: 1 };
      const limitedInput = { ...plainInput, flowControl: { [NAME]: { groupConcurrency: 1 } } };
      const once = async (input) => {
        const started = performance.now();
        const [task] = await store.claim(input);
        const ms = performance.now() - started;
        if (task === undefined) throw new Error("a claim found nothing to claim although the backlog is queued");
        await store.complete({ taskId: task.id, workerId, attempt: task.attempt, result: null });
        return ms;
      };
      // The limited claims first: a plain claim takes a task behind the group draw's back (its group row
      // stays `queued`), which a later group draw would have to step over.
      for (let i = 0; i < 20; i += 1) await once(limitedInput);
      const limited = [];
      for (let i = 0; i < samples; i += 1) limited.push(await once(limitedInput));
      for (let i = 0; i < 20; i += 1) await once(plainInput);
      const plain = [];
      for (let i = 0; i < samples; i += 1) plain.push(await once(plainInput));
      return { limited: median(limited), plain: median(plain) };
    } finally {
      await store.close();
    }
  } finally {
    await cleanup();
  }
}
