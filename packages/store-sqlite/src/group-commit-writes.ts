import type { AnyKysely, BatchableWrite, BatchedWriter, StoreExecutor, WriteBatching } from "@cairnq/store-kysely";
import type { SQLiteConnection } from "./sqlite-connection.js";
import type { MergeableWrite } from "./write-queue.js";

/**
 * Items in one merged run at most: past 64 rows a statement saves nothing
 * more, and the run holds the write lock (and the event loop) while it runs.
 */
const MERGED_ROWS = 64;
/** Bytes of parameters (payloads, results, errors) in one merged run at most; a larger item runs alone. */
const MERGED_BYTES = 1 << 20;

/**
 * The SQLite store's write batching: every batchable write is a statement job
 * of the file's write queue, so it joins the group commit of whatever is
 * pending, and adjacent writes of one kind in that group commit run as one
 * merged run (`kind.manyLocked`: one multi-row insert for submits; for owned
 * writes each `UPDATE` without `RETURNING` and one read of the changed rows)
 * inside its own savepoint — with no added wait. Alone, or when the merged run
 * fails, each write runs its single-row statement (`kind.one`), so every
 * caller gets exactly what its own statement gives. See `write-queue.ts`.
 *
 * @example
 * override readonly writes = new GroupCommitWrites(this.connection);
 */
export class GroupCommitWrites implements WriteBatching {
  /** @param connection - The store's connections, whose write queue runs the writes. */
  constructor(private readonly connection: SQLiteConnection) {}

  /** The writer of `kind` through the write queue; `db` and `executor` are unused (the queue runs on the connection's writer). */
  writer<I, O>(_db: AnyKysely, _executor: StoreExecutor, kind: BatchableWrite<I, O>): BatchedWriter<I, O> {
    const write: MergeableWrite<I, O> = {
      one: (run, item) => {
        const plan = kind.one(item);
        return plan.answer(run(plan.query));
      },
      many: (run, items) => kind.manyLocked(run, items),
      maxRows: MERGED_ROWS,
      maxBytes: MERGED_BYTES,
      bytes: (item) => kind.bytes(item),
    };
    const c = this.connection;
    return (item) => {
      const result = c.queue.mergeable(c, write, item);
      c.maybeRefreshStatistics();
      return result;
    };
  }
}
