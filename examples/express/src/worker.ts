/**
 * The worker process: `pnpm worker` (or `tsx src/worker.ts`). Run as many as
 * you like, on this host (SQLite) or on any host that reaches the database
 * (Postgres); each task runs on one of them.
 *
 * Env: `DATABASE_URL` (Postgres, with `CAIRNQ_PG_SCHEMA` optional) or
 * `CAIRNQ_SQLITE_PATH` (default ./cairnq.db).
 */
import { createHash } from "node:crypto";
import { TaskError } from "cairnq";
import { describeDatabase, openWorker } from "./cairnq.js";
import { THUMBNAILS_QUEUE, thumbnail } from "./tasks.js";

const worker = openWorker({
  queues: [THUMBNAILS_QUEUE],
  concurrency: 4,
  // Errors the worker survives — a claim that failed while the database was
  // unreachable, a lost heartbeat — arrive here with { phase, taskId, error };
  // it carries on by itself. (Any structural logger fits: pino, console, …)
  logger: { error: (message, fields) => console.error(`worker: ${message}`, fields) },
});

/** How often a running download reports progress and checks for a cancel request. */
const REPORT_EVERY_MS = 200;

worker.task(thumbnail, async (ctx, { url, width }) => {
  await ctx.progress(0, `downloading ${url}`);
  // ctx.signal aborts when this worker stops owning the task (lease lost,
  // shutdown deadline): the download stops with it.
  const response = await fetch(url, { signal: ctx.signal });
  if (response.status >= 400 && response.status < 500) {
    // A verdict, not a hiccup: retrying will not help until someone fixes
    // the source, so the task fails for good (POST /tasks/:id/retry later).
    throw new TaskError(`source image ${url} answered HTTP ${response.status}`, {
      code: "source_unavailable",
      details: { status: response.status },
    });
  }
  // Anything else that throws (5xx here, a network error in fetch) is
  // retried with backoff while attempts remain.
  if (!response.ok || !response.body) throw new Error(`source image ${url} answered HTTP ${response.status}`);

  const total = Number(response.headers.get("content-length")) || null;
  const hash = createHash("sha256");
  const chunks: Buffer[] = [];
  let bytes = 0;
  let reportedAt = Date.now();
  for await (const chunk of response.body) {
    hash.update(chunk);
    chunks.push(Buffer.from(chunk));
    bytes += chunk.byteLength;
    if (Date.now() - reportedAt >= REPORT_EVERY_MS) {
      reportedAt = Date.now();
      await ctx.progress(total ? (0.8 * bytes) / total : null, `downloaded ${bytes}${total ? ` of ${total}` : ""} bytes`);
      // Leaving the loop cancels the download. A canceled task ends
      // `canceled` whatever the handler does next; throwing just stops early.
      if (await ctx.canceled()) throw new TaskError("canceled during download", { code: "canceled" });
    }
  }

  await ctx.progress(0.8, `resizing to ${width}px`);
  const source = Buffer.concat(chunks);
  const size = pngSize(source);
  const sha256 = hash.digest("hex");
  // A real service would resize here (e.g. with sharp) and upload the
  // thumbnail to object storage; this example stops at computing its size.
  return {
    source: { url, bytes, contentType: response.headers.get("content-type"), sha256, width: size?.width ?? null, height: size?.height ?? null },
    thumbnail: {
      key: `thumbnails/${sha256.slice(0, 16)}-${width}w`,
      width,
      height: size ? Math.max(1, Math.round((size.height * width) / size.width)) : null,
    },
  };
});

/** Width and height from a PNG's IHDR chunk, or `null` if `data` is not a PNG. */
function pngSize(data: Buffer): { width: number; height: number } | null {
  const signature = "89504e470d0a1a0a";
  if (data.length < 24 || data.subarray(0, 8).toString("hex") !== signature || data.toString("latin1", 12, 16) !== "IHDR") return null;
  return { width: data.readUInt32BE(16), height: data.readUInt32BE(20) };
}

worker.on("task:succeeded", (e) => console.log(`task ${e.taskId} succeeded in ${e.durationMs}ms`));
worker.on("task:failed", (e) => console.log(`task ${e.taskId} failed${e.willRetry ? `, retrying in ${e.delayMs}ms` : ""}`));
worker.on("task:canceled", (e) => console.log(`task ${e.taskId} canceled`));

console.log(`worker ${worker.workerId} running (${describeDatabase()}); Ctrl-C to stop`);
// Until SIGINT/SIGTERM; then stop claiming, let running handlers finish, close the store.
await worker.serve();
console.log("worker stopped");
