/**
 * The pool as Kysely sees it: a `pg.Pool` whose connections are dropped,
 * not handed out again, once they prove unusable.
 *
 * Terminology:
 * - **dead**: a statement on the connection hit its read timeout (the path
 *   stopped carrying bytes: no FIN, no RST). Its socket is destroyed at once.
 * - **read-only**: a write on it failed with SQLSTATE 25006
 *   (`read_only_sql_transaction`): after a failover the address it was
 *   opened to now reaches a standby, or a server that refuses writes. It
 *   finishes its call (the caller's rollback still runs on it) and is
 *   dropped when released.
 * - **suspect**: the idle connections of the pool when one connection was
 *   found dead or read-only. They were opened the same way, over the same
 *   path, to the same server, so they are dropped too: otherwise each next
 *   call would find one of them out at the cost of another timeout or
 *   another failed write.
 */
import type { PostgresPool as KyselyPostgresPool } from "kysely";
import { connectFailure, statementFailure } from "./postgres-connect-error.js";
import { destroySocket } from "./postgres-socket.js";

/** SQLSTATE `read_only_sql_transaction`: a write reached a server (or session) that is read-only. */
export const READ_ONLY_SQL_TRANSACTION = "25006";

/** pg's error for a statement that did not answer within its read timeout. */
export function isReadTimeout(error: unknown): boolean {
  return error instanceof Error && error.message === "Query read timeout";
}

/** SQLSTATE {@link READ_ONLY_SQL_TRANSACTION}: the write reached a read-only server (or session). */
export function isReadOnly(error: unknown): boolean {
  return typeof error === "object" && error !== null && (error as { code?: unknown }).code === READ_ONLY_SQL_TRANSACTION;
}

const WRAPPED = Symbol("cairnq.discardOnTimeout");
const DISCARDED = Symbol.for("cairnq.discardedConnection");

/** Whether the store dropped this pooled client on purpose (its `error`/`end` events are then expected, not news). */
export function isDiscarded(client: unknown): boolean {
  return typeof client === "object" && client !== null && (client as { [DISCARDED]?: true })[DISCARDED] === true;
}

function markDiscarded(client: object): void {
  (client as { [DISCARDED]?: true })[DISCARDED] = true;
}

/** A pooled `pg.Client` as {@link discardingPool} handles it (`_queryable`/`_ending`: what pg-pool checks on release too). */
type PooledClient = Awaited<ReturnType<KyselyPostgresPool["connect"]>> & {
  [WRAPPED]?: true;
  _queryable?: boolean;
  _ending?: boolean;
  connection?: { stream?: { destroyed?: boolean } };
  ref?(): void;
  unref?(): void;
  on(event: "error" | "end", listener: () => void): unknown;
};

/** The parts of a `pg.Pool` {@link discardingPool} uses: Kysely's `connect`/`end`, and pg-pool's idle list when it has one. */
export interface DiscardablePool extends KyselyPostgresPool {
  readonly waitingCount?: number;
  /** pg-pool's idle clients (not a public API: read only when present). */
  readonly _idle?: readonly { readonly client: object }[];
}

/** Options of {@link discardingPool}. */
export interface DiscardingPoolOptions {
  /** Keep one released client checked out for the next `connect` (only for the pool the store builds). */
  readonly hold: boolean;
  /** Told when a write found the server read-only (the store reports it). */
  readonly onReadOnly?: (error: unknown) => void;
  /** Told when the pool dropped its suspects (one connection proved dead or read-only): connections opened the same way elsewhere are suspect too. */
  readonly onSuspects?: () => void;
}

/** The pool {@link discardingPool} returns: Kysely's pool, and a way to drop its idle connections from outside. */
export interface DiscardingPool extends KyselyPostgresPool {
  /**
   * Drops every idle connection (and the held one): a connection opened the same way elsewhere —
   * the LISTEN connection running a write — proved dead or read-only. Does not call `onSuspects`.
   */
  dropIdle(): void;
}

/**
 * The database a `pg.Pool`'s connections ask for, for connect errors: pg-pool's `options.database`, or
 * the path of its `connectionString`; `null` when neither says (pg then uses PGDATABASE or the user name).
 */
function databaseOf(pool: object): string | null {
  const options = (pool as { options?: { database?: unknown; connectionString?: unknown } }).options;
  if (typeof options?.database === "string") return options.database;
  if (typeof options?.connectionString !== "string") return null;
  try {
    const name = decodeURIComponent(new URL(options.connectionString).pathname.slice(1));
    return name === "" ? null : name;
  } catch {
    return null;
  }
}

/** How long the held client of a pool the store built may sit unused before it goes back to the pool (which then applies its own idle timeout). */
const HELD_IDLE_MS = 1_000;

/**
 * `pool` as Kysely sees it, with unusable connections dropped (see the
 * module comment): a client whose statement hit the read timeout has its
 * socket destroyed before Kysely releases it (pg leaves such a client
 * "queryable", so the pool would hand the dead connection to the next call,
 * which would time out again, forever); a client that answered a write
 * with 25006 is dropped on release; either way the idle clients go too.
 *
 * With `hold` (only for the pool the store builds, never a caller's), one
 * released client stays checked out and is handed straight to the next
 * `connect`, so back-to-back statements skip pg-pool's checkout and release
 * (its pending queue, connection and idle timers, events and promise: a few
 * microseconds of client CPU per statement). Only a healthy client is held
 * (what pg-pool checks on release, plus an intact socket), and only while no
 * one waits on the pool; it is given back — and so dropped by the pool if
 * dead — when it errors or ends while held, after {@link HELD_IDLE_MS}
 * unused, and on `end`. While held its socket is unref'd, as the pool does
 * for an idle client, so it never keeps the process alive.
 */
export function discardingPool(pool: DiscardablePool, options: DiscardingPoolOptions): DiscardingPool {
  const { hold, onReadOnly, onSuspects } = options;
  let held: PooledClient | null = null;
  /** pg-pool's `release` of the held client's checkout. */
  let heldRelease: ((error?: unknown) => void) | null = null;
  let heldSince = 0;
  let reaper: ReturnType<typeof setTimeout> | null = null;
  let ending = false;
  /** Hands the held `client` back to the pool; `error` (it died) makes the pool drop it. */
  const giveBack = (client: PooledClient, error?: Error): void => {
    if (held !== client || heldRelease === null) return;
    const release = heldRelease;
    held = null;
    heldRelease = null;
    client.ref?.();
    release(error);
  };
  const reap = (): void => {
    reaper = null;
    if (held === null) return;
    const left = heldSince + HELD_IDLE_MS - Date.now();
    if (left > 0) armReaper(left);
    else giveBack(held);
  };
  const armReaper = (ms: number): void => {
    reaper = setTimeout(reap, ms);
    reaper.unref();
  };
  const healthy = (client: PooledClient): boolean =>
    client._queryable !== false && client._ending !== true && client.connection?.stream?.destroyed !== true && !isDiscarded(client);
  const waiting = (): number => pool.waitingCount ?? 0;
  /** Drops the suspects: every idle client, and the held one. */
  const dropIdle = (): void => {
    if (held !== null) {
      const client = held;
      markDiscarded(client);
      giveBack(client, new Error("a connection of the same pool proved unusable"));
    }
    for (const item of [...(pool._idle ?? [])]) {
      // An idle client whose socket closes is removed by pg-pool's own idle listener.
      markDiscarded(item.client);
      destroySocket(item.client);
    }
  };
  const dropSuspects = (): void => {
    dropIdle();
    onSuspects?.();
  };
  return {
    dropIdle,
    connect: async () => {
      const reused = held;
      if (reused !== null) {
        held = null;
        heldRelease = null;
        reused.ref?.();
        return reused;
      }
      let opened: unknown;
      try {
        opened = await pool.connect();
      } catch (error) {
        throw connectFailure(error, databaseOf(pool));
      }
      const client = opened as PooledClient;
      if (client[WRAPPED] !== true) {
        client[WRAPPED] = true;
        const query = client.query.bind(client) as (...args: unknown[]) => unknown;
        (client as { query: unknown }).query = (...args: unknown[]): unknown => {
          const result = query(...args);
          if (result instanceof Promise) {
            return result.catch((error: unknown) => {
              if (isReadTimeout(error)) {
                markDiscarded(client);
                destroySocket(client);
                dropSuspects();
              } else if (isReadOnly(error) && !isDiscarded(client)) {
                markDiscarded(client);
                dropSuspects();
                onReadOnly?.(error);
              }
              throw statementFailure(error);
            });
          }
          return result;
        };
        if (hold) {
          // A held client that dies goes back to the pool at once, which drops it (it is no longer queryable).
          const onGone = (): void => giveBack(client, new Error("a held connection of the pool died"));
          client.on("error", onGone);
          client.on("end", onGone);
        }
      }
      // pg-pool sets a fresh `release` on every checkout; ours drops a discarded client and keeps a healthy one when it can.
      const release = client.release.bind(client) as (error?: unknown) => void;
      client.release = (error?: unknown): void => {
        if (isDiscarded(client)) {
          // Kysely releases with `false` when it has nothing against the connection: any falsy value means "keep".
          release(error || new Error("the connection was dropped: it proved unusable (dead or read-only)"));
          return;
        }
        if (hold && !error && !ending && held === null && healthy(client) && waiting() === 0) {
          held = client;
          heldRelease = release;
          heldSince = Date.now();
          client.unref?.();
          if (reaper === null) armReaper(HELD_IDLE_MS);
          return;
        }
        release(error);
      };
      return client;
    },
    end: () => {
      ending = true;
      if (reaper !== null) clearTimeout(reaper);
      if (held !== null) giveBack(held);
      return pool.end();
    },
  };
}
