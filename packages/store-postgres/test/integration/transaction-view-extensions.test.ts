/**
 * The extension tables through a `withTransaction` view on Postgres, whose DDL
 * is transactional: the first grouped or debounced submit or send creates its
 * tables in the caller's transaction, so they and everything else roll back
 * with it; and a retry or retryable fail through a view marks a grouped task's
 * row `requeued` with the transition, so a group claim takes it back in its
 * group's turn (docs/protocol.md, "Groups"). The scenarios are test-support's,
 * shared with SQLite and MariaDB.
 */
import { runViewExtensionsRollback, runViewRequeueMarks } from "@cairnq/test-support/transaction-view-extensions";
import { Kysely, PostgresDialect } from "kysely";
import { describe, it } from "vitest";
import type { PostgresStore } from "../../src/index.js";
import { openStore, pgDsn, poolFor } from "../helpers.js";

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the app's tables are created by the test.
type AnyDb = Kysely<any>;

/** A store on a fresh schema and the app's own Kysely instance on it (closed after the test with the pool). */
async function fresh(): Promise<{ store: PostgresStore; app: AnyDb }> {
  const store = openStore();
  await store.connect();
  return { store, app: new Kysely({ dialect: new PostgresDialect({ pool: poolFor(store.schema as string) }) }) };
}

describe("withTransaction and the extension tables on Postgres", () => {
  it("a rollback after the first grouped submit (in completeIn's transaction too), debounced submit and send on a fresh schema leaves no task, message or app row; a commit keeps them", async () => {
    const { store, app } = await fresh();
    await runViewExtensionsRollback({ store, app, inTransaction: (_store, fn) => app.transaction().execute(fn) });
  });

  it("retry, retryBatch and fail through a view of a store that never used groups mark the grouped task's row requeued when the caller commits (untouched on rollback); a group claim takes it in its group's turn", async () => {
    const { store, app } = await fresh();
    // A second store on the schema, which never used groups: its views learn that the group tables exist.
    const other = (): PostgresStore => openStore(pgDsn(), { schema: store.schema as string });
    await runViewRequeueMarks({ store, app, inTransaction: (_store, fn) => app.transaction().execute(fn), other });
  });
});
