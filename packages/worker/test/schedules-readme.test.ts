/**
 * The README's flow-control and schedule examples, run on a SQLite file. The
 * snippets between the markers below are the README's code blocks verbatim
 * (the test checks that), around a worker on a real store.
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

/** The code block after `<!-- example: test/schedules-readme.test.ts <which> -->` in the README. */
function readmeBlock(which: string): string {
  const marker = `<!-- example: test/schedules-readme.test.ts ${which} -->\n\`\`\`ts\n`;
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
  expect(readmeBlock("flow")).toBe(ownBlock("flow"));
  expect(readmeBlock("schedule")).toBe(ownBlock("schedule"));
});

it("runs the README's flow-control and schedule examples", async () => {
  const dir = await mkdtemp(join(tmpdir(), "cairnq-readme-"));
  const store = new SQLiteStore(join(dir, "readme.db"));
  const worker = new Worker(store, { concurrency: 4, pollIntervalMs: 20 });
  try {
  // flow:begin
  // At most 2 reports building at once in the whole fleet, and at most 10 started per second.
  worker.task("report.build", { globalConcurrency: 2, rateLimit: { max: 10, perMs: 1000 } }, async (ctx, { kind }) => {
    return { kind, built: true };
  });
  // flow:end
  // schedule:begin
  // 06:30 every day, Paris time; on start, also a run missed within the last day.
  worker.schedule("report.build", "30 6 * * *", {
    name: "report.daily",
    timezone: "Europe/Paris",
    payload: { kind: "daily" },
    backfillMs: 24 * 3600 * 1000,
  });
  // Every 200 ms (slots at multiples of 200 ms since the Unix epoch).
  worker.schedule("report.build", { everyMs: 200 }, { name: "report.often", payload: { kind: "often" } });
  // schedule:end
    const running = worker.run();
    const deadline = Date.now() + 20_000;
    const done = async () => (await store.list({ name: "report.build", status: "succeeded", limit: 1000 })).map((t) => t.result as { kind: string });
    while ((await done()).filter((r) => r.kind === "often").length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    await worker.stop();
    await running;
    const results = await done();
    // The daily slot missed within the backfill window ran once; the 200 ms slots ran as they came.
    expect(results.filter((r) => r.kind === "daily").length).toBeGreaterThanOrEqual(1);
    expect(results.filter((r) => r.kind === "often").length).toBeGreaterThanOrEqual(3);
    expect(results.every((r) => (r as unknown as { built: boolean }).built)).toBe(true);
  } finally {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  }
});
