/**
 * The worker process: `pnpm worker` (or `tsx worker.ts`), beside `next start`
 * — not inside it. A Next.js server handles requests; a worker runs tasks for
 * as long as they take, and both can be scaled, deployed and restarted apart.
 *
 * Env: `DATABASE_URL` (Postgres) or `CAIRNQ_SQLITE_PATH` (default ./cairnq.db),
 * the same as the app's, so both meet in one database.
 */
import { Worker } from "cairnq";
import type { AnalyzeResult } from "./lib/tasks";
import { ANALYSIS_QUEUE, analyzeText } from "./lib/tasks";

const options = { queues: [ANALYSIS_QUEUE], concurrency: 2, pollIntervalMs: 250 };
const url = process.env.DATABASE_URL;
const sqlitePath = process.env.CAIRNQ_SQLITE_PATH ?? "./cairnq.db";
const worker = url ? Worker.postgres(url, options) : Worker.sqlite(sqlitePath, options);

/**
 * Each step pauses this long, standing in for slow work (a model call, a big
 * file) so that the page has progress to show.
 */
const STEP_MS = 400;
const pause = () => new Promise((resolve) => setTimeout(resolve, STEP_MS));

worker.task(analyzeText, async (ctx, { text }): Promise<AnalyzeResult> => {
  await ctx.progress(0.1, "splitting words");
  await pause();
  const words = text.toLowerCase().match(/[\p{L}\p{N}']+/gu) ?? [];

  await ctx.progress(0.4, "counting sentences");
  await pause();
  const sentences = text.split(/[.!?]+/).filter((part) => part.trim() !== "").length;

  await ctx.progress(0.7, "ranking words");
  await pause();
  const counts = new Map<string, number>();
  for (const word of words) if (word.length >= 4) counts.set(word, (counts.get(word) ?? 0) + 1);
  const topWords = [...counts]
    .sort(([a, x], [b, y]) => y - x || a.localeCompare(b))
    .slice(0, 5)
    .map(([word, count]) => ({ word, count }));

  await ctx.progress(0.95, "estimating reading time");
  await pause();
  // 200 words a minute, a common estimate for reading on screen.
  return { words: words.length, sentences, topWords, readingTimeSeconds: Math.ceil((words.length / 200) * 60) };
});

worker.on("task:succeeded", (e) => console.log(`task ${e.taskId} succeeded in ${e.durationMs}ms`));
worker.on("task:failed", (e) => console.log(`task ${e.taskId} failed${e.willRetry ? `, retrying in ${e.delayMs}ms` : ""}`));

console.log(`worker ${worker.workerId} running (${url ? "Postgres" : `SQLite file ${sqlitePath}`}); Ctrl-C to stop`);
// Until SIGINT/SIGTERM; then stop claiming, let running handlers finish, close the store.
await worker.serve();
console.log("worker stopped");
