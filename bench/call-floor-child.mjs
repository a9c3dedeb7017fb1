// The worker side of the raw cross-process call floor (`crossProcessCallFloor` in lib/sqlite-backend.mjs):
// better-sqlite3 alone, on the protocol v1 schema, with the store's writer settings. After each commit by
// another process it claims (the drain floor's one-statement claim) and completes (each its own commit)
// until nothing is left.
//
//   argv[2] = the database file
//   child → parent: "ready" once watching; parent → child: "stop"
import { createRequire } from "node:module";
import { watchCommits } from "./lib/commit-watch.mjs";
import { PROTOCOL } from "./lib/sqlite-backend.mjs";

const Database = createRequire(import.meta.url)("better-sqlite3");
const file = process.argv[2];
const db = new Database(file);
db.pragma("journal_mode = WAL");
db.pragma("synchronous = NORMAL");
db.pragma("temp_store = MEMORY");
db.pragma("foreign_keys = ON");
const claim = db.prepare(PROTOCOL.claim);
const complete = db.prepare(PROTOCOL.complete);
const workerId = "worker_floor";
const stop = watchCommits(file, db, () => {
  for (;;) {
    const [row] = claim.all({ workerId, now: Date.now(), limit: 1 });
    if (row === undefined) return;
    complete.run({ result: null, now: Date.now(), id: row.id, workerId });
  }
});
// The watch does not keep the process alive; the IPC channel does, until the parent says stop.
process.on("message", () => {
  stop();
  db.close();
  process.disconnect();
});
process.send("ready");
