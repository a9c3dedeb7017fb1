// The worker process: claims `resize` tasks from the demo's database and reports progress.
import { Worker } from "cairnq";

const database = JSON.parse(process.argv[2]);
const options = { concurrency: 4, pollIntervalMs: 50 };
const worker =
  database.dsn === undefined ? Worker.sqlite(database.file, options) : Worker.postgres(database.dsn, { ...options, schema: database.schema });

worker.task("resize", async (ctx, payload) => {
  for (let step = 1; step <= 4; step += 1) {
    await new Promise((resolve) => setTimeout(resolve, 25));
    await ctx.progress(step / 4, `pass ${step} of 4`);
  }
  return { image: payload.image, width: payload.width, bytes: payload.width * 97, worker: ctx.workerId.slice(0, 14) };
});

process.send?.("ready");
await worker.serve();
