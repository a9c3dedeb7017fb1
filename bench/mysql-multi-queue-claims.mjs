// Two claims at once over the same queues on MariaDB, with room for every due task between them: how many rounds
// come back short (fewer tasks taken than were due). Each round submits 5 tasks (over q0 and q1, or all on q0),
// runs two concurrent claims of 3 over the round's queues, checks that no task went to both, and completes what
// they took. Not part of the table: a count, robust on a loaded machine.
//
//   node bench/mysql-multi-queue-claims.mjs [rounds=60] [dsn=$CAIRNQ_BENCH_MYSQL_DSN]
import { openStore } from "./lib/targets.mjs";

const rounds = Number(process.argv[2] ?? 60);
const dsn = process.argv[3] ?? process.env.CAIRNQ_BENCH_MYSQL_DSN ?? "mysql://root@127.0.0.1:3306/test";
const PLAN = [["q1", 9], ["q1", -1], ["q1", 1], ["q0", 1], ["q0", 1]];

async function probe(store, queues) {
  let short = 0;
  let taken = 0;
  for (let round = 0; round < rounds; round += 1) {
    for (const [queue, priority] of PLAN) await store.submit({ name: "job", queue: queues.length === 1 ? queues[0] : queue, priority, payload: null });
    const [a, b] = await Promise.all(
      ["w1", "w2"].map((workerId) => store.claim({ queues, workerId, leaseMs: 60_000, limit: 3 })),
    );
    if (a.some((row) => b.some((other) => other.id === row.id))) throw new Error(`round ${round}: a task went to both claims`);
    const rows = [...a, ...b];
    taken += rows.length;
    if (rows.length < PLAN.length) short += 1;
    for (const row of rows) await store.complete({ taskId: row.id, workerId: row.worker_id, result: null });
    // Whatever a short round left behind is taken now, so each round starts from nothing queued.
    for (;;) {
      const rest = await store.claim({ queues, workerId: "w3", leaseMs: 60_000, limit: 10 });
      if (rest.length === 0) break;
      for (const row of rest) await store.complete({ taskId: row.id, workerId: row.worker_id, result: null });
    }
  }
  return { short, taken };
}

const store = openStore({ backend: "mysql", dsn });
await store.connect();
try {
  for (const queues of [["q0", "q1"], ["q0"]]) {
    const { short, taken } = await probe(store, queues);
    console.log(`claims over ${JSON.stringify(queues)}: ${short}/${rounds} rounds short (${taken} of ${rounds * PLAN.length} due tasks taken by the pair)`);
  }
} finally {
  await store.close();
}
