/**
 * The error a store's first submit fails with, for tests of connect failures
 * (a database that does not exist, a refused login, a refused connection):
 * the submit opens the store's first connection. Shared by store-postgres's
 * and store-mysql's connect-error tests.
 */
import type { TaskStore } from "@cairnq/protocol";

/**
 * Submits once on `store`, closes it whatever happens, and resolves with what
 * the submit threw; rejects when the submit succeeded.
 *
 * @example
 * const err = await firstSubmitFailure(new PostgresStore(dsnOfAMissingDatabase));
 * expect(err).toBeInstanceOf(DatabaseUnusable);
 */
export async function firstSubmitFailure(store: TaskStore): Promise<unknown> {
  try {
    await store.submit({ name: "n" });
  } catch (err) {
    return err;
  } finally {
    await store.close();
  }
  throw new Error("expected the submit to fail");
}
