// The API side: submits keyed tasks into a SQLite file (or a Postgres
// database), a separate worker process runs them, and the results print here.
// Exits 0 when all succeeded. Runs under Node and under Bun:
//
//   node demo.mjs                       a SQLite file in a temp directory
//   bun demo.mjs postgres://…/db        a fresh schema in that Postgres database (dropped after)
import { fork } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CairnQ } from "cairnq";

const dsn = process.argv[2];
let database;
let cleanup;
if (dsn === undefined) {
  const dir = mkdtempSync(join(tmpdir(), "cairnq-demo-"));
  database = { file: join(dir, "demo.db") };
  cleanup = async () => rmSync(dir, { recursive: true, force: true });
} else if (/^postgres(ql)?:\/\//.test(dsn)) {
  database = { dsn, schema: `cairnq_demo_${randomBytes(4).toString("hex")}` };
  cleanup = async () => {
    const { default: pg } = await import("pg");
    const admin = new pg.Client({ connectionString: dsn });
    await admin.connect();
    await admin.query(`DROP SCHEMA IF EXISTS "${database.schema}" CASCADE`);
    await admin.end();
  };
} else {
  throw new Error(`demo.mjs takes nothing (SQLite) or a postgres:// connection string, got ${JSON.stringify(dsn)}`);
}
const cairnq = database.dsn === undefined ? CairnQ.sqlite(database.file) : CairnQ.postgres(database.dsn, { schema: database.schema });
await cairnq.connect();

const worker = fork(new URL("./worker.mjs", import.meta.url), [JSON.stringify(database)]);
await new Promise((resolve) => worker.once("message", resolve));
const runtime = process.versions.bun === undefined ? `Node ${process.version}` : `Bun ${process.versions.bun}`;
const where = database.dsn === undefined ? `SQLite ${database.file} (${cairnq.store.driver})` : `Postgres schema ${database.schema}`;
console.log(`worker process ${worker.pid} is up; ${runtime}, ${where}`);

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
  await cleanup();
}
console.log("demo finished");
