/**
 * The LISTEN connection as a lane for the store's own writes: an autocommit
 * write (a submit, a settlement, a heartbeat: one statement, or one
 * combined multi-row statement) runs on the process's LISTEN connection
 * whenever that connection is listening and has no statement of the store's
 * in flight; otherwise on the pool, as before.
 *
 * Why: Postgres (15 here) signals every LISTENing backend of the database at
 * each commit that NOTIFYs, whatever the channel, except the committing
 * backend itself, which delivers its own notifications at commit without a
 * signal. A client's submit NOTIFYs `cairnq_queued`, a worker's settlement
 * `cairnq_done`: sent through the pool, each woke the sender's own LISTEN
 * backend for nothing it listens to (or for what its sender already knows).
 * Sent on the LISTEN connection, that wake-up is gone, and a process
 * whose calls are sequential runs them on the one backend that is awake
 * anyway. Measured with `bench/call-timeline-pg.mjs` (see bench/README.md).
 *
 * Where it applies: only when the LISTEN connection is the pool's own
 * connection settings (a connection string, `listen` not given) — the
 * same server, the same `search_path` (the `schema` option), the same
 * timeouts. With a `listen` of its own (the PgBouncer split: LISTEN direct,
 * the pool through the pooler), with a caller's `pg.Pool` (whose `connect`
 * hooks the LISTEN connection never ran) or a Kysely instance, every
 * statement stays on the pool. Never for reads (a long one would hold back
 * notifications: the backend delivers them only between statements), never
 * for transactions of more than one round trip or statements that wait on a
 * lock by design (keyed submits' key lock, `completeIn`, `withTransaction`
 * views), and never for the LISTEN check's own NOTIFY (it runs while the
 * connection is still being proven, when the lane is closed). A write lent
 * the connection may still wait on a row lock held elsewhere, within its
 * read timeout, as on the pool; the liveness ping waits its turn.
 */
import type { QueryResult } from "kysely";
import { CompiledQuery } from "kysely";
import type { Row } from "@cairnq/store-kysely";
import type { ListenClient, ListenLoan } from "./postgres-wakeups.js";
import { destroySocket } from "./postgres-socket.js";
import { runOnClient } from "./postgres-direct.js";
import type { DirectClient } from "./postgres-direct.js";
import { isReadOnly, isReadTimeout } from "./postgres-pool.js";

const ROLLBACK = CompiledQuery.raw("ROLLBACK");

/**
 * Lends the LISTEN connection to one statement at a time (see the module comment).
 *
 * @example
 * const lane = new ListenLane(() => wakeups.lend(), () => wakeups.listeningClient);
 * const answer = lane.tryWrite(query) ?? runDirect(pool, query);
 */
export class ListenLane {
  /** A LISTEN connection found suspect (see {@link ListenLane.suspect}): never lent again. */
  #suspect: object | null = null;
  /** Statements this lane ran (for tests and diagnostics). */
  ran = 0;

  /**
   * @param lend - Lends the LISTEN connection while it is listening and idle (`PostgresWakeups#lend`), else `null`.
   * @param current - The LISTEN connection while listening, else `null` (for {@link ListenLane.suspect}).
   * @param onDead - Told when a statement on the LISTEN connection hit its read timeout (the store drops the pool's idle connections).
   * @param onReadOnly - Told when a write on the LISTEN connection found the server read-only (SQLSTATE 25006): the store
   *   drops the pool's idle connections and reports it, as when a pooled connection finds it.
   */
  constructor(
    private readonly lend: () => ListenLoan | null,
    private readonly current: () => ListenClient | null,
    private readonly onDead: () => void = () => {},
    private readonly onReadOnly: (error: unknown) => void = () => {},
  ) {}

  /**
   * Runs `query` on the LISTEN connection when it is listening and free, answering as Kysely's
   * driver would; `null` when it is not (the caller runs it on the pool). A statement that hits
   * its read timeout destroys the connection (the wakeups reconnect, as after any drop).
   * `transaction`: `query` is a whole transaction in one round trip (a pipeline from `BEGIN` to
   * `COMMIT`); when it fails, `ROLLBACK` follows before the connection is free again.
   */
  tryWrite(query: CompiledQuery<unknown>, options: { readonly transaction?: boolean } = {}): Promise<QueryResult<Row>> | null {
    if (this.#suspect !== null && this.#suspect === this.current()) return null;
    const loan = this.lend();
    if (loan === null) return null;
    const client = loan.client as DirectClient & ListenClient;
    this.ran += 1;
    // The LISTEN socket is unref'd (an accelerator never holds a process open); a statement on it must.
    client.ref?.();
    const release = (): void => {
      loan.release();
      // Unref'd again only while it is still the listening connection (a dropped one is being ended).
      if (this.current() === client) client.unref?.();
    };
    return runOnClient(client, query).then(
      (result) => {
        release();
        return result;
      },
      async (error: unknown) => {
        if (isReadTimeout(error)) {
          destroySocket(client);
          // The pool's idle connections went the same way: drop them too, so the next write does not wait out another timeout.
          this.onDead();
        } else {
          if (isReadOnly(error) && this.#suspect !== client) {
            // A read-only session stays read-only for as long as it lives (a LISTEN connection reopened during a failover
            // reached the standby): lent again, it would fail every write while the pool's fresh connections take them.
            this.#suspect = client;
            this.onReadOnly(error);
          }
          // A transaction that failed half-way stays open and aborted until ROLLBACK (outside one, ROLLBACK only warns),
          // and an open transaction holds back every notification the connection is there to deliver.
          // A ROLLBACK that timed out leaves it unanswered on a path gone dark: destroyed as the pool destroys such a connection.
          if (options.transaction === true) await runOnClient(client, ROLLBACK).catch((rollbackError: unknown) => this.#onRollbackFailed(client, rollbackError));
        }
        release();
        throw error;
      },
    );
  }

  /** The ROLLBACK after a failed transaction failed too: only its read timeout matters (the caller hears the transaction's error). */
  #onRollbackFailed(client: ListenClient, error: unknown): void {
    if (!isReadTimeout(error)) return;
    destroySocket(client);
    this.onDead();
  }

  /**
   * A pooled connection opened the same way as the LISTEN connection proved dead or read-only (the
   * pool dropped its suspects): the current LISTEN connection is lent no more — it keeps listening
   * until its liveness ping or an error ends it, and the connection opened next is lent again.
   */
  suspect(): void {
    this.#suspect = this.current();
  }
}
