/**
 * The dashboard in a real browser: `createDashboard` on a Node HTTP server
 * over a real SQLite file and a real Postgres schema, a real worker running
 * tasks, and headless Chromium (Debian's, driven by playwright-core)
 * clicking through the page: filter, open a task, retry a failed one and see
 * it requeued, cancel a running one and see it end canceled, bulk retry and
 * bulk cancel, a payload of `<script>alert(1)</script>` shown as inert text,
 * and filters by key and correlation id.
 *
 * Screenshots land in test/artifacts/ (gitignored): <backend>-overview.png,
 * <backend>-failed-filter.png, <backend>-running-detail.png,
 * <backend>-xss-detail.png, <backend>-child-detail.png, <backend>-groups.png, and readme-dashboard.png (copied by hand to
 * docs/dashboard.png for the README).
 */
import { mkdtempSync, rmSync } from "node:fs";
import type { Server } from "node:http";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createDashboard } from "@cairnq/dashboard";
import type { DashboardHandler } from "@cairnq/dashboard";
import type { Task, TaskStepStore, TaskStore } from "@cairnq/protocol";
import { PARK_FOREVER_AT_MS } from "@cairnq/protocol";
import { PostgresStore } from "@cairnq/store-postgres";
import { SQLiteStore } from "@cairnq/store-sqlite";
import { Worker } from "@cairnq/worker";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PgAdmin, randomSchemaName } from "@cairnq/test-support";
import { ARTIFACTS, useChromium } from "../support/browser.js";
import { failTask, pgDsn } from "../support/seed.js";

const XSS_PAYLOAD = { html: "<script>alert(1)</script>", img: '<img src=x onerror="alert(2)">' };
const XSS_NAME = "<img src=x onerror=alert(3)>";

const { browser: chromiumBrowser } = useChromium("The dashboard's browser tests");

interface Backend {
  name: string;
  open(): Promise<TaskStore>;
  dispose(): Promise<void>;
}

/** The file of a SQLite store built by {@link sqlite}. */
const files = new WeakMap<TaskStore, string>();
function sqliteFile(store: TaskStore): string {
  const file = files.get(store);
  if (file === undefined) throw new Error("not a SQLite store of this test");
  return file;
}

function sqlite(): Backend {
  const dir = mkdtempSync(join(tmpdir(), "cairnq-dashboard-"));
  return {
    name: "sqlite",
    open: async () => {
      const store = new SQLiteStore(join(dir, "cairnq.db"));
      files.set(store, join(dir, "cairnq.db"));
      return store;
    },
    dispose: async () => rmSync(dir, { recursive: true, force: true }),
  };
}

function postgres(): Backend {
  const schema = randomSchemaName("cairnq_dash");
  return {
    name: "postgres",
    open: async () => new PostgresStore(pgDsn(), { schema }),
    async dispose() {
      const admin = new PgAdmin();
      try {
        await admin.dropSchema(schema);
      } finally {
        await admin.close();
      }
    },
  };
}

async function waitForStatus(store: TaskStore, id: string, status: Task["status"], timeoutMs = 15_000): Promise<Task> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const task = await store.get(id);
    if (task?.status === status) return task;
    if (Date.now() > deadline) throw new Error(`task ${id} is ${task?.status ?? "missing"}, not ${status}, after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function filter(page: Page, values: { status?: string; queue?: string; name?: string; key?: string; correlationId?: string }): Promise<void> {
  await page.getByRole("button", { name: "Clear" }).click();
  if (values.status !== undefined) await page.locator("#filter-status").selectOption(values.status);
  if (values.queue !== undefined) await page.locator("#filter-queue").fill(values.queue);
  if (values.name !== undefined) await page.locator("#filter-name").fill(values.name);
  if (values.key !== undefined) await page.locator("#filter-key").fill(values.key);
  if (values.correlationId !== undefined) await page.locator("#filter-correlation").fill(values.correlationId);
  await page.getByRole("button", { name: "Filter", exact: true }).click();
  // The list shows only rows of the filter in force: wait for its first answer.
  await page.locator("#task-table:not([data-loading])").waitFor();
}

for (const make of [sqlite, postgres]) {
  const backend = make();
  describe(`dashboard in Chromium on ${backend.name}`, () => {
    let store: TaskStore;
    let worker: Worker;
    let running: Promise<void>;
    let dashboard: DashboardHandler;
    let server: Server;
    let url: string;
    let page: Page;
    const dialogs: string[] = [];
    const handled: string[] = [];
    let closing = false;

    beforeAll(async () => {
      store = await backend.open();
      worker = new Worker(store, { queues: ["work"], leaseMs: 1500, heartbeatIntervalMs: 150, pollIntervalMs: 50, onError: () => {} });
      worker.task("slow", async (ctx) => {
        // Until canceled (the flag arrives with a heartbeat), for 20 s at most.
        for (let step = 1; step <= 200 && !closing && !ctx.signal.aborted && !(await ctx.canceled()); step++) {
          await ctx.progress(Math.min(0.95, step / 100), `step ${step}`);
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        handled.push(ctx.taskId);
        return { steps: "done" };
      });
      running = worker.run();
      dashboard = createDashboard({ store, pollIntervalMs: 300 });
      server = createServer((req, res) => dashboard(req, res));
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
      const context = await chromiumBrowser().newContext({ viewport: { width: 1440, height: 1000 } });
      page = await context.newPage();
      page.on("dialog", (dialog) => {
        dialogs.push(dialog.message());
        void dialog.dismiss();
      });
    }, 60_000);

    afterAll(async () => {
      await page?.context().close();
      await dashboard?.close();
      server?.closeAllConnections();
      await new Promise((resolve) => server?.close(resolve));
      closing = true;
      await worker?.stop();
      await running;
      await store?.close();
      await backend.dispose();
    });

    it("shows queues with counts, filters the list, and retries a failed task until it is queued again", async () => {
      const charge = await failTask(store, "charge", "billing", { type: "TaskError", code: "card_declined", message: "card declined", retryable: false, details: {} });
      await store.submit({ name: "email", queue: "mail", payload: { to: "a@example.com" } });
      await store.submit({ name: "email", queue: "mail", payload: { to: "later@example.com" }, runAtDelayMs: 600_000 });

      await page.goto(url);
      const billing = page.locator('.queue[data-queue="billing"]');
      await billing.getByTestId("count-failed").filter({ hasText: /^1$/ }).waitFor();
      await expect(page.locator(`.queue[data-queue="mail"]`).getByTestId("count-queued").textContent()).resolves.toBe("2");
      await page.screenshot({ path: join(ARTIFACTS, `${backend.name}-overview.png`), fullPage: true });

      await filter(page, { status: "failed" });
      const rows = page.locator("#task-rows tr");
      await rows.first().waitFor();
      await expect(rows.count()).resolves.toBe(1);
      await expect(rows.first().getByTestId("status").textContent()).resolves.toBe("failed");
      await rows.first().click();
      const detail = page.locator("#detail");
      await expect(detail.getByTestId("detail-id").textContent()).resolves.toBe(charge.id);
      await detail.getByTestId("explain").filter({ hasText: 'card_declined: "card declined"' }).waitFor();
      await detail.getByTestId("error").filter({ hasText: '"code": "card_declined"' }).waitFor();
      await page.screenshot({ path: join(ARTIFACTS, `${backend.name}-failed-filter.png`), fullPage: true });

      await detail.getByTestId("retry").click();
      await detail.getByTestId("status").filter({ hasText: "queued" }).waitFor();
      expect((await store.get(charge.id))?.status).toBe("queued");
      expect(page.url()).toBe(`${url}#${charge.id}`); // only the id in the URL
    });

    it("shows a running task's live progress, and cancels it: the worker stops and it ends canceled", async () => {
      const slow = await store.submit({ name: "slow", queue: "work", payload: { size: 3 } });
      await waitForStatus(store, slow.id, "running");
      await filter(page, { queue: "work" });
      await page.locator(`#task-rows tr[data-id="${slow.id}"]`).click();
      const detail = page.locator("#detail");
      await detail.getByTestId("progress-message").filter({ hasText: /^step \d+$/ }).waitFor();
      const first = await detail.getByTestId("progress-message").textContent();
      // Live: the open task re-reads on each tick, so the step moves on by itself.
      await detail.getByTestId("progress-message").filter({ hasNotText: first ?? "" }).waitFor({ timeout: 10_000 });
      await detail.getByTestId("explain").filter({ hasText: "Running under worker" }).waitFor();
      await page.screenshot({ path: join(ARTIFACTS, `${backend.name}-running-detail.png`), fullPage: true });

      await detail.getByTestId("cancel").click();
      await waitForStatus(store, slow.id, "canceled");
      await detail.getByTestId("status").filter({ hasText: "canceled" }).waitFor({ timeout: 10_000 });
      expect(handled).toContain(slow.id);
    });

    it("retries every failed task of a queue in bulk after a confirmation", async () => {
      const a = await failTask(store, "sync", "bulk", { type: "TaskError", code: "x", message: "one", retryable: false, details: {} });
      const b = await failTask(store, "sync", "bulk", { type: "TaskError", code: "x", message: "two", retryable: false, details: {} });
      await filter(page, { status: "failed", queue: "bulk" });
      await page.locator("#task-rows tr").nth(1).waitFor();
      await page.locator("#bulk-action").click();
      // A live refresh while the confirmation is open (a third task fails and appears) must not close it.
      const c = await failTask(store, "sync", "bulk", { type: "TaskError", code: "x", message: "three", retryable: false, details: {} });
      await page.locator(`#task-rows tr[data-id="${c.id}"]`).waitFor();
      await expect(page.locator("#bulk-yes").isVisible()).resolves.toBe(true);
      await page.locator("#bulk-yes").click();
      await page.locator("#toast").filter({ hasText: "Requeued 3 tasks" }).waitFor();
      for (const task of [a, b, c]) expect((await store.get(task.id))?.status).toBe("queued");
    });

    if (backend.name === "sqlite") {
      // SQLite takes an injected clock, so an hour of history can be written in a second.
      it("charts the last hour's completions per minute (and leaves the README's screenshot)", async () => {
        let clock = Date.now() - 59 * 60_000;
        const history = new SQLiteStore(sqliteFile(store), { clock: () => clock });
        let succeeded = 0;
        let failed = 0;
        try {
          for (let minute = 0; minute < 58; minute++) {
            clock = Date.now() - (58 - minute) * 60_000;
            const ok = 2 + Math.round(3 + 3 * Math.sin(minute / 6));
            const bad = minute % 9 === 4 ? 2 : minute % 13 === 7 ? 1 : 0;
            for (let i = 0; i < ok + bad; i++) await history.submit({ name: i < ok ? "thumbnail" : "webhook", queue: i < ok ? "images" : "hooks", maxAttempts: 1 });
            for (const queue of ["images", "hooks"]) {
              // A lease still valid on the real clock: the suite's worker (real clock) recovers expired leases in every
              // queue (§5.10 step 4), and would otherwise fail these rows between this claim and its settlement.
              const claimed = await history.claim({ queues: [queue], workerId: "worker_01JB8ZK3M2Q4W5E6R7T8Y9V0XP", limit: 50, leaseMs: 2 * 3_600_000 });
              for (const t of claimed) {
                if (queue === "images") await history.complete({ taskId: t.id, workerId: t.worker_id ?? "", result: { ok: true } });
                else await history.fail({ taskId: t.id, workerId: t.worker_id ?? "", error: { type: "TaskError", code: "http_502", message: "bad gateway", retryable: false, details: {} }, retryable: false });
              }
              if (queue === "images") succeeded += claimed.length;
              else failed += claimed.length;
            }
          }
        } finally {
          await history.close();
        }
        for (let i = 0; i < 3; i++) await store.submit({ name: "slow", queue: "work", payload: { size: i } });
        await store.submit({ name: "thumbnail", queue: "images", payload: { url: "https://example.com/cat.png" }, runAtDelayMs: 120_000 });
        // Earlier tests' tasks finished within the hour too (those still failed count; retried ones no longer do).
        const otherFailed = (await store.list({ status: "failed", limit: 1000 })).filter((t) => t.queue !== "hooks").length;
        const otherSucceeded = (await store.list({ status: "succeeded", limit: 1000 })).filter((t) => t.queue !== "images").length;
        await page.reload();
        await page.locator("#chart-legend").filter({ hasText: `${succeeded + otherSucceeded} succeeded · ${failed + otherFailed} failed` }).waitFor({ timeout: 20_000 });
        await filter(page, { queue: "work", status: "running" });
        await page.locator("#task-rows tr").first().click();
        await page.locator("#detail").getByTestId("progress-message").waitFor();
        await page.setViewportSize({ width: 1440, height: 900 });
        await page.screenshot({ path: join(ARTIFACTS, "readme-dashboard.png") });
      }, 90_000);
    }

    it("renders a script payload as text: no dialog, no injected element", async () => {
      const xss = await store.submit({ name: XSS_NAME, queue: "xss", payload: XSS_PAYLOAD, metadata: { note: "</pre><script>alert(4)</script>" } });
      await filter(page, { queue: "xss" });
      const row = page.locator(`#task-rows tr[data-id="${xss.id}"]`);
      await row.waitFor();
      await expect(row.locator("td").nth(2).textContent()).resolves.toBe(XSS_NAME);
      await row.click();
      const payload = page.locator("#detail").getByTestId("payload");
      await payload.filter({ hasText: "<script>alert(1)</script>" }).waitFor();
      expect(await payload.textContent()).toContain('"img": "<img src=x onerror=\\"alert(2)\\">"');
      await page.screenshot({ path: join(ARTIFACTS, `${backend.name}-xss-detail.png`), fullPage: true });
      // Nothing the database said became markup: no script or img element outside the page's own.
      await expect(page.locator("body script").count()).resolves.toBe(0);
      await expect(page.locator("main img").count()).resolves.toBe(0);
      await page.waitForTimeout(300);
      expect(dialogs).toEqual([]);
    });

    it("filters by key and by correlation id, which stay out of the URL", async () => {
      const order = await store.submit({ name: "ship", queue: "orders", key: "order-1001", correlationId: "checkout-77" });
      const sibling = await store.submit({ name: "invoice", queue: "orders", correlationId: "checkout-77" });
      await store.submit({ name: "ship", queue: "orders", key: "order-1002", correlationId: "checkout-78" });
      const ids = async (): Promise<string[]> => (await page.locator("#task-rows tr").evaluateAll((trs) => trs.map((tr) => tr.getAttribute("data-id") ?? ""))).sort();

      await filter(page, { key: "order-1001" });
      expect(await ids()).toEqual([order.id]);
      await filter(page, { correlationId: "checkout-77" });
      expect(await ids()).toEqual([order.id, sibling.id].sort());
      await filter(page, { correlationId: "checkout-77", name: "invoice" });
      expect(await ids()).toEqual([sibling.id]);
      expect(page.url()).not.toContain("checkout-77");
      expect(page.url()).not.toContain("order-1001");
    });

    it("shows a parked task's durable-steps timeline and what it waits for", async () => {
      const workerId = "worker_01JB8ZK3M2Q4W5E6R7T8Y9V0XQ";
      const task = await store.submit({ name: "fulfil", queue: "journal" });
      const [claimed] = await store.claim({ queues: ["journal"], workerId, leaseMs: 60_000 });
      const steps = store as TaskStepStore;
      const owned = { taskId: task.id, workerId, attempt: claimed?.attempt ?? 1 };
      await steps.recordStep({ ...owned, name: "charge", kind: "step", status: "done", seq: 1, result: { chargeId: "ch_9" } });
      // No timeout: parked until PARK_FOREVER_AT_MS, as ctx.waitFor without timeoutMs parks.
      await steps.parkStep({ ...owned, name: "approval", kind: "wait", seq: 2, message: "approval", untilMs: PARK_FOREVER_AT_MS });

      await filter(page, { queue: "journal" });
      await page.locator(`#task-rows tr[data-id="${task.id}"]`).click();
      const detail = page.locator("#detail");
      await detail.getByTestId("detail-id").filter({ hasText: task.id }).waitFor();
      await detail.getByTestId("explain").filter({ hasText: "Parked" }).waitFor();
      await detail.locator("h4", { hasText: "Steps (2)" }).waitFor();
      const timeline = detail.getByTestId("steps");
      await expect(timeline.locator("li").nth(0).textContent()).resolves.toContain('{"chargeId":"ch_9"}');
      await expect(timeline.locator("li").nth(1).textContent()).resolves.toContain("waiting for message 'approval'");
      await page.evaluate("window.scrollTo(0, 0)");
      await page.screenshot({ path: join(ARTIFACTS, `${backend.name}-steps-detail.png`), fullPage: true });

      // A wait without a timeout parks until the largest Date: shown as no deadline, not as a day in the year 275760.
      await expect(detail.textContent()).resolves.toContain("never (no deadline)");

      // Canceled while parked: the entry stays `waiting` in the journal, but the task waits for nothing any more.
      await store.cancel(task.id);
      await page.locator("#detail button.close").click();
      await page.locator(`#task-rows tr[data-id="${task.id}"]`).click();
      await detail.getByTestId("explain").filter({ hasText: "while parked on wait 'approval'" }).waitFor();
      await expect(detail.getByTestId("steps").locator("li").nth(1).textContent()).resolves.toContain("parked here when the task ended canceled: no longer waiting");
    });

    it("shows a finished task's result, its parent and its children, and follows the links", async () => {
      const parent = await store.submit({ name: "import", queue: "family", payload: { file: "users.csv" } });
      const child = await store.submit({ name: "import-row", queue: "family", parentId: parent.id, rootId: parent.id, payload: { row: 1 } });
      const [claimed] = await store.claim({ queues: ["family"], names: ["import-row"], workerId: "worker_01JB8ZK3M2Q4W5E6R7T8Y9V0XP", leaseMs: 60_000 });
      expect(claimed?.id).toBe(child.id);
      await store.complete({ taskId: child.id, workerId: "worker_01JB8ZK3M2Q4W5E6R7T8Y9V0XP", result: { imported: 1, skipped: 0 } });

      await filter(page, { queue: "family", name: "import" });
      await page.locator(`#task-rows tr[data-id="${parent.id}"]`).click();
      const detail = page.locator("#detail");
      await detail.getByTestId("detail-id").filter({ hasText: parent.id }).waitFor();
      await detail.locator("h4", { hasText: "Children (1)" }).waitFor();
      await detail.locator("ul.children").getByRole("button", { name: child.id }).click();
      await detail.getByTestId("detail-id").filter({ hasText: child.id }).waitFor();
      await expect(detail.getByTestId("result").textContent()).resolves.toContain('"imported": 1');
      await expect(detail.getByTestId("status").first().textContent()).resolves.toBe("succeeded");
      await detail.getByTestId("explain").filter({ hasText: "Finished" }).waitFor();
      // The click scrolled the page; a full-page shot of a scrolled page draws the sticky header mid-page.
      await page.evaluate("window.scrollTo(0, 0)");
      await page.screenshot({ path: join(ARTIFACTS, `${backend.name}-child-detail.png`), fullPage: true });
      await detail.getByRole("button", { name: parent.id }).first().click();
      await detail.getByTestId("detail-id").filter({ hasText: parent.id }).waitFor();
      expect(page.url()).toBe(`${url}#${parent.id}`);
    });

    it("shows counts by group for the task name in the filter, and hides them for a name without groups", async () => {
      for (const group of ["acme", "acme", "acme", "globex", "initech", "initech"]) await store.submit({ name: "export", queue: "tenants", group });
      await store.submit({ name: "report", queue: "tenants" });
      const claimed = await store.claim({
        queues: ["tenants"],
        names: ["export"],
        workerId: "worker_01JB8ZK3M2Q4W5E6R7T8Y9V0XR",
        limit: 6,
        leaseMs: 60_000,
        flowControl: { export: { groupConcurrency: 1 } },
      });
      expect(claimed).toHaveLength(3); // one per group: the limit holds the rest back

      await filter(page, { name: "export" });
      const groups = page.locator("#groups");
      await groups.locator('tr[data-group="acme"]').waitFor();
      await expect(page.locator("#groups-name").textContent()).resolves.toBe("export");
      const rows = await groups.locator("tbody tr").evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent)));
      expect(rows).toEqual([
        ["acme", "2", "1"],
        ["initech", "1", "1"],
        ["globex", "0", "1"],
      ]);
      await page.evaluate("window.scrollTo(0, 0)");
      await page.screenshot({ path: join(ARTIFACTS, `${backend.name}-groups.png`), fullPage: true });

      await filter(page, { name: "report" });
      await expect(groups.isHidden()).resolves.toBe(true);
      await filter(page, {});
      await expect(groups.isHidden()).resolves.toBe(true);
    });

    it("cancels every queued task of a queue in bulk after a confirmation, and no other", async () => {
      const later = await Promise.all([1, 2].map((i) => store.submit({ name: "digest", queue: "later", payload: { i }, runAtDelayMs: 3_600_000 })));
      const other = await store.submit({ name: "digest", queue: "sooner", runAtDelayMs: 3_600_000 });
      await filter(page, { status: "queued", queue: "later" });
      await page.locator("#task-rows tr").nth(1).waitFor();
      await expect(page.locator("#bulk-action").textContent()).resolves.toBe("Cancel every queued task in queue later");
      await page.locator("#bulk-action").click();
      await page.locator("#bulk-yes").click();
      await page.locator("#toast").filter({ hasText: "Canceled or asked to stop 2 tasks" }).waitFor();
      for (const task of later) expect((await store.get(task.id))?.status).toBe("canceled");
      expect((await store.get(other.id))?.status).toBe("queued");
    });
  });
}
