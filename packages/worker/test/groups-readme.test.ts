/**
 * The README's groups, debounce and per-name retry examples, run on a SQLite file. The snippets
 * between the markers below are the README's code blocks verbatim (the test checks that), around a
 * worker on a real store.
 */
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { SQLiteStore } from "@cairnq/store-sqlite";
import { Worker } from "../src/index.js";

const README = readFileSync(new URL("../README.md", import.meta.url), "utf8");
const SELF = readFileSync(new URL(import.meta.url), "utf8");

/** The code block after `<!-- example: test/groups-readme.test.ts <which> -->` in the README. */
function readmeBlock(which: string): string {
  const marker = `<!-- example: test/groups-readme.test.ts ${which} -->\n\`\`\`ts\n`;
  const start = README.indexOf(marker);
  expect(start).toBeGreaterThanOrEqual(0);
  const body = README.slice(start + marker.length);
  return body.slice(0, body.indexOf("```\n"));
}

/** This file's lines between `// <which>:begin` and `// <which>:end`, unindented by 2. */
function ownBlock(which: string): string {
  const begin = SELF.indexOf(`// ${which}:begin\n`);
  const end = SELF.indexOf(`  // ${which}:end`);
  return SELF.slice(begin + `// ${which}:begin\n`.length, end)
    .split("\n")
    .map((line) => line.replace(/^ {2}/, ""))
    .join("\n");
}

it("the README examples are this test's code", () => {
  for (const which of ["groups", "debounce", "retry"]) expect(readmeBlock(which)).toBe(ownBlock(which));
});

it("runs the README's groups, debounce and retry examples", async () => {
  const dir = await mkdtemp(join(tmpdir(), "cairnq-readme-"));
  const store = new SQLiteStore(join(dir, "readme.db"));
  const worker = new Worker(store, { concurrency: 4, pollIntervalMs: 20 });
  try {
  // groups:begin
  // At most 2 exports per customer at once, at most 10 started per second per customer;
  // a customer with 100,000 exports queued does not hold back one with a single export.
  worker.task("export", { groupConcurrency: 2, groupRateLimit: { max: 10, perMs: 1000 } }, async (ctx, { customer }) => {
    return { customer, exported: true };
  });
  await store.submit({ name: "export", payload: { customer: "acme" }, group: "acme" });
  await store.submit({ name: "export", payload: { customer: "globex" }, group: "globex" });
  // groups:end
  // debounce:begin
  // Reindex a user's search data once per burst of edits: 2 s after the last edit, at most 10 s after the first.
  const debounce = { delayMs: 2000, maxDelayMs: 10_000 };
  const first = await store.submit({ name: "reindex", payload: { userId: 7, edits: 1 }, key: "reindex:7", debounce });
  const again = await store.submit({ name: "reindex", payload: { userId: 7, edits: 2 }, key: "reindex:7", debounce });
  // again.id === first.id, and its payload is { userId: 7, edits: 2 }
  // debounce:end
  // retry:begin
  // A partner API wants 30 s, then 60 s, then 90 s between attempts, whatever the worker's backoff.
  worker.task("partner.sync", { retryBackoff: (attempt) => 30_000 * attempt }, async () => {
    return { synced: true };
  });
  // retry:end
    expect(again.id).toBe(first.id);
    expect(again.payload).toEqual({ userId: 7, edits: 2 });
    expect(again.run_at_ms).toBeGreaterThanOrEqual(first.run_at_ms);
    const running = worker.run();
    const deadline = Date.now() + 20_000;
    const done = async () => (await store.list({ name: "export", status: "succeeded", limit: 10 })).map((t) => t.result as { customer: string });
    while ((await done()).length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    await worker.stop();
    await running;
    expect((await done()).map((r) => r.customer).sort()).toEqual(["acme", "globex"]);
  } finally {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  }
});
