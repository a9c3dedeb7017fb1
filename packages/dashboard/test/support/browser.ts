/**
 * The setup the dashboard's Chromium suites share: Debian's Chromium (driven by playwright-core) launched
 * once per file, the screenshots' directory (test/artifacts/, gitignored), a temporary directory for the
 * file's SQLite databases, and, after the file, the dashboards it served (`serveDashboard`) closed.
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromiumLaunchOptions, ensureChromium } from "@cairnq/test-support";
import type { Browser } from "playwright-core";
import { chromium } from "playwright-core";
import { afterAll, beforeAll } from "vitest";
import { closeDashboards } from "./serve.js";

/** Where the suites write their screenshots. */
export const ARTIFACTS = fileURLToPath(new URL("../artifacts/", import.meta.url));

/**
 * Registers the file's `beforeAll` (Chromium, which fails loudly when missing, naming `suite`) and `afterAll`.
 *
 * @param suite - What needs Chromium, for the error when it cannot be had: "The dashboard's Activity charts test".
 * @param prefix - The temporary directory's name prefix (`"cairnq-activity-"`); without one, `dir` is `""` and none is made.
 */
export function useChromium(suite: string, prefix?: string): { browser: () => Browser; dir: string } {
  let browser: Browser | undefined;
  const dir = prefix === undefined ? "" : mkdtempSync(join(tmpdir(), prefix));
  beforeAll(async () => {
    ensureChromium(suite);
    mkdirSync(ARTIFACTS, { recursive: true });
    browser = await chromium.launch(chromiumLaunchOptions());
  }, 60_000);
  afterAll(async () => {
    await closeDashboards();
    await browser?.close();
    if (dir !== "") rmSync(dir, { recursive: true, force: true });
  });
  return {
    browser: () => {
      if (browser === undefined) throw new Error("Chromium is not launched yet: call browser() inside a test");
      return browser;
    },
    dir,
  };
}
