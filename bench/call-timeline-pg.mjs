// Where a Postgres call() to an idle worker in another process spends its time: a client in this process
// makes sequential call()s to an idle worker in a child process (default options on both), both on a
// fresh schema of their own; both stamp their store calls and every NOTIFY their LISTEN connection
// receives on the shared clock (performance.timeOrigin + now), and count what they send: round trips
// (Syncs of the extended protocol plus simple queries) and statements (Executes plus simple queries).
// Prints the median of each hop, the round trips and statements per call of each process, and each
// process's CPU time and allocated bytes per call. Diagnostic only, not part of the bench table.
//
//   CAIRNQ_BENCH_PG_DSN=postgres://postgres@127.0.0.1:5432/mydb node bench/call-timeline-pg.mjs [--calls 1000]
import { fork } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import v8 from "node:v8";
import { timedCalls } from "./lib/call-events.mjs";
import { sharedNow, stampMethods } from "./lib/stamp-methods.mjs";
import { CairnQ, PostgresStore, Worker } from "cairnq";

const { values } = parseArgs({ options: { calls: { type: "string", default: "1000" }, child: { type: "string" } } });
const DSN = process.env.CAIRNQ_BENCH_PG_DSN ?? "postgres://postgres@127.0.0.1:5432/test";
const now = sharedNow;
/** [event, start, end] of every stamped call and notification in this process. */
const log = [];
const sent = { roundTrips: 0, statements: 0 };
/** What each `pg.Client#query` sent (a pipeline as its statements), by its text's start: counts. */
const statementsSent = new Map();
/** A statement's text cut to its start (memoized: the instrumentation should not allocate per query). */
const shortened = new Map();
const short = (sql) => {
  let cut = shortened.get(sql);
  if (cut === undefined) shortened.set(sql, (cut = String(sql).replace(/\s+/g, " ").slice(0, 60)));
  return cut;
};

/**
 * Every backend of this database but `admin`'s own, with its voluntary context switches so far (each
 * is one sleep it woke from: a statement to run, a notification to read) and its last statement; a
 * backend that went since is left out.
 */
async function backendWakeups(admin) {
  const { rows } = await admin.query("SELECT pid, query FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()");
  const out = new Map();
  for (const { pid, query } of rows) {
    try {
      const switches = Number(/voluntary_ctxt_switches:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]);
      out.set(pid, { switches, waitNs: runQueueWaitNs(pid), query: String(query).replace(/\s+/g, " ").slice(0, 40) });
    } catch {
      // Not on this host (a remote server), or gone.
    }
  }
  return out;
}

/**
 * Nanoseconds the main thread of process `pid` has spent runnable but waiting for a CPU (the second
 * field of /proc/<pid>/schedstat), or NaN where the kernel does not say.
 */
function runQueueWaitNs(pid) {
  try {
    return Number(readFileSync(`/proc/${pid}/schedstat`, "utf8").split(" ")[1]);
  } catch {
    return Number.NaN;
  }
}

/** Wraps `names` on PostgresStore's prototype chain so every call is stamped into `log`. */
const stamp = (names) => stampMethods(PostgresStore, names, log);

/** Counts what pg writes and stamps the notifications it delivers (the pg the store loads: resolved from @cairnq/store-postgres). */
function instrumentPg() {
  const pg = pgDriver;
  const Connection = storeRequire("pg/lib/connection.js");
  const { sync, query, execute } = Connection.prototype;
  Connection.prototype.sync = function countedSync(...args) {
    sent.roundTrips += 1;
    return sync.apply(this, args);
  };
  Connection.prototype.query = function countedQuery(...args) {
    sent.roundTrips += 1;
    sent.statements += 1;
    return query.apply(this, args);
  };
  Connection.prototype.execute = function countedExecute(...args) {
    sent.statements += 1;
    return execute.apply(this, args);
  };
  const clientQuery = pg.Client.prototype.query;
  pg.Client.prototype.query = function namedQuery(config, ...rest) {
    const text = typeof config === "string" ? config : config?.text;
    const pipelined = text === "/* cairnq: pipelined statements */" && Array.isArray(rest[0]?.[0]) ? rest[0][0] : null;
    const key = pipelined === null ? short(text) : `[${pipelined.map((st) => short(st.sql)).join(" | ")}]`;
    statementsSent.set(key, (statementsSent.get(key) ?? 0) + 1);
    if (process.env.TIMELINE_QUERIES === "1") log.push([`query ${config?.constructor?.name === "Pipelined" ? "pipeline" : key.slice(0, 40)}`, now(), now()]);
    return clientQuery.call(this, config, ...rest);
  };
  // Garbage collections on the shared clock, so the slowest calls can be matched to the pauses in either process.
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) log.push(["gc", performance.timeOrigin + entry.startTime, performance.timeOrigin + entry.startTime + entry.duration]);
  }).observe({ entryTypes: ["gc"] });
  const emit = pg.Client.prototype.emit;
  pg.Client.prototype.emit = function stampedEmit(event, ...args) {
    if (event === "notification") log.push([`notify ${args[0]?.channel}`, now(), now()]);
    return emit.call(this, event, ...args);
  };
}

/**
 * With TIMELINE_HEAP=<file prefix>: V8's sampling heap profiler over the timed calls, collected objects
 * included, so the profile shows where the bytes of each call are allocated; written as
 * `<prefix>-<pid>.heapprofile` (open in Chrome DevTools, or sum `selfSize` by function).
 */
async function heapSampler() {
  const prefix = process.env.TIMELINE_HEAP;
  if (prefix === undefined) return async () => {};
  const { Session } = await import("node:inspector/promises");
  const { writeFileSync } = await import("node:fs");
  const session = new Session();
  session.connect();
  await session.post("HeapProfiler.startSampling", { samplingInterval: 512, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
  return async () => {
    const { profile } = await session.post("HeapProfiler.stopSampling");
    writeFileSync(`${prefix}-${process.pid}.heapprofile`, JSON.stringify(profile));
    session.disconnect();
  };
}

/** Bytes allocated since the last call (heap used now + what GCs freed since), from v8's heap statistics. */
function allocationMeter() {
  const profiler = new v8.GCProfiler();
  profiler.start();
  const start = v8.getHeapStatistics().used_heap_size;
  return () => {
    const { statistics } = profiler.stop();
    const freed = statistics.reduce((sum, gc) => sum + (gc.beforeGC.heapStatistics.usedHeapSize - gc.afterGC.heapStatistics.usedHeapSize), 0);
    return { bytes: v8.getHeapStatistics().used_heap_size - start + freed, gcs: statistics.length };
  };
}

// The bench's pg is the store's (one version in the lockfile, one copy in node_modules/.pnpm).
const storeRequire = createRequire(import.meta.url);
const pgDriver = storeRequire("pg");
instrumentPg();

if (values.child !== undefined) {
  stamp(["claim", "completeRef", "complete", "claimWake"]);
  const worker = Worker.postgres(DSN, { schema: values.child });
  worker.task("noop", () => {
    log.push(["handler", now(), now()]);
    return null;
  });
  const running = worker.run();
  let mark = null;
  let sentAtMark = null;
  let waitAtMark = 0;
  let alloc = null;
  let heap = async () => {};
  process.on("message", async (message) => {
    if (message === "mark") {
      heap = await heapSampler();
      mark = process.cpuUsage();
      waitAtMark = runQueueWaitNs(process.pid);
      sentAtMark = { ...sent };
      alloc = allocationMeter();
      log.length = 0;
      statementsSent.clear();
      return;
    }
    const cpu = process.cpuUsage(mark ?? undefined);
    const waitNs = runQueueWaitNs(process.pid) - waitAtMark;
    const allocated = alloc();
    await heap();
    const counts = { roundTrips: sent.roundTrips - sentAtMark.roundTrips, statements: sent.statements - sentAtMark.statements };
    await worker.stop();
    await running;
    await worker.close();
    // Disconnect once the message is out: a large one (2,000 calls' events) still in the pipe is dropped by an
    // immediate disconnect, and the parent then exits with its top-level await unsettled.
    process.send({ log, waitNs, cpuUs: cpu.user + cpu.system, systemUs: cpu.system, counts, allocated, statements: [...statementsSent] }, () => process.disconnect());
  });
  process.send("ready");
} else {
  const calls = Number(values.calls);
  const schema = `cairnq_timeline_${process.pid}`;
  const client = CairnQ.postgres(DSN, { schema });
  await client.connect();
  stamp(["submit", "getStatus", "get", "taskDoneWake"]);
  const child = fork(fileURLToPath(import.meta.url), ["--child", schema]);
  await new Promise((resolve) => child.once("message", resolve));
  for (let i = 0; i < 50; i += 1) await client.call("noop", {});
  child.send("mark");
  await new Promise((resolve) => setTimeout(resolve, 20));
  log.length = 0;
  const admin = new pgDriver.Client(DSN);
  await admin.connect();
  const wakeupsFrom = await backendWakeups(admin);
  const heap = await heapSampler();
  const sentFrom = { ...sent };
  statementsSent.clear();
  const alloc = allocationMeter();
  const clientWaitFrom = runQueueWaitNs(process.pid);
  const { spans, cpu } = await timedCalls(client, calls, now);
  const clientWaitNs = runQueueWaitNs(process.pid) - clientWaitFrom;
  const allocated = alloc();
  await heap();
  const counts = { roundTrips: sent.roundTrips - sentFrom.roundTrips, statements: sent.statements - sentFrom.statements };
  const wakeupsTo = await backendWakeups(admin);
  const exited = new Promise((resolve) => child.once("message", resolve));
  child.send("stop");
  const worker = await exited;
  await client.close();
  await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await admin.end();

  const all = [...log.map((e) => ["client", ...e]), ...worker.log.map((e) => ["worker", ...e])].sort((a, b) => a[2] - b[2]);
  const hops = new Map();
  /** Each traced call: its whole time and each hop's (µs), for the tail's breakdown. */
  const traced = [];
  let current = null;
  const add = (hop, ms) => {
    hops.set(hop, [...(hops.get(hop) ?? []), ms * 1000]);
    current.hops.set(hop, ms * 1000);
  };
  const totals = [];
  for (const [started, ended] of spans) {
    const inCall = all.filter((e) => e[2] >= started && e[2] <= ended);
    const find = (side, name, after = -Infinity) => inCall.find((e) => e[0] === side && e[1] === name && e[2] >= after);
    const submit = find("client", "submit");
    if (submit === undefined) continue;
    const queued = find("worker", "notify cairnq_queued", submit[2]);
    const claim = find("worker", "claim", submit[2]);
    const handler = find("worker", "handler");
    const complete = find("worker", "completeRef") ?? find("worker", "complete");
    if (claim === undefined || handler === undefined || complete === undefined) continue;
    // The done-row notification (the terminal row; no read after it) comes just before the plain one when sent.
    const done = find("client", "notify cairnq_ext_done_row", complete[2]) ?? find("client", "notify cairnq_done", complete[2]);
    const get = find("client", "get", complete[2]);
    if (queued === undefined || done === undefined) continue;
    totals.push(ended - started);
    current = { started, ended, whole: (ended - started) * 1000, hops: new Map(), gc: all.some((e) => e[1] === "gc" && e[3] >= started && e[2] <= ended) };
    traced.push(current);
    add("client: submit (its round trip)", submit[3] - submit[2]);
    add("submit's commit → worker hears cairnq_queued (≤ 0: before the client hears its commit)", queued[2] - submit[3]);
    add("worker: heard queued → claim starts", claim[2] - queued[2]);
    add("worker: claim (its round trips)", claim[3] - claim[2]);
    add("worker: claim's end → handler", handler[2] - claim[3]);
    add("worker: handler → complete starts", complete[2] - handler[2]);
    add("worker: complete (its round trips)", complete[3] - complete[2]);
    add(`complete's commit → client hears ${done[1].slice(7)} (≤ 0: before the worker hears its commit)`, done[2] - complete[3]);
    if (get === undefined) {
      add("client: heard the done row → call() returns (no read)", ended - done[2]);
      continue;
    }
    add("client: heard done → get starts", get[2] - done[2]);
    add("client: get (its round trip)", get[3] - get[2]);
    add("client: get's end → call() returns", ended - get[3]);
  }
  if (process.env.TIMELINE_QUERIES === "1") {
    const [started, ended] = spans[Math.floor(spans.length / 2)];
    for (const e of all.filter((x) => x[2] >= started - 2 && x[2] <= ended + 2)) console.log(`  ${((e[2] - started) * 1000).toFixed(0).padStart(7)} ${((e[3] - e[2]) * 1000).toFixed(0).padStart(6)}  ${e[0]} ${e[1]}`);
  }
  const quantile = (samples, q) => [...samples].sort((a, b) => a - b)[Math.min(samples.length - 1, Math.floor(samples.length * q))];
  console.log(`${calls} sequential call()s on Postgres (${totals.length} fully traced), Node ${process.version}; µs:`);
  console.log(`  ${"hop".padEnd(90)} ${"p50".padStart(7)} ${"p99".padStart(7)}`);
  const whole = spans.map(([started, ended]) => (ended - started) * 1000);
  console.log(`  ${"the whole call() (every call)".padEnd(90)} ${quantile(whole, 0.5).toFixed(0).padStart(7)} ${quantile(whole, 0.99).toFixed(0).padStart(7)}`);
  for (const [hop, samples] of hops) console.log(`  ${hop.padEnd(90)} ${quantile(samples, 0.5).toFixed(0).padStart(7)} ${quantile(samples, 0.99).toFixed(0).padStart(7)}`);
  // The slowest 1% of the traced calls: where their time went beyond each hop's median, and how many overlapped a GC pause.
  const tail = [...traced].sort((a, b) => b.whole - a.whole).slice(0, Math.max(1, Math.ceil(traced.length / 100)));
  const medianOf = (samples) => quantile(samples, 0.5);
  console.log(`  the slowest 1% (${tail.length} calls, from ${tail[tail.length - 1].whole.toFixed(0)} µs): mean µs beyond each hop's median; ${tail.filter((c) => c.gc).length} overlapped a GC (all calls: ${traced.filter((c) => c.gc).length})`);
  for (const [hop, samples] of hops) {
    const median = medianOf(samples);
    const excess = tail.reduce((sum, c) => sum + Math.max(0, (c.hops.get(hop) ?? median) - median), 0) / tail.length;
    if (excess >= 50) console.log(`    ${excess.toFixed(0).padStart(7)}  ${hop}`);
  }
  const reads = (name) => (log.filter((e) => e[0] === name).length / calls).toFixed(2);
  console.log(`  client reads per call: getStatus ${reads("getStatus")}, get ${reads("get")}`);
  const clientStatements = [...statementsSent];
  for (const [side, list] of [["client", clientStatements], ["worker", worker.statements]]) {
    console.log(`  ${side} queries per call:`);
    for (const [sql, count] of list.sort((a, b) => b[1] - a[1]).slice(0, 12)) console.log(`    ${(count / calls).toFixed(2).padStart(6)}  ${sql}`);
  }
  const per = (n) => (n / calls).toFixed(2);
  // Wake-ups per call of each backend of the database (other sessions on it count too: run it alone).
  const woken = [...wakeupsTo]
    .filter(([pid]) => wakeupsFrom.has(pid))
    .map(([pid, to]) => [to.query, (to.switches - wakeupsFrom.get(pid).switches) / calls, (to.waitNs - wakeupsFrom.get(pid).waitNs) / calls / 1000]);
  console.log(`  backend wake-ups per call (voluntary context switches; ${woken.length} backends, total ${woken.reduce((sum, [, n]) => sum + n, 0).toFixed(2)}):`);
  for (const [query, n, waitUs] of woken.sort((a, b) => b[1] - a[1])) console.log(`    ${n.toFixed(2).padStart(6)}  (run-queue wait ${waitUs.toFixed(0)} µs/call)  last: ${query}`);
  // Time runnable but without a CPU, per call: the machine's load as each process of the call felt it.
  const backendWaitUs = woken.reduce((sum, [, , waitUs]) => sum + waitUs, 0);
  console.log(
    `  run-queue wait per call: backends ${backendWaitUs.toFixed(0)} µs, client ${(clientWaitNs / calls / 1000).toFixed(0)} µs, worker ${(worker.waitNs / calls / 1000).toFixed(0)} µs (main threads)`,
  );
  console.log(`  round trips / statements per call: client ${per(counts.roundTrips)} / ${per(counts.statements)}, worker ${per(worker.counts.roundTrips)} / ${per(worker.counts.statements)}`);
  console.log(
    `  CPU per call (of which system): client ${((cpu.user + cpu.system) / calls) | 0} µs (${(cpu.system / calls) | 0}), worker ${(worker.cpuUs / calls) | 0} µs (${(worker.systemUs / calls) | 0})`,
  );
  console.log(
    `  allocated per call: client ${(allocated.bytes / calls / 1024).toFixed(1)} KiB (${allocated.gcs} GCs), worker ${(worker.allocated.bytes / calls / 1024).toFixed(1)} KiB (${worker.allocated.gcs} GCs)`,
  );
}
