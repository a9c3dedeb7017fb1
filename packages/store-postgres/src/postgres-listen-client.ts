/**
 * The LISTEN connection's seam: what the store needs of a `pg.Client`
 * (only the methods it calls, so the store never imports the driver), how
 * one is opened, where it stands, and which errors mean LISTEN can never
 * work there. `postgres-wakeups.ts` drives it.
 */
import { InvalidArgument, ListenUnavailable } from "@cairnq/protocol";

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
 * with backoff; it must resolve within `connectTimeoutMs`. `signal` aborts
 * when the store begins to close or that bound passes: a connect still in
 * flight should then end at once (destroy its socket). The store does not
 * wait for it, and ends a client resolved too late.
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

/**
 * Bounds on opening the LISTEN connection, and who hears that it cannot be opened. Every phase of the setup is
 * bounded, so a path that goes dark mid-way (no FIN, no RST) or a connector's client that never connected cannot
 * leave the store `connecting` forever: on expiry the connection is destroyed, the failure reported, and the store
 * polls and retries with backoff as after any other LISTEN failure.
 */
export interface ListenSetup {
  /** The connector must resolve within this (the store's `connectTimeoutMs`); `0`: unbounded. @default 10000 */
  readonly connectTimeoutMs?: number;
  /** Each LISTEN statement of the setup must be answered within this (the store's `listenCheckTimeoutMs`); `0`: unbounded. @default 5000 */
  readonly listenTimeoutMs?: number;
  /**
   * Told when an attempt to open the LISTEN connection failed (besides `onError`) — once, until it listens again,
   * so a LISTEN that cannot connect is never silent, and a server that stays down is not said at every retry.
   * `message` says what happened and what to do; `error` is the failure.
   */
  onUnreachable?(message: string, error: unknown): void;
}

/** A phase of opening the LISTEN connection outlived its bound: the connection is destroyed and retried with backoff. */
export class ListenSetupTimeout extends Error {
  override readonly name = "ListenSetupTimeout";
}

/** What the logger is told, once, when the LISTEN connection could not be opened (see {@link ListenSetup.onUnreachable}). */
export function unreachableMessage(error: unknown): string {
  const reason = error instanceof Error ? error.message || error.name : String(error);
  if (error instanceof InvalidArgument) return `${reason}; push wakeups are off for good and the store polls (a task is picked up within the worker's pollIntervalMs)`;
  const code = (error as { code?: unknown } | null)?.code;
  return (
    `the LISTEN connection could not be opened (${reason}${typeof code === "string" && !reason.includes(code) ? `, ${code}` : ""}): ` +
    "push wakeups are off and the store polls (a task is picked up within the worker's pollIntervalMs) while it retries with backoff " +
    "(1 s doubling to 30 s); said once until it listens again. Check `listen` (or the connection string it defaults to), " +
    "or pass `listen: false` to poll without this warning"
  );
}

/** Whether a connector's answer has the methods the LISTEN side calls (a `pg.Client` does). */
export function isListenClient(value: unknown): value is ListenClient {
  const v = value as Partial<ListenClient> | null;
  return typeof v === "object" && v !== null && typeof v.query === "function" && typeof v.on === "function" && typeof v.end === "function";
}

/** What a connector resolved to, for an error message: `number`, `null`, `an object without query/on/end`. */
export function describeValue(value: unknown): string {
  if (value === null) return "null";
  if (typeof value === "object") return "an object without query(), on() and end()";
  return typeof value;
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
