/**
 * Values from the database cannot reorder the dashboard's text around them:
 * a task whose name, queue, group and correlation id end in U+202E
 * (RIGHT-TO-LEFT OVERRIDE), in headless Chromium over a real SQLite file.
 * Each value the page renders sits in a `<bdi>` (`unicode-bidi: isolate`);
 * the server's "Why" paragraph, built around the values, shows each bidi
 * control as its code point instead of applying it; the JSON blocks write
 * them as JSON escapes. The checks read the rendered order of the words
 * after a value, not only the markup.
 *
 * Screenshots land in test/artifacts/ (gitignored): bidi-detail.png,
 * bidi-groups.png.
 */
import { join } from "node:path";
import { SQLiteStore } from "@cairnq/store-sqlite";
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { ARTIFACTS, useChromium } from "../support/browser.js";
import { closeDashboards, serveDashboard } from "../support/serve.js";

const RLO = "\u202e";
const BIDI_CONTROL = /[\u202a-\u202e\u2066-\u2069]/;

const { browser: chromiumBrowser, dir } = useChromium("The dashboard's bidi isolation test", "cairnq-bidi-");

/** Runs `source` (a function's text: the tests type-check without the DOM library) in the page with `args`. */
function inPage<T>(page: Page, source: string, ...args: unknown[]): Promise<T> {
  return page.evaluate<T>(`(${source})(...${JSON.stringify(args)})`);
}

/**
 * The left edges of each character of `word`, as laid out, at its first occurrence in `selector`'s text:
 * increasing when the word reads left to right, decreasing when an override mirrored it.
 */
function lefts(page: Page, selector: string, word: string): Promise<number[]> {
  return inPage(
    page,
    `(selector, word) => {
      const walker = document.createTreeWalker(document.querySelector(selector), NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node !== null; node = walker.nextNode()) {
        const at = node.textContent.indexOf(word);
        if (at === -1) continue;
        return [...word].map((_, i) => {
          const range = document.createRange();
          range.setStart(node, at + i);
          range.setEnd(node, at + i + 1);
          return range.getBoundingClientRect().left;
        });
      }
      throw new Error("no " + JSON.stringify(word) + " in " + selector);
    }`,
    selector,
    word,
  );
}

function increasing(xs: readonly number[]): boolean {
  return xs.every((x, i) => i === 0 || x > (xs[i - 1] as number));
}

/** Every text node under `selector` holding a bidi control: its element and that element's computed `unicode-bidi`. */
function holders(page: Page, selector: string): Promise<{ tag: string; unicodeBidi: string; text: string }[]> {
  return inPage(
    page,
    `(selector, source) => {
      const control = new RegExp(source);
      const found = [];
      for (const root of document.querySelectorAll(selector)) {
        const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
        for (let node = walker.nextNode(); node !== null; node = walker.nextNode()) {
          if (!control.test(node.textContent)) continue;
          const parent = node.parentElement;
          found.push({ tag: parent.tagName.toLowerCase(), unicodeBidi: getComputedStyle(parent).unicodeBidi, text: node.textContent });
        }
      }
      return found;
    }`,
    selector,
    BIDI_CONTROL.source,
  );
}

describe("values with bidi controls on the dashboard", () => {
  it("cannot mirror the Why paragraph, the table cells or the text after them", async () => {
    const store = new SQLiteStore(join(dir, "cairnq.db"));
    try {
      await store.connect();
      const task = await store.submit({
        name: `invoice.send${RLO}`,
        queue: `mail${RLO}`,
        group: `tenant-42${RLO}`,
        correlationId: `checkout-7${RLO}`,
        payload: { to: `billing${RLO}@example.com` },
      });
      const base = await serveDashboard({ store, logger: null });
      const page = await chromiumBrowser().newPage({ viewport: { width: 1440, height: 1000 } });
      try {
        await page.goto(`${base}/#${task.id}`);
        const explain = page.locator("[data-testid=explain]");
        await explain.waitFor();
        await page.locator("#task-rows tr").first().waitFor();
        await page.screenshot({ path: join(ARTIFACTS, "bidi-detail.png"), fullPage: true });

        // The paragraph reads left to right after each value: "handler" follows the queue, "running" the group.
        for (const word of ["handler", "running", "Nothing"]) expect(increasing(await lefts(page, "[data-testid=explain]", word)), word).toBe(true);
        await expect(explain.textContent()).resolves.toContain("tenant-42U+202E (0 running)");
        // Its bidi controls are shown as code points, not applied: no text node of it holds one.
        await expect(holders(page, "[data-testid=explain]")).resolves.toEqual([]);
        await expect(explain.locator(".ctl").first().textContent()).resolves.toBe("U+202E");
        // The JSON blocks write them as JSON escapes.
        await expect(page.locator("[data-testid=payload]").textContent()).resolves.toContain('"to": "billing\\u202e@example.com"');

        // Every other value with one is isolated: the element holding its text is a <bdi>, unicode-bidi: isolate.
        const isolated = await holders(page, "#detail, #task-rows, #queues");
        expect(isolated.map((h) => h.text).sort()).toEqual([`checkout-7${RLO}`, `invoice.send${RLO}`, `invoice.send${RLO}`, `mail${RLO}`, `mail${RLO}`, `mail${RLO}`]);
        for (const holder of isolated) expect(holder, holder.text).toMatchObject({ tag: "bdi", unicodeBidi: "isolate" });

        // The groups heading: the legend after the filtered name still reads left to right.
        await page.locator("#filter-name").fill(`invoice.send${RLO}`);
        await page.getByRole("button", { name: "Filter", exact: true }).click();
        await page.locator("#groups:not([hidden]) tr[data-group]").waitFor();
        await page.screenshot({ path: join(ARTIFACTS, "bidi-groups.png"), fullPage: true });
        expect(increasing(await lefts(page, "#groups h3", "group"))).toBe(true);
        const groups = await holders(page, "#groups");
        expect(groups.map((h) => h.text).sort()).toEqual([`invoice.send${RLO}`, `tenant-42${RLO}`]);
        for (const holder of groups) expect(holder, holder.text).toMatchObject({ tag: "bdi", unicodeBidi: "isolate" });
      } finally {
        await page.close();
      }
    } finally {
      await closeDashboards();
      await store.close();
    }
  }, 60_000);
});
