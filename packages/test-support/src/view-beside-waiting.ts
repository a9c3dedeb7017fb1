/**
 * A `withTransaction` view's keyed submit must not wait behind a store submit
 * of the same key that itself waits for the key lock the caller's transaction
 * holds: each view keeps its own issue order of keyed submits
 * (store-kysely's `KeyTurns`), or the two would deadlock. Shared by the
 * integration tests of store-postgres and store-mysql, whose stores hand out a
 * Kysely of their own (`store.db`) to open that transaction on.
 */
import type { Task, TransactionalTaskStore } from "@cairnq/protocol";

/** A store with views on the caller's transaction and a Kysely of its own to open one (PostgresStore, MySQLStore). */
export type StoreWithKysely = TransactionalTaskStore & {
  readonly db: { transaction(): { execute<T>(callback: (trx: unknown) => Promise<T>): Promise<T> } };
};

/** What {@link runViewBesideWaitingSubmit} saw. */
export interface ViewBesideWaitingReport {
  /** The id of the store's submit, which waited for the caller's transaction. */
  readonly outsideId: string;
  /** The id of the view's second submit, inside that transaction. */
  readonly viewId: string;
  /** The key's task afterwards. */
  readonly final: Task | null;
}

/**
 * Inside one transaction, the view replaces `{ n: 1 }` with `{ n: 3 }` while
 * the store's `{ n: 2 }` waits for the key lock; once the transaction commits,
 * the store's replaces it. A deadlock times the calling test out. Uses the key
 * `k` and the name `n`: run it on a store (a database or schema) of its own.
 *
 * @example
 * const { outsideId, viewId, final } = await runViewBesideWaitingSubmit(store);
 * expect(final).toMatchObject({ id: outsideId, payload: { n: 2 } });
 */
export async function runViewBesideWaitingSubmit(store: StoreWithKysely): Promise<ViewBesideWaitingReport> {
  const outside: Promise<Task>[] = [];
  let viewId = "";
  await store.db.transaction().execute(async (trx) => {
    const view = store.withTransaction(trx);
    await view.submit({ name: "n", key: "k", conflict: "replace", payload: { n: 1 } });
    // Waits for the key lock the caller's transaction holds.
    outside.push(store.submit({ name: "n", key: "k", conflict: "replace", payload: { n: 2 } }));
    viewId = (await view.submit({ name: "n", key: "k", conflict: "replace", payload: { n: 3 } })).id;
  });
  const [waited] = await Promise.all(outside);
  return { outsideId: (waited as Task).id, viewId, final: await store.getByKey("k") };
}
