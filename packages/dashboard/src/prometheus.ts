/**
 * The Prometheus text a scrape reads — `GET <mount>/metrics` and
 * `cairnq metrics` — without OpenTelemetry: what the database says about its
 * queues, read in one aggregate statement and cached.
 *
 * Metrics:
 * - `cairnq_tasks{queue,status}` — rows by queue and status (every status
 *   of a queue that has rows, zeros included).
 * - `cairnq_oldest_queued_age_seconds{queue}` — how long the oldest *due*
 *   queued task of the queue has been due (`now − run_at_ms`), 0 when none
 *   is; delayed tasks do not count until their time comes.
 * - `cairnq_metrics_read_seconds` — how long the aggregate read took, so its
 *   cost on a large table is visible where it is paid.
 *
 * The exposition format is prom-client's (loaded on the first scrape, so a
 * dashboard nobody scrapes never loads it).
 */
import type { QueueHealth, QueueHealthGroup, QueueHealthTaskStore, TaskStore } from "@cairnq/protocol";
import { STATUSES } from "@cairnq/protocol";

/** How long one read serves scrapes. @default 5000 */
export const DEFAULT_METRICS_CACHE_MS = 5000;

/** A rendered scrape: the text and its `Content-Type`. */
export interface PrometheusScrape {
  readonly contentType: string;
  readonly text: string;
}

/**
 * Reads the queues' health (one aggregate statement where the store has
 * `capabilities.queueHealth`; otherwise `stats()`, without ages) and renders
 * it as Prometheus text.
 *
 * @example
 * ```ts
 * const { contentType, text } = await prometheusText(store);
 * ```
 */
export async function prometheusText(store: TaskStore): Promise<PrometheusScrape> {
  const started = performance.now();
  const health = await readHealth(store);
  return render(health, (performance.now() - started) / 1000);
}

/**
 * {@link prometheusText} behind a cache: a read serves every scrape for
 * `cacheMs`, and concurrent scrapes share one read.
 */
export function cachedPrometheusText(store: TaskStore, cacheMs: number = DEFAULT_METRICS_CACHE_MS): () => Promise<PrometheusScrape> {
  let cache: { atMs: number; value: Promise<PrometheusScrape> } | null = null;
  return () => {
    const now = performance.now();
    if (cache === null || now - cache.atMs >= cacheMs) {
      const entry = { atMs: now, value: prometheusText(store) };
      cache = entry;
      // A failed read is not cached: the next scrape tries again.
      entry.value.catch(() => {
        if (cache === entry) cache = null;
      });
    }
    return cache.value;
  };
}

async function readHealth(store: TaskStore): Promise<QueueHealth & { ages: boolean }> {
  if (store.capabilities.queueHealth === true) return { ...(await (store as QueueHealthTaskStore).queueHealth()), ages: true };
  const stats = await store.stats();
  const groups: QueueHealthGroup[] = [];
  for (const [queue, counts] of Object.entries(stats)) for (const status of STATUSES) groups.push({ queue, status, count: counts[status], oldestDueAtMs: null });
  return { nowMs: Date.now(), groups, ages: false };
}

async function render(health: QueueHealth & { ages: boolean }, readSeconds: number): Promise<PrometheusScrape> {
  const { Gauge, Registry } = await import("prom-client");
  const registry = new Registry();
  const tasks = new Gauge({ name: "cairnq_tasks", help: "Tasks by queue and status.", labelNames: ["queue", "status"] as const, registers: [registry] });
  const oldest = new Gauge({
    name: "cairnq_oldest_queued_age_seconds",
    help: "Seconds since the oldest due queued task of the queue became due (0 when none is due).",
    labelNames: ["queue"] as const,
    registers: [registry],
  });
  const read = new Gauge({ name: "cairnq_metrics_read_seconds", help: "Seconds the aggregate read behind this scrape took.", registers: [registry] });
  const queues = new Map<string, number | null>();
  for (const group of health.groups) {
    if (!queues.has(group.queue)) {
      queues.set(group.queue, null);
      for (const status of STATUSES) tasks.set({ queue: group.queue, status }, 0);
    }
    tasks.set({ queue: group.queue, status: group.status }, group.count);
    if (group.oldestDueAtMs !== null) {
      const known = queues.get(group.queue) ?? null;
      queues.set(group.queue, known === null ? group.oldestDueAtMs : Math.min(known, group.oldestDueAtMs));
    }
  }
  if (health.ages) {
    for (const [queue, oldestDueAtMs] of queues) oldest.set({ queue }, oldestDueAtMs === null ? 0 : Math.max(0, health.nowMs - oldestDueAtMs) / 1000);
  }
  read.set(readSeconds);
  return { contentType: registry.contentType, text: await registry.metrics() };
}
