// The API side: submits keyed tasks into a SQLite file, a separate worker
// process runs them, and the results print here. Exits 0 when all succeeded.
import { fork } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CairnQ } from "cairnq";

const dir = mkdtempSync(join(tmpdir(), "cairnq-demo-"));
const file = join(dir, "demo.db");
const cairnq = CairnQ.sqlite(file);
await cairnq.connect();

const worker = fork(new URL("./worker.mjs", import.meta.url), [file]);
await new Promise((resolve) => worker.once("message", resolve));
console.log(`worker process ${worker.pid} is up; database ${file}`);

try {
  const images = ["cat.png", "dog.png", "owl.png"];
  const tasks = [];
  for (const image of images) {
    // A key makes the submit idempotent: submitting the same image twice reuses the task.
    const task = await cairnq.submit("resize", { image, width: 640 }, { key: `resize:${image}` });
    const again = await cairnq.submit("resize", { image, width: 640 }, { key: `resize:${image}` });
    console.log(`submitted ${task.id} (key resize:${image}; resubmitting gave the same id: ${again.id === task.id})`);
    tasks.push(task);
  }

  const seen = new Map();
  const watcher = setInterval(async () => {
    for (const task of tasks) {
      const row = await cairnq.get(task.id);
      if (row && row.status === "running" && row.message && seen.get(task.id) !== row.message) {
        seen.set(task.id, row.message);
        console.log(`  ${row.payload.image}: ${Math.round((row.progress ?? 0) * 100)}% (${row.message})`);
      }
    }
  }, 20);

  const results = await Promise.all(tasks.map((task) => cairnq.wait(task.id, { timeoutMs: 30_000 })));
  clearInterval(watcher);
  for (const row of results) console.log(`${row.payload.image}: ${row.status} → ${JSON.stringify(row.result)}`);

  const summary = await cairnq.call("resize", { image: "fox.png", width: 320 }, { waitTimeoutMs: 30_000 });
  console.log(`call() returned the result directly: ${JSON.stringify(summary)}`);
  if (!results.every((row) => row.status === "succeeded")) process.exitCode = 1;
} finally {
  worker.kill("SIGTERM");
  await new Promise((resolve) => worker.once("exit", resolve));
  await cairnq.close();
  rmSync(dir, { recursive: true, force: true });
}
console.log("demo finished");
