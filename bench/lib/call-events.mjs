// The timed calls of the call timelines (call-timeline.mjs on SQLite, -mysql, -pg) and the events of each (SQLite, MySQL):
// both sides' stamped store calls merged on the shared clock, then, per call, the client's submit, the worker's
// claim that followed it, the handler, the complete, the worker's last claim wait before that claim and the
// client's last done wait. Calls missing any of the first four are left out.

/**
 * @param {Array<[string, number, number]>} clientLog - the client's stamps: [name, started, ended]
 * @param {Array<[string, number, number]>} workerLog - the worker's stamps, on the same clock
 * @param {Array<[number, number]>} spans - each timed call's [started, ended]
 */
export function* callEvents(clientLog, workerLog, spans) {
  const all = [...clientLog.map((e) => ["client", ...e]), ...workerLog.map((e) => ["worker", ...e])].sort((a, b) => a[2] - b[2]);
  for (const [started, ended] of spans) {
    const inCall = all.filter((e) => e[2] >= started && e[2] <= ended);
    const find = (side, name) => inCall.find((e) => e[0] === side && e[1] === name);
    const submit = find("client", "submit");
    const claim = inCall.find((e) => e[0] === "worker" && e[1] === "claim" && e[2] >= (submit?.[3] ?? Infinity));
    const handler = find("worker", "handler");
    const complete = find("worker", "completeRef") ?? find("worker", "complete");
    if (submit === undefined || claim === undefined || handler === undefined || complete === undefined) continue;
    const wake = all.filter((e) => e[0] === "worker" && e[1] === "claimWake" && e[3] <= claim[2]).pop();
    const doneWake = inCall.filter((e) => e[0] === "client" && e[1] === "taskDoneWake").pop();
    yield { started, ended, submit, claim, handler, complete, wake, doneWake };
  }
}

/**
 * `calls` sequential `client.call("noop", {})`s, each stamped on `now()`: resolves with each call's
 * `[started, ended]` and this process's CPU time over them (`process.cpuUsage` difference).
 */
export async function timedCalls(client, calls, now) {
  const cpuFrom = process.cpuUsage();
  const spans = [];
  for (let i = 0; i < calls; i += 1) {
    const started = now();
    await client.call("noop", {});
    spans.push([started, now()]);
  }
  return { spans, cpu: process.cpuUsage(cpuFrom) };
}

/** Samples per hop (ms in, µs kept), printed as one median per hop in insertion order. */
export function hopMedians() {
  const hops = new Map();
  return {
    add: (hop, ms) => hops.set(hop, [...(hops.get(hop) ?? []), ms * 1000]),
    print: () => {
      for (const [hop, samples] of hops) {
        const median = [...samples].sort((a, b) => a - b)[Math.floor(samples.length / 2)];
        console.log(`  ${hop.padEnd(52)} ${median.toFixed(0).padStart(7)}`);
      }
    },
  };
}
