// Where a MySQL call() to an idle worker in another process spends its time: a client in this process
// makes sequential call()s to a worker in a child process on a fresh database; both stamp their store
// calls on the shared clock (performance.timeOrigin + now) and the medians of each hop are printed, with
// the CPU time per call of each process. Diagnostic only, not part of the bench table; on a loaded machine
// read the hops against each other, not against another run.
//
//   CAIRNQ_BENCH_MYSQL_DSN=mysql://root@127.0.0.1:3306/test node bench/call-timeline-mysql.mjs [--calls 300]
import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { CairnQ, MySQLStore, Worker } from "cairnq";
import { mysqlBackend } from "./lib/mysql-backend.mjs";
import { sharedNow, stampMethods } from "./lib/stamp-methods.mjs";
import { callEvents, hopMedians, timedCalls } from "./lib/call-events.mjs";

const { values } = parseArgs({ options: { calls: { type: "string", default: "300" }, child: { type: "string" } } });
const log = [];
const stamp = (names) => stampMethods(MySQLStore, names, log);

if (values.child !== undefined) {
  stamp(["claim", "claimWake", "complete", "completeRef"]);
  const worker = Worker.mysql(values.child);
  worker.task("noop", () => {
    const at = sharedNow();
    log.push(["handler", at, at]);
    return null;
  });
  const running = worker.run();
  let mark = null;
  process.on("message", async (message) => {
    if (message === "mark") {
      mark = process.cpuUsage();
      log.length = 0;
      return;
    }
    const cpu = process.cpuUsage(mark ?? undefined);
    await worker.stop();
    await running;
    await worker.close();
    process.send({ log, cpuUs: cpu.user + cpu.system }, () => process.disconnect());
  });
  process.send("ready");
} else {
  const calls = Number(values.calls);
  const { target, cleanup } = await mysqlBackend.fresh("timeline");
  const client = CairnQ.mysql(target.dsn);
  await client.connect();
  stamp(["submit", "getStatus", "get", "taskDoneWake"]);
  const child = fork(fileURLToPath(import.meta.url), ["--child", target.dsn]);
  await new Promise((resolve) => child.once("message", resolve));
  for (let i = 0; i < 20; i += 1) await client.call("noop", {});
  child.send("mark");
  await new Promise((resolve) => setTimeout(resolve, 20));
  log.length = 0;
  const { spans, cpu } = await timedCalls(client, calls, sharedNow);
  const exited = new Promise((resolve) => child.once("message", resolve));
  child.send("stop");
  const worker = await exited;
  await client.close();
  await cleanup();

  const { add, print: printHops } = hopMedians();
  for (const { started, ended, submit, claim, handler, complete, wake, doneWake } of callEvents(log, worker.log, spans)) {
    add("the whole call()", ended - started);
    add("client: submit", submit[3] - submit[2]);
    add("worker: submit's end → its claim wait ends", Math.max(0, (wake?.[3] ?? submit[3]) - submit[3]));
    add("worker: → claim starts", claim[2] - Math.max(wake?.[3] ?? submit[3], submit[3]));
    add("worker: claim", claim[3] - claim[2]);
    add("worker: claim's end → handler", handler[2] - claim[3]);
    add("worker: handler → complete starts", complete[2] - handler[2]);
    add("worker: complete", complete[3] - complete[2]);
    add("client: complete's end → its done wait ends", Math.max(0, (doneWake?.[3] ?? complete[3]) - complete[3]));
    add("client: done wait's end → call() returns", ended - (doneWake?.[3] ?? complete[3]));
  }
  console.log(`${calls} sequential call()s on MySQL, Node ${process.version}; medians in µs:`);
  printHops();
  const count = (side, name) => ((side === "client" ? log : worker.log).filter((e) => e[0] === name).length / calls).toFixed(2);
  console.log(`  per call: client get ${count("client", "get")}, getStatus ${count("client", "getStatus")}, taskDoneWake ${count("client", "taskDoneWake")}; worker claim ${count("worker", "claim")}, claimWake ${count("worker", "claimWake")}`);
  console.log(`  CPU per call: client ${((cpu.user + cpu.system) / calls) | 0} µs, worker ${(worker.cpuUs / calls) | 0} µs`);
}
