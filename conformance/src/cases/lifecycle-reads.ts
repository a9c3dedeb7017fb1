/**
 * The reads of the randomized lifecycle walk (`lifecycle-random.ts`): get,
 * get by key, the status forms, list (both orders, filters, pages), stats and
 * queue depth, each answer compared with the model's rows through the read
 * filters of `@cairnq/protocol` (`LIST_ROWS`, `QUEUE_DEPTH_ROWS`). None of
 * them depends on the clock, so every answer is exact.
 */
import type { ListInput, Task, TaskStatus } from "@cairnq/protocol";
import { STATUSES } from "@cairnq/protocol";
import { holds, LIST_ROWS, normalizeList, QUEUE_DEPTH_ROWS } from "@cairnq/protocol/adapter";
import type { Walk } from "./lifecycle-random.js";
import { same } from "./lifecycle-ops.js";

function short(w: Walk, text: string): string {
  return text.replaceAll(`walk${w.seed}-`, "");
}

/** One read, chosen by the seed. */
export async function read(w: Walk): Promise<void> {
  const { rng, t, model } = w;
  const roll = rng.next();
  if (roll < 0.25) {
    // get / getStatus of a task, or of one the walk purged.
    const purged = [...model.purged];
    if (purged.length > 0 && rng.chance(0.15)) {
      const id = rng.pick(purged);
      const [row, status] = [await t.store.get(id), await t.store.getStatus(id)];
      w.log.push(`get ${id} (purged) -> ${row === null ? "null" : row.status}`);
      if (row !== null || status !== null) w.fail(`get/getStatus of purged ${id} answered a row`);
      return;
    }
    const entry = w.pickEntry();
    if (entry === null) return;
    w.log.push(`get ${entry.label}`);
    same(w, entry, await t.store.get(entry.row.id), `get ${entry.label}`);
    const status = await t.store.getStatus(entry.row.id);
    if (status?.id !== entry.row.id || status.status !== entry.row.status) w.fail(`getStatus ${entry.label} answered ${JSON.stringify(status)}, expected ${entry.row.status}`);
  } else if (roll < 0.4) {
    const key = rng.pick(w.keys);
    const entry = model.byKey(key);
    const [row, status] = [await t.store.getByKey(key), await t.store.getStatusByKey(key)];
    w.log.push(`getByKey ${short(w, key)} -> ${row === null ? "null" : model.label(row.id)}`);
    if (entry === null) {
      if (row !== null || status !== null) w.fail(`getByKey/getStatusByKey ${key} answered ${row?.id ?? status?.id ?? "?"}, the key points nowhere`);
      return;
    }
    same(w, entry, row, `getByKey ${key}`);
    if (status?.id !== entry.row.id || status.status !== entry.row.status) w.fail(`getStatusByKey ${key} answered ${JSON.stringify(status)}, expected ${entry.label} ${entry.row.status}`);
  } else if (roll < 0.7) {
    await list(w);
  } else if (roll < 0.85) {
    const queue = rng.pick(w.queues);
    const stats = await t.store.stats(queue);
    w.log.push(`stats ${short(w, queue)}`);
    const want = Object.fromEntries(STATUSES.map((s) => [s, 0])) as Record<TaskStatus, number>;
    for (const row of model.rows()) if (row.queue === queue) want[row.status] += 1;
    const keys = Object.keys(stats);
    if (keys.length !== 1 || keys[0] !== queue) w.fail(`stats(${queue}) answered queues ${JSON.stringify(keys)}`);
    for (const s of STATUSES) if (stats[queue]?.[s] !== want[s]) w.fail(`stats(${queue}) answered ${JSON.stringify(stats[queue])}, the model counts ${JSON.stringify(want)}`);
  } else {
    const queue = rng.pick(w.queues);
    const maxDepth = rng.int(0, 6);
    const headroom = await t.store.queueDepth(queue, maxDepth);
    const queued = model.rows().filter((row) => holds(QUEUE_DEPTH_ROWS, { row: row as never, params: { queue }, nowMs: 0 })).length;
    w.log.push(`queueDepth ${short(w, queue)} ${maxDepth} -> ${headroom}`);
    if (headroom !== maxDepth - Math.min(maxDepth, queued)) w.fail(`queueDepth(${queue}, ${maxDepth}) answered ${headroom} with ${queued} queued`);
  }
}

/** `list` with this walk's name or queue, maybe a status, a page, in either order. */
async function list(w: Walk): Promise<void> {
  const { rng, t, model } = w;
  const byName = rng.chance(0.5);
  const byId = rng.chance(0.4);
  const ids = [...model.tasks.keys()];
  const input: ListInput = {
    ...(byName ? { name: rng.pick(w.names) } : { queue: rng.pick(w.queues) }),
    ...(rng.chance(0.4) ? { status: rng.pick(STATUSES) } : {}),
    limit: rng.pick([1, 3, 10, 100]),
    ...(byId ? { order: "id" as const, ...(ids.length > 0 && rng.chance(0.5) ? { beforeId: rng.pick(ids) } : {}) } : { offset: rng.pick([0, 0, 1, 3]) }),
  };
  const params = normalizeList(input);
  const rows = await t.store.list(input);
  const what = `list ${short(w, JSON.stringify({ ...input, ...(input.beforeId === undefined ? {} : { beforeId: model.label(input.beforeId) }) }))}`;
  w.log.push(`${what} -> ${model.labels(rows.map((row) => row.id))}`);
  const order = byId
    ? (a: Task, b: Task) => (a.id < b.id ? 1 : -1)
    : (a: Task, b: Task) => b.created_at_ms - a.created_at_ms || (a.id < b.id ? 1 : -1);
  const want = model
    .rows()
    .filter((row) => holds(LIST_ROWS, { row: row as never, params: params as never, nowMs: 0 }))
    .sort(order)
    .slice(params.offset, params.offset + params.limit);
  if (rows.map((row) => row.id).join(" ") !== want.map((row) => row.id).join(" ")) {
    w.fail(`${what} answered ${model.labels(rows.map((row) => row.id))}, the model gives ${model.labels(want.map((row) => row.id))}`);
  }
  for (const row of rows) same(w, model.tasks.get(row.id)!, row, what);
}
