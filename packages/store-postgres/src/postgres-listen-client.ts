/**
 * The LISTEN connection's seam: what the store needs of a `pg.Client`
 * (only the methods it calls, so the store never imports the driver), how
 * one is opened, where it stands, and which errors mean LISTEN can never
 * work there. `postgres-wakeups.ts` drives it.
 */
import { ListenUnavailable } from "@cairnq/protocol";

/** The SQLSTATE a server (or pooler) answers LISTEN with when it cannot support it. */
const FEATURE_NOT_SUPPORTED = "0A000";

/** A NOTIFY as `pg` delivers it. */
export interface ListenNotification {
  readonly channel: string;
  readonly payload?: string;
}

/**
 * The methods of a connected `pg.Client` the LISTEN side uses (a `pg.Client`
 * satisfies it).
 */
export interface ListenClient {
  /** Runs `LISTEN cairnq_queued; LISTEN cairnq_done`. */
  query(sql: string): Promise<unknown>;
  /** `notification` delivers NOTIFYs; `error` and `end` mean the connection is gone. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- EventEmitter's listener type, so pg.Client's own signatures fit
  on(event: "notification" | "error" | "end", listener: (...args: any[]) => void): unknown;
  /** Closes the connection. */
  end(): Promise<void>;
  /** The backend's process id once connected (`pg` sets it). */
  readonly processID?: number | null;
  /** Lets the process exit while this connection is open (`pg.Client#unref`). */
  unref?(): void;
  /** Undoes {@link ListenClient.unref}. */
  ref?(): void;
}

/**
 * Opens the dedicated LISTEN connection: resolves with a **connected**
 * client, or rejects — with `ListenUnavailable` when LISTEN can never work
 * there (the store then polls for good), with anything else to be retried
 * with backoff. `signal` aborts when the store begins to close: a connect
 * still in flight should then end at once (destroy its socket), or the
 * store's `close()` waits for it.
 *
 * @example
 * const listen: ListenConnector = async () => {
 *   const client = new pg.Client(process.env.DIRECT_DATABASE_URL); // session mode, not through a transaction pooler
 *   await client.connect();
 *   return client;
 * };
 */
export type ListenConnector = (signal?: AbortSignal) => Promise<ListenClient>;

/**
 * Where the LISTEN connection stands:
 * `off` (no connector: plain sleeps), `idle` (the store has not connected
 * yet), `connecting` (opening it, LISTEN, and the check that it hears),
 * `listening`, `retrying` (dropped or failed; a reconnect is scheduled),
 * `unavailable` (LISTEN refused: polling for good), `deaf` (LISTEN accepted
 * but the check's NOTIFY never came back: polling for good), `closed`.
 */
export type ListenState = "off" | "idle" | "connecting" | "listening" | "retrying" | "unavailable" | "deaf" | "closed";

/**
 * The check that a LISTEN connection hears (see the check in `postgres-wakeups.ts`): how
 * the store sends itself a NOTIFY through its work pool, how long it waits,
 * and who hears that it failed.
 */
export interface ListenCheck {
  /** Sends `pg_notify(channel, payload)` through the work pool; resolves once committed. */
  notify(channel: string, payload: string): Promise<void>;
  /** @default 5000 (`LISTEN_CHECK_TIMEOUT_MS` of `postgres-wakeups.ts`) */
  readonly timeoutMs?: number;
  /** Told once, when the check failed and the store gave push wakeups up (besides `onError`). */
  onDeaf?(error: ListenUnavailable): void;
}

/** The LISTEN connection lent to one statement: call `release` once it is answered (or failed). */
export interface ListenLoan {
  readonly client: ListenClient;
  readonly release: () => void;
}

/** Whether `error` says LISTEN can never work on this connection (see "unavailable" in `postgres-wakeups.ts`). */
export function refusesListen(error: unknown): boolean {
  return error instanceof ListenUnavailable || sqlState(error) === FEATURE_NOT_SUPPORTED;
}

function sqlState(error: unknown): unknown {
  return typeof error === "object" && error !== null ? (error as { code?: unknown }).code : undefined;
}
