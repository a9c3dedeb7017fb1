// Where a cross-process call() on SQLite spends its time, and whether its writes collide: a client in
// this process makes sequential call()s to an idle worker in a child process on the same runtime (Node or
// Bun) and driver; both stamp their store calls on the shared clock (performance.timeOrigin + now), and the
// medians of each hop are printed with the CPU time per call of each process and the SQLITE_BUSY retries of
// each side's write queue (the turns that hit a lock held by the other process and slept the backoff).
// Diagnostic only, not part of the bench table.
//
//   node bench/call-timeline.mjs [--calls 1000] [--driver better-sqlite3|node:sqlite|bun:sqlite]
//   node_modules/.cache/cairnq-runtimes/@oven+bun-linux-x64@1.4.5/package/bin/bun bench/call-timeline.mjs --driver bun:sqlite
import { fork } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { sharedNow, stampMethods } from "./lib/stamp-methods.mjs";
import { CairnQ, SQLiteStore, Worker } from "cairnq";
import { callEvents, hopMedians, timedCalls } from "./lib/call-events.mjs";

const { values } = parseArgs({ options: { calls: { type: "string", default: "1000" }, driver: { type: "string" }, child: { type: "string" } } });
const driver = values.driver;
const now = sharedNow;
/** [store method, start, end, task id] of every wrapped call in this process. */
const log = [];

/** Wraps `names` on SQLiteStore's prototype chain so every call is stamped into `log`. */
const stamp = (names) => stampMethods(SQLiteStore, names, log);

const busyOf = (store) => store?.dialect?.connection?.queue?.stats?.busyRetries ?? null;

if (values.child !== undefined) {
  stamp(["claim", "completeRef", "complete", "claimWake"]);
  const worker = Worker.sqlite(values.child, { driver });
  worker.task("noop", () => {
    log.push(["handler", now(), now()]);
    return null;
  });
  const running = worker.run();
  let mark = null;
  let busyAtMark = 0;
  process.on("message", async (message) => {
    if (message === "mark") {
      mark = process.cpuUsage();
      busyAtMark = busyOf(worker.store) ?? 0;
      log.length = 0;
      return;
    }
    const cpu = process.cpuUsage(mark ?? undefined);
    const busy = (busyOf(worker.store) ?? 0) - busyAtMark;
    await worker.stop();
    await running;
    await worker.close();
    // Disconnected only once the log is written: a large one (2,500 calls) was still in flight, and the parent waited forever.
    process.send({ log, cpuUs: cpu.user + cpu.system, busy }, () => process.disconnect());
  });
  process.send("ready");
} else {
  const calls = Number(values.calls);
  const dir = mkdtempSync(join(tmpdir(), "cairnq-timeline-"));
  const file = join(dir, "timeline.db");
  const client = CairnQ.sqlite(file, { driver });
  await client.connect();
  stamp(["submit", "getStatus", "get", "taskDoneWake"]);
  const args = ["--child", file, ...(driver === undefined ? [] : ["--driver", driver])];
  const child = fork(fileURLToPath(import.meta.url), args, { execPath: process.execPath });
  await new Promise((resolve) => child.once("message", resolve));
  for (let i = 0; i < 50; i += 1) await client.call("noop", {});
  child.send("mark");
  await new Promise((resolve) => setTimeout(resolve, 20));
  log.length = 0;
  const busyBefore = busyOf(client.store);
  const { spans, cpu } = await timedCalls(client, calls, now);
  const clientBusy = busyOf(client.store) - busyBefore;
  const exited = new Promise((resolve) => child.once("message", resolve));
  child.send("stop");
  const worker = await exited;
  await client.close();
  rmSync(dir, { recursive: true, force: true });

  const { add, print: printHops } = hopMedians();
  for (const { started, ended, submit, claim, handler, complete, wake, doneWake } of callEvents(log, worker.log, spans)) {
    add("the whole call()", ended - started);
    add("client: submit", submit[3] - submit[2]);
    add("worker: submit's end → its claim wait ends", Math.max(0, (wake?.[3] ?? submit[3]) - submit[3]));
    add("worker: → claim starts (probe included in claim)", claim[2] - (wake?.[3] ?? submit[3]));
    add("worker: claim", claim[3] - claim[2]);
    add("worker: claim's end → handler", handler[2] - claim[3]);
    add("worker: handler → complete starts", complete[2] - handler[2]);
    add("client: complete starts → its done wait ends", (doneWake?.[3] ?? complete[2]) - complete[2]);
    add("client: done wait's end → call() returns", ended - (doneWake?.[3] ?? complete[2]));
  }
  const runtime = process.versions.bun === undefined ? `Node ${process.version}` : `Bun ${process.versions.bun}`;
  console.log(`${calls} sequential call()s, ${runtime}, driver ${client.store.driver ?? driver ?? "default"}; medians in µs:`);
  printHops();
  const reads = (name) => (log.filter((e) => e[0] === name).length / calls).toFixed(2);
  console.log(`  client reads per call: getStatus ${reads("getStatus")}, get ${reads("get")}`);
  console.log(`  CPU per call: client ${(cpu.user + cpu.system) / calls | 0} µs, worker ${worker.cpuUs / calls | 0} µs`);
  console.log(`  SQLITE_BUSY retries: client ${clientBusy} (timed calls), worker ${worker.busy} (same calls)`);
}
