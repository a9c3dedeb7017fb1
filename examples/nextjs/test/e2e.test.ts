/**
 * End to end: `next start` on the app's production build and the worker as
 * two real processes on one temporary SQLite file, and the page driven in
 * headless Chromium: type a text, click Analyze, see the progress and the
 * result the worker produced. Leaves screenshots in test-artifacts/ (nextjs-progress.png
 * while the worker runs, nextjs-result.png once it is done).
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { BrowserContext } from "playwright-core";
import { chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChildEnv, Started } from "@cairnq/test-support";
import { chromiumLaunchOptions, ensureChromium, startNode } from "@cairnq/test-support";

const exampleDir = fileURLToPath(new URL("..", import.meta.url));
const artifactsDir = join(exampleDir, "test-artifacts");
const nextBin = join(exampleDir, "node_modules", "next", "dist", "bin", "next");

let dir: string;
let app: Started;
let worker: Started;
let appUrl: string;
let browser: BrowserContext | undefined;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/**
 * `next start` serves the production build of this package's `build` task
 * (`next build`), which turbo runs before `test:integration`: building it here
 * as well would run `next build` twice in one `pnpm test`.
 */
function assertBuilt(): void {
  if (!existsSync(join(exampleDir, ".next", "BUILD_ID"))) {
    throw new Error(
      "examples/nextjs has no production build (.next/BUILD_ID is missing): run `pnpm exec turbo run test:integration --filter=@cairnq/example-nextjs` from the repository root, which builds it first, or `pnpm build` here",
    );
  }
}

beforeAll(async () => {
  ensureChromium("The Next.js example's test");
  dir = mkdtempSync(join(tmpdir(), "cairnq-example-nextjs-"));
  const env: ChildEnv = { ...process.env, CAIRNQ_SQLITE_PATH: join(dir, "cairnq.db"), NEXT_TELEMETRY_DISABLED: "1" };
  delete env.DATABASE_URL; // this test is the SQLite run, whatever the shell has
  delete env.NODE_ENV; // vitest sets "test"; next start sets its own

  assertBuilt();
  const port = await freePort();
  app = startNode("next start", [nextBin, "start", "--port", String(port), "--hostname", "127.0.0.1"], { cwd: exampleDir, env });
  worker = startNode("worker", ["--import", "tsx", "worker.ts"], { cwd: exampleDir, env });
  await Promise.all([app.waitFor(/Ready in/, 30_000), worker.waitFor(/worker \S+ running/)]);
  appUrl = `http://127.0.0.1:${port}`;
}, 600_000); // a first run may install Chromium

afterAll(async () => {
  await browser?.close();
  await Promise.all([app?.stop(), worker?.stop()]);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("examples/nextjs: next start + worker process, driven in Chromium", () => {
  it("submits from the page and shows live progress, then the worker's result", async () => {
    browser = await chromium.launchPersistentContext(join(dir, "chromium-profile"), {
      ...chromiumLaunchOptions(),
      viewport: { width: 900, height: 720 },
    });
    const page = browser.pages()[0] ?? (await browser.newPage());
    await page.goto(appUrl);
    await expect(page.getByRole("heading", { name: "Text analysis on CairnQ" }).isVisible()).resolves.toBe(true);

    // 14 words, 3 sentences; "work" twice.
    await page.getByLabel("Text to analyze").fill("Queues keep work safe. Workers claim work and report progress. Pages poll for results!");
    await page.getByRole("button", { name: "Analyze" }).click();

    // The worker takes four steps of 400 ms: the page shows them as they happen.
    await page.getByTestId("progress").filter({ hasText: /\d+% — (splitting|counting|ranking|estimating)/ }).waitFor({ timeout: 15_000 });
    mkdirSync(artifactsDir, { recursive: true });
    await page.screenshot({ path: join(artifactsDir, "nextjs-progress.png"), fullPage: true });
    const result = page.getByTestId("result");
    await result.waitFor({ timeout: 20_000 });
    expect(await result.textContent()).toBe("14 words, 3 sentences, about 5 s to read");
    expect(await page.getByTestId("status").textContent()).toBe("succeeded");
    await expect(page.getByText("Top words: work (2)").isVisible()).resolves.toBe(true);

    await page.screenshot({ path: join(artifactsDir, "nextjs-result.png"), fullPage: true });
    await browser.close();
    browser = undefined;
  }, 60_000);

  it("stops next start and the worker on SIGTERM", async () => {
    const [appExit, workerExit] = await Promise.all([app.stop(), worker.stop()]);
    expect(workerExit, worker.output()).toEqual({ code: 0, signal: null });
    expect(worker.output()).toMatch(/task task_\S+ succeeded/);
    expect(worker.output()).toMatch(/worker stopped/);
    // next start handles SIGTERM itself and exits 143 (128 + 15), the shell's code for "ended by SIGTERM".
    expect(appExit, app.output()).toEqual({ code: 143, signal: null });
  });
});
