// The worker side of the raw cross-process call floor (`crossProcessCallFloor` in lib/sqlite-backend.mjs):
// the raw driver alone, on the protocol v1 schema, with the store's writer settings. After each commit by
// another process it claims (the drain floor's one-statement claim) and completes (each its own commit)
// until nothing is left.
//
//   argv[2] = the database file; argv[3] = the driver (JSON, see `openRawOn`), default better-sqlite3
//   child → parent: "ready" once watching; parent → child: "stop"
import { wakeSignal, watchCommits } from "./lib/commit-watch.mjs";
import { openRawOn, PROTOCOL } from "./lib/sqlite-backend.mjs";

const file = process.argv[2];
const db = openRawOn(JSON.parse(process.argv[3] ?? "null"), file);
const claim = db.prepare(PROTOCOL.claim);
const complete = db.prepare(PROTOCOL.complete);
const workerId = "worker_floor";
const signal = wakeSignal(file);
const stop = watchCommits(file, db, () => {
  for (;;) {
    const [row] = claim.all({ workerId, now: Date.now(), limit: 1 });
    if (row === undefined) return;
    complete.run({ result: null, now: Date.now(), id: row.id, workerId });
    // The complete is what the other side waits for (the claim, as the store's, signals nothing).
    signal();
  }
});
// The watch does not keep the process alive; the IPC channel does, until the parent says stop.
process.on("message", () => {
  stop();
  signal.close();
  db.close();
  process.disconnect();
});
process.send("ready");
