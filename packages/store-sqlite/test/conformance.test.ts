import { join } from "node:path";
import { runConformance } from "@cairnq/conformance/vitest";
import { SQLiteStore } from "@cairnq/store-sqlite";

// The whole behavioral suite, through the kit's public entry, exactly as a
// third-party store would run it: a fresh database file per case.
runConformance({
  name: "SQLiteStore",
  createStore: (ctx) => new SQLiteStore(join(ctx.tempDir, "cairnq.db")),
  // A second store on the same file, for the cases that race two instances.
  createPeerStore: (ctx) => new SQLiteStore(join(ctx.tempDir, "cairnq.db")),
  // completeIn (ctx.succeedIn) and withTransaction: the caller's writes and the store's in one transaction.
  capabilities: {
    transactionalComplete: true,
    flowControl: true,
    schedules: true,
    completeRef: true,
    claimReprobe: true,
    claimWakeOnQueued: true,
    taskDoneWakeReads: true,
    durableSteps: true,
    queueHealth: true,
    groups: true,
  },
});
