/**
 * The Activity charts in headless Chromium (Debian's, driven by
 * playwright-core), over a real SQLite file holding an hour and a day of
 * history written on an injected clock: throughput (submitted, succeeded,
 * failed) and the due → finished percentiles, for every queue and for one,
 * over the last hour and the last day.
 *
 * Screenshots land in test/artifacts/ (gitignored): activity-hour.png,
 * activity-day-hooks.png, traced-task-detail.png. Also: a traced task's detail
 * shows its trace id, and a task whose metadata a v1 peer stored as any JSON
 * value opens.
 */
import { join } from "node:path";
import { SQLiteStore } from "@cairnq/store-sqlite";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { ARTIFACTS, useChromium } from "../support/browser.js";
import { closeDashboards, serveDashboard } from "../support/serve.js";

const WORKER = "worker_01JB8ZK3M2Q4W5E6R7T8Y9V0XP";
const MINUTE = 60_000;

const { browser: chromiumBrowser, dir } = useChromium("The dashboard's Activity charts test", "cairnq-activity-");

/** Nearest-rank percentile, as the dashboard computes it. */
function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)] as number;
}

function formatMs(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
  return `${(ms / 60_000).toFixed(1)} min`;
}

describe("the Activity charts", () => {
  it("chart throughput and due → finished percentiles per queue, over the last hour and day", async () => {
    const file = join(dir, "cairnq.db");
    let clock = Date.now();
    const store = new SQLiteStore(file, { clock: () => clock });
    const hour = { submitted: 0, succeeded: 0, failed: 0, durations: [] as number[] };
    const hooks = { submitted: 0, succeeded: 0, failed: 0 };
    const day = { hooks: { submitted: 0, failed: 0 } };
    try {
      // 20 hours of history, one batch every 20 minutes; the last hour every minute.
      const starts = [
        ...Array.from({ length: 57 }, (_, i) => Date.now() - (20 * 60 - i * 20) * MINUTE),
        ...Array.from({ length: 55 }, (_, i) => Date.now() - (57 - i) * MINUTE),
      ];
      for (const [n, start] of starts.entries()) {
        const inHour = start > Date.now() - 58 * MINUTE;
        const images = 2 + (n % 4);
        const hookCount = n % 5 === 0 ? 2 : 0;
        clock = start;
        for (let i = 0; i < images; i++) await store.submit({ name: "thumbnail", queue: "images", maxAttempts: 1 });
        for (let i = 0; i < hookCount; i++) await store.submit({ name: "webhook", queue: "hooks", maxAttempts: 1 });
        // Waits from 0.2 to 2.5 s, then runs of 0.3 to 4 s: due → finished from 0.5 to 6.5 s.
        clock = start + 200 + (n % 12) * 200;
        const claimed = await store.claim({ queues: ["images", "hooks"], workerId: WORKER, limit: 50, leaseMs: 48 * 3_600_000 });
        for (const [k, task] of claimed.entries()) {
          clock = start + 200 + (n % 12) * 200 + 300 + ((n + k) % 8) * 500;
          if (task.queue === "images") await store.complete({ taskId: task.id, workerId: WORKER, result: { ok: true } });
          else await store.fail({ taskId: task.id, workerId: WORKER, error: { type: "TaskError", code: "http_502", message: "bad gateway", retryable: false, details: {} }, retryable: false });
          const finished = (await store.get(task.id))!;
          if (inHour) {
            hour.submitted += 1;
            hour[task.queue === "images" ? "succeeded" : "failed"] += 1;
            hour.durations.push((finished.completed_at_ms as number) - finished.run_at_ms);
            if (task.queue === "hooks") {
              hooks.submitted += 1;
              hooks.failed += 1;
            }
          }
          if (task.queue === "hooks") {
            day.hooks.submitted += 1;
            day.hooks.failed += 1;
          }
        }
      }
      // Two tasks still waiting in the last minute: submitted, not finished.
      clock = Date.now();
      await store.submit({ name: "thumbnail", queue: "images" });
      await store.submit({ name: "thumbnail", queue: "images" });
      hour.submitted += 2;
    } finally {
      await store.close();
    }

    const reader = new SQLiteStore(file);
    const base = await serveDashboard({ store: reader });
    const page = await chromiumBrowser().newPage({ viewport: { width: 1440, height: 1000 } });
    try {
      await page.goto(`${base}/`);
      const legend = page.locator("#activity-legend");
      await legend.filter({ hasText: `${hour.submitted} submitted · ${hour.succeeded} succeeded · ${hour.failed} failed` }).waitFor({ timeout: 20_000 });
      const latency = page.locator("#latency-legend");
      const expected = `p50 ${formatMs(percentile(hour.durations, 0.5))} · p95 ${formatMs(percentile(hour.durations, 0.95))} · p99 ${formatMs(percentile(hour.durations, 0.99))}`;
      await latency.filter({ hasText: expected }).waitFor({ timeout: 10_000 });
      await expect(latency.textContent()).resolves.toContain(`over ${hour.durations.length} finished`);
      // One bar group per minute: bars for succeeded, a line for submitted, three percentile lines.
      await expect(page.locator("#activity-throughput svg rect.ok").count()).resolves.toBeGreaterThan(40);
      await expect(page.locator("#activity-throughput svg polyline.submitted").count()).resolves.toBe(1);
      await expect(page.locator("#activity-latency svg polyline.p50").count()).resolves.toBeGreaterThan(0);
      await page.locator("#activity").screenshot({ path: join(ARTIFACTS, "activity-hour.png") });

      // One queue, the last day.
      await page.locator("#activity-queue").selectOption("hooks");
      await legend.filter({ hasText: `${hooks.submitted} submitted · 0 succeeded · ${hooks.failed} failed` }).waitFor({ timeout: 10_000 });
      await page.locator("#activity-range").selectOption("day");
      await legend.filter({ hasText: `${day.hooks.submitted} submitted · 0 succeeded · ${day.hooks.failed} failed` }).waitFor({ timeout: 10_000 });
      await page.locator("#activity-unit").filter({ hasText: "half hour" }).waitFor();
      await expect(page.locator("#activity-throughput svg rect.ok").count()).resolves.toBe(0);
      await expect(page.locator("#activity-throughput svg rect.bad").count()).resolves.toBeGreaterThan(5);
      await page.locator("#activity").screenshot({ path: join(ARTIFACTS, "activity-day-hooks.png") });
    } finally {
      await page.close();
      await reader.close();
    }
  }, 120_000);

  it("shows a traced task's trace id in its detail, and its metadata without the stored trace context", async () => {
    const store = new SQLiteStore(join(dir, "traced.db"));
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const task = await store.submit({ name: "traced", queue: "tracing", metadata: { tenant: "acme", "cairnq.trace": { traceparent: `00-${traceId}-00f067aa0ba902b7-01` } } });
    const plain = await store.submit({ name: "plain", queue: "tracing", metadata: { tenant: "globex" } });
    const base = await serveDashboard({ store });
    const page = await chromiumBrowser().newPage({ viewport: { width: 1440, height: 900 } });
    try {
      await page.goto(`${base}/#${task.id}`);
      const detail = page.locator("#detail");
      await detail.getByTestId("trace-id").filter({ hasText: traceId }).waitFor({ timeout: 10_000 });
      await expect(detail.getByTestId("metadata").textContent()).resolves.toContain('"tenant": "acme"');
      await expect(detail.getByTestId("metadata").textContent()).resolves.not.toContain("cairnq.trace");
      await page.locator("#detail").screenshot({ path: join(ARTIFACTS, "traced-task-detail.png") });
      // The hash names the task opened when the page loads.
      await page.goto(`${base}/#${plain.id}`);
      await page.reload();
      await detail.getByTestId("metadata").filter({ hasText: "globex" }).waitFor({ timeout: 10_000 });
      await expect(detail.getByTestId("trace-id").count()).resolves.toBe(0);
    } finally {
      await page.close();
      await closeDashboards();
      await store.close();
    }
  });

  it("opens a task whose metadata a v1 peer stored as JSON null, an array or a string, showing it as stored", async () => {
    const file = join(dir, "peer-metadata.db");
    const store = new SQLiteStore(file);
    const tasks = [
      { metadata: "null", shown: "null" },
      { metadata: '["a",1]', shown: '"a"' },
      { metadata: '"note"', shown: '"note"' },
    ];
    const ids: string[] = [];
    for (const _ of tasks) ids.push((await store.submit({ name: "peer", queue: "peer", payload: { n: ids.length } })).id);
    // What a protocol v1 peer may write: the metadata column holds any JSON, not only an object.
    const raw = new Database(file);
    try {
      tasks.forEach((t, i) => raw.prepare("UPDATE cairnq_tasks SET metadata = ? WHERE id = ?").run(t.metadata, ids[i]));
    } finally {
      raw.close();
    }
    const base = await serveDashboard({ store });
    const page = await chromiumBrowser().newPage({ viewport: { width: 1440, height: 900 } });
    const errors: string[] = [];
    page.on("pageerror", (err) => errors.push(err.message));
    try {
      for (const [i, t] of tasks.entries()) {
        await page.goto(`${base}/#${ids[i]}`);
        await page.reload();
        const detail = page.locator("#detail");
        await detail.getByTestId("payload").filter({ hasText: `"n": ${i}` }).waitFor({ timeout: 10_000 });
        await expect(detail.getByTestId("metadata").textContent()).resolves.toContain(t.shown);
      }
      expect(errors).toEqual([]);
    } finally {
      await page.close();
      await closeDashboards();
      await store.close();
    }
  });

  it("refuses an unknown range with 400 and what to write", async () => {
    const reader = new SQLiteStore(join(dir, "cairnq.db"));
    try {
      const base = await serveDashboard({ store: reader });
      const res = await fetch(`${base}/api/activity?range=week`);
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ error: 'range must be "hour" or "day", got "week"' });
    } finally {
      await closeDashboards();
      await reader.close();
    }
  });
});
