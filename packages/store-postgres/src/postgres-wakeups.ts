/**
 * Push wakeups over LISTEN/NOTIFY (§9): one dedicated, non-pooled connection
 * per store LISTENs on `cairnq_queued` and `cairnq_done`, which the §3.8
 * trigger notifies at commit. An accelerator only: a lost notification costs
 * one poll interval, never a task.
 *
 * Terminology:
 * - **wakeable queues**: queues some claim has asked about (§5.10 step 1). A
 *   `queued` signal for one of them that arrives while no `claimWake` waits
 *   for it is **buffered** and ends the next such wait at once;
 * - **drop**: the LISTEN connection failed or ended. Every waiter is released
 *   (their callers re-read, as after a wake), and the store reconnects with
 *   backoff (1 s doubling to 30 s) while polling carries on;
 * - **unavailable**: LISTEN will never work on this connection (the connector
 *   threw `ListenUnavailable`, or the server answered `feature_not_supported`,
 *   as some transaction-mode poolers do): the store polls for good;
 * - **check**: after LISTEN succeeded — on connect and after every
 *   reconnect — the store NOTIFYs a channel private to this connection
 *   through the work pool and waits for the notification to come back. A
 *   LISTEN accepted but deaf (PgBouncer in transaction mode runs it on a
 *   server session that is handed to other clients; a LISTEN connection to
 *   another server than the pool's) fails the check;
 * - **deaf**: the check failed: the store polls for good, and says so once;
 * - **wanted channel**: a channel someone asked for — `cairnq_queued` once a
 *   claim wait registers a queue or a subscriber wants `queued` signals,
 *   `cairnq_done` once a task wait begins or a subscriber wants `done`
 *   signals. Only wanted channels are LISTENed (at connect, or the moment
 *   they become wanted): Postgres delivers a notification only to the
 *   connections LISTENing on its channel, so a worker process no longer
 *   wakes for every settlement nor a client for each of its own submits.
 *   A channel LISTENed late missed what was sent before: its waiters are
 *   released then (they re-read, as after a reconnect);
 * - **done row**: a task wait also LISTENs on the done-row channel
 *   (`postgres-done-row.ts`), where a CairnQ store that ended a task sent its
 *   terminal row just before the trigger's `cairnq_done`: the wait resolves
 *   with that row, so its caller skips the read. A plain `cairnq_done` (a v1
 *   peer, lease recovery, a row too large) wakes it without one, as always.
 */
import { randomBytes } from "node:crypto";
import type { StoreSignal, StoreSignalReason, Task } from "@cairnq/protocol";
import { InvalidArgument, ListenUnavailable } from "@cairnq/protocol";
import type { ListenCheck, ListenClient, ListenConnector, ListenLoan, ListenNotification, ListenSetup, ListenState } from "./postgres-listen-client.js";
import { describeValue, isListenClient, ListenSetupTimeout, refusesListen, unreachableMessage } from "./postgres-listen-client.js";
import type { TimerHandle } from "@cairnq/runtime";
import { sleep, startTimer, WaiterSet } from "@cairnq/runtime";
import type { Wakeups } from "@cairnq/store-kysely";
import { decodeDoneRow, DONE_ROW_CHANNEL, doneRowId } from "./postgres-done-row.js";
import { QueryGate } from "./postgres-query-gate.js";
import { bounded, destroySocket, endQuietly, unrefTimer } from "./postgres-socket.js";

/** The channel the trigger notifies on entry into `queued`, with the queue as payload (§3.8). */
export const QUEUED_CHANNEL = "cairnq_queued";
/** The channel the trigger notifies on entry into a terminal status, with the task id as payload (§3.8). */
export const DONE_CHANNEL = "cairnq_done";

/** The first reconnect delay after the LISTEN connection failed (§9). */
export const LISTEN_BACKOFF_INITIAL_MS = 1_000;
/** How often the LISTEN connection must prove it is alive (`SELECT 1`), and how long it has to answer. */
export const LISTEN_PING_INTERVAL_MS = 30_000;
/** The reconnect delay doubles up to this (§9). */
export const LISTEN_BACKOFF_MAX_MS = 30_000;

/** How long the check's NOTIFY has to come back (§9 is an accelerator: a LISTEN slower than this does not accelerate). */
export const LISTEN_CHECK_TIMEOUT_MS = 5_000;

/** How long a connector may take when no `connectTimeoutMs` is given (the store's own default). */
const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;

export type { ListenCheck, ListenClient, ListenConnector, ListenLoan, ListenNotification, ListenSetup, ListenState } from "./postgres-listen-client.js";

/** What {@link PostgresWakeups.subscribe} keeps per subscription: the listener and the signals it wants. */
interface Subscriber {
  readonly listener: (signal: StoreSignal) => void;
  readonly queued: boolean;
  readonly done: boolean;
}

/** One pending `taskDoneWake`: its task, and the terminal row a done-row notification handed it. */
interface DoneWait {
  readonly taskId: string;
  row: Task | undefined;
}

/**
 * The Postgres {@link Wakeups}: `claimWake` ends early on a `cairnq_queued`
 * notification for one of its queues (or a buffered one), `taskDoneWake` on
 * `cairnq_done` for its task, `subscribe` hears both; without a live LISTEN
 * connection both are plain sleeps. Errors go to `onError` and never
 * propagate: neither a failing connection nor a throwing subscriber can
 * crash the process.
 *
 * @example
 * const wakeups = new PostgresWakeups(connector, (err) => logger.warn("listen", { err }));
 * wakeups.start();
 * await wakeups.claimWake(["default"], 500);
 */
export class PostgresWakeups implements Wakeups {
  #state: ListenState;
  #client: ListenClient | null = null;
  #backendPid: number | null = null;
  /** Bumped per connection attempt; events of an older connection are ignored. */
  #generation = 0;
  #backoffMs = LISTEN_BACKOFF_INITIAL_MS;
  #retryTimer: TimerHandle | null = null;
  #connecting: Promise<void> | null = null;
  /** The client of the attempt in flight, from its connect until it is handed on or ended. */
  #opening: ListenClient | null = null;
  /** Aborted by {@link PostgresWakeups.windDown}: no reconnect from then on. */
  readonly #winding = new AbortController();
  /** Pending `claimWake`s, each with the queues it waits for. */
  readonly #claimWaiters = new WaiterSet<ReadonlySet<string>>();
  /** Pending `taskDoneWake`s by task id. */
  readonly #doneWaiters = new WaiterSet<DoneWait>({ keyOf: (wait) => wait.taskId });
  readonly #wakeable = new Set<string>();
  readonly #buffered = new Set<string>();
  readonly #subscribers = new Set<Subscriber>();
  /** The channels someone asked for (see the module comment); never shrinks. */
  readonly #wanted = new Set<string>();
  /** The channels LISTENed (or being LISTENed) on the current connection. */
  readonly #listened = new Set<string>();

  /** Serializes what runs on the current LISTEN connection (see {@link PostgresWakeups.lend}); a fresh one per connection. */
  #gate = new QueryGate();
  #pingTimer: NodeJS.Timeout | null = null;
  readonly #pingIntervalMs: number;
  readonly #check: ListenCheck | null;
  readonly #setup: ListenSetup;
  /** Whether the current streak of failed attempts to open the LISTEN connection was said (see `ListenSetup.onUnreachable`). */
  #warnedUnreachable = false;
  /** This connection's private channel for the check: no other listener hears it. */
  readonly #checkChannel = `cairnq_check_${randomBytes(8).toString("hex")}`;
  /** The pending check's payload and its resolver. */
  #checkWaiter: { readonly payload: string; readonly heard: () => void; readonly abandon: () => void } | null = null;

  /**
   * @param connector - Opens the LISTEN connection, or `null` for none (every wake is a plain sleep).
   * @param onError - Receives connection failures and subscriber exceptions.
   * @param pingIntervalMs - How often the LISTEN connection is proven alive with `SELECT 1` (answer
   *   within the same time, or it is dropped and reopened); `0` turns the ping off. @default 30000
   * @param check - How to prove, after each LISTEN, that the connection hears; `null`: trust it. @default null
   * @param setup - Bounds on opening the connection, and who hears it cannot be opened. @default connect within 10000ms, LISTEN within 5000ms
   */
  constructor(
    private readonly connector: ListenConnector | null,
    private readonly onError: (error: unknown) => void = () => {},
    pingIntervalMs: number = LISTEN_PING_INTERVAL_MS,
    check: ListenCheck | null = null,
    setup: ListenSetup = {},
  ) {
    this.#state = connector === null ? "off" : "idle";
    this.#pingIntervalMs = pingIntervalMs;
    this.#check = check;
    this.#setup = setup;
  }

  /** Whether signals may come: a LISTEN source that has not been refused, found deaf or closed (what `capabilities.pushWakeups` reports). */
  get pushing(): boolean {
    return this.#state === "idle" || this.#state === "connecting" || this.#state === "listening" || this.#state === "retrying";
  }

  /** Where the LISTEN connection stands. */
  get state(): ListenState {
    return this.#state;
  }

  /** The server process id of the LISTEN connection while listening (for `pg_terminate_backend` in tests and operations), else `null`. */
  get backendPid(): number | null {
    return this.#backendPid;
  }

  /** The LISTEN connection while listening, else `null`. */
  get listeningClient(): ListenClient | null {
    return this.#state === "listening" ? this.#client : null;
  }

  /**
   * Lends the LISTEN connection to one statement of the store's (`postgres-listen-lane.ts`): while
   * listening and while nothing else runs on it (the wakeups' own LISTEN or ping, or another lent
   * statement: pg queues a second query on a busy client, with a deprecation warning), else `null`.
   * Until `release` is called, the wakeups' own queries wait behind the lent statement.
   */
  lend(): ListenLoan | null {
    const client = this.#client;
    if (this.#state !== "listening" || client === null) return null;
    const release = this.#gate.tryAcquire();
    return release === null ? null : { client, release };
  }

  /**
   * Starts listening in the background (§3.9: after the guards). Idempotent;
   * returns at once. The returned promise of the first attempt is kept for
   * {@link PostgresWakeups.whenSettled}.
   */
  start(): void {
    if (this.#state !== "idle") return;
    this.#connecting = this.#open();
  }

  /** Resolves when the current connection attempt (if any) has succeeded or failed; for tests and diagnostics. */
  async whenSettled(): Promise<void> {
    await this.#connecting;
  }

  /** Registers queues as wakeable (§5.10 step 1): their signals are buffered while nobody waits. */
  register(queues: readonly unknown[]): void {
    for (const queue of queues) {
      if (typeof queue !== "string") continue;
      this.#wakeable.add(queue);
      this.#want(QUEUED_CHANNEL);
    }
  }

  /**
   * Resolves after `timeoutMs`, on abort, or earlier on a `cairnq_queued`
   * signal for one of `queues` — at once when one is buffered (consuming it).
   * A plain sleep while not listening. Registers `queues` as wakeable.
   */
  claimWake(queues: readonly string[], timeoutMs: number, signal?: AbortSignal): Promise<void> {
    this.register(queues);
    if (!this.#mayWake()) return sleep(timeoutMs, { signal, unref: true });
    let consumed = false;
    for (const queue of queues) if (this.#buffered.delete(queue)) consumed = true;
    if (consumed) return Promise.resolve();
    return this.#claimWaiters.wait(new Set(queues), timeoutMs, signal);
  }

  /**
   * Resolves after `timeoutMs`, on abort, or earlier on a `cairnq_done` signal for `taskId` — with the
   * task's terminal row when its done-row notification came first (see the module comment), else with
   * nothing; a plain sleep while not listening.
   */
  async taskDoneWake(taskId: string, timeoutMs: number, signal?: AbortSignal): Promise<Task | void> {
    if (!this.#mayWake()) return sleep(timeoutMs, { signal, unref: true });
    this.#want(DONE_CHANNEL, DONE_ROW_CHANNEL);
    const wait: DoneWait = { taskId, row: undefined };
    await this.#doneWaiters.wait(wait, timeoutMs, signal);
    return wait.row;
  }

  /**
   * Whether a wait can end early: while listening, and also while LISTEN is
   * not up yet or reconnecting — those waiters are released the moment it is
   * (back) up, since signals sent meanwhile were missed. Otherwise (no
   * connector, LISTEN refused for good, closed) waits are plain sleeps.
   */
  #mayWake(): boolean {
    return this.#state === "listening" || this.#state === "connecting" || this.#state === "retrying" || this.#state === "idle";
  }

  /**
   * Calls `listener` with every signal heard of `reasons` (`queued` with the queue, `done` with the task
   * id; default both), and LISTENs on their channels if nobody did yet; returns the unsubscribe.
   */
  subscribe(listener: (signal: StoreSignal) => void, reasons: readonly StoreSignalReason[] = ["queued", "done"]): () => void {
    // An object per subscription, so subscribing one function twice gives two independent subscriptions.
    const entry: Subscriber = { listener, queued: reasons.includes("queued"), done: reasons.includes("done") };
    if (entry.queued) this.#want(QUEUED_CHANNEL);
    if (entry.done) this.#want(DONE_CHANNEL);
    this.#subscribers.add(entry);
    return () => {
      this.#subscribers.delete(entry);
    };
  }

  /**
   * The store began to close (its `close()` waits for its calls in flight first): no reconnect from now on,
   * and an attempt in flight is abandoned (its socket destroyed), so `close()` never waits on a connect,
   * LISTEN or check over a dead path. A connection listening stays until `close()`: a write lent to it may
   * still run. Idempotent.
   */
  windDown(): void {
    if (this.#winding.signal.aborted) return;
    this.#retryTimer?.clear();
    this.#retryTimer = null;
    if (this.#state === "connecting") {
      this.#generation += 1;
      this.#checkWaiter?.abandon();
      if (this.#opening !== null) destroySocket(this.#opening);
    }
    this.#winding.abort();
  }

  /** Stops listening for good: releases every waiter, cancels a scheduled reconnect, ends the connection. Idempotent. */
  async close(): Promise<void> {
    if (this.#state === "closed") return;
    // Cancels a scheduled reconnect (none is scheduled after it) and abandons an attempt in flight.
    this.windDown();
    this.#state = "closed";
    this.#stopPing();
    this.#generation += 1;
    this.#releaseAll();
    this.#subscribers.clear();
    // A check in flight hears nothing now (its notification is of an old generation): stop its wait.
    this.#checkWaiter?.abandon();
    await this.#connecting?.catch(() => {});
    const client = this.#client;
    this.#client = null;
    this.#backendPid = null;
    if (client !== null) await endQuietly(client);
  }

  // ------------------------------------------------------------- connection

  async #open(): Promise<void> {
    const connector = this.connector;
    const signal = this.#winding.signal;
    if (connector === null || this.#state === "closed" || signal.aborted) return;
    const generation = ++this.#generation;
    this.#state = "connecting";
    let client: ListenClient | null = null;
    // Aborted when the connect times out or the store begins to close: a connect in flight gives up (its socket destroyed).
    const attempt = new AbortController();
    const abortAttempt = (): void => attempt.abort();
    signal.addEventListener("abort", abortAttempt, { once: true });
    try {
      const connectMs = this.#setup.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
      const opened: unknown = await bounded(
        connector(attempt.signal),
        connectMs,
        signal,
        () => {
          attempt.abort();
          return new ListenSetupTimeout(`the LISTEN connection was not open within ${connectMs}ms (connectTimeoutMs)`);
        },
        (late) => void (isListenClient(late) && endQuietly(late)),
      );
      if (!isListenClient(opened)) {
        throw new InvalidArgument("listen", `the listen connector must resolve to a connected pg.Client, got ${describeValue(opened)}`);
      }
      client = opened;
      this.#opening = client;
      if (generation !== this.#generation) {
        await endQuietly(client);
        return;
      }
      const current = client;
      current.on("error", (error: unknown) => this.#dropped(generation, current, error));
      current.on("end", () => this.#dropped(generation, current, new Error("the LISTEN connection ended")));
      current.on("notification", (message: ListenNotification) => {
        if (generation === this.#generation) this.#notified(message);
      });
      const check = this.#check;
      this.#listened.clear();
      // A statement stuck on the old connection must not hold back this one's LISTEN.
      this.#gate = new QueryGate();
      await this.#setupListen(current, check === null ? [] : [this.#checkChannel]);
      if (generation !== this.#generation) {
        await endQuietly(current);
        return;
      }
      if (check !== null && !(await this.#hears(check, generation))) {
        if (generation !== this.#generation) {
          // Closed (or dropped) while the check waited: this connection was never handed on, so end it here, or
          // its ref'd socket would keep the process alive after close().
          await endQuietly(current);
          return;
        }
        await this.#giveUpDeaf(current, check);
        return;
      }
      if (generation !== this.#generation) {
        await endQuietly(current);
        return;
      }
      // Channels wanted while the check ran; and the check's own channel goes: Postgres interrupts every
      // backend that LISTENs on anything at each commit that notifies, so a process that wants no signal
      // (a client that only submits) keeps its LISTEN backend out of that until it does.
      await this.#setupListen(current, [], check === null ? [] : [`UNLISTEN ${this.#checkChannel}`]);
      if (generation !== this.#generation) {
        await endQuietly(current);
        return;
      }
      // An accelerator must not keep an otherwise finished process alive (e.g. a script that forgot close()).
      current.unref?.();
      this.#client = current;
      this.#backendPid = typeof current.processID === "number" ? current.processID : null;
      this.#state = "listening";
      this.#warnedUnreachable = false;
      this.#startPing(generation, current);
      this.#backoffMs = LISTEN_BACKOFF_INITIAL_MS;
      // Signals sent before LISTEN took effect (or while it was down) were missed: one spurious wake per
      // wakeable queue is cheaper than a waiter sleeping through a task that is already there.
      for (const queue of this.#wakeable) this.#buffered.add(queue);
      // Waiters that began while LISTEN was down re-read now rather than sleeping out their timeout.
      this.#releaseAll();
    } catch (error) {
      if (client !== null) {
        // A connection that stalled (or that close() abandoned) would not answer a goodbye: its socket goes at once.
        if (error instanceof ListenSetupTimeout || signal.aborted) {
          destroySocket(client);
          void endQuietly(client);
        } else {
          await endQuietly(client);
        }
      }
      if (generation !== this.#generation) return;
      // Events of this connection (its `end` once destroyed) must not report and reschedule it a second time.
      this.#generation += 1;
      this.#report(error);
      if (error instanceof InvalidArgument) {
        // The connector's own code is wrong: retrying would say the same thing every backoff.
        this.#giveUpUnavailable();
        this.#warnUnreachable(error);
        return;
      }
      if (refusesListen(error)) {
        this.#giveUpUnavailable();
        return;
      }
      this.#scheduleRetry();
      this.#warnUnreachable(error);
    } finally {
      signal.removeEventListener("abort", abortAttempt);
      if (this.#opening === client) this.#opening = null;
    }
  }

  /** A LISTEN statement of the setup ({@link PostgresWakeups.#listenWanted}), bounded by `listenTimeoutMs` and by the store closing. */
  #setupListen(client: ListenClient, extra: readonly string[], first: readonly string[] = []): Promise<void> {
    const ms = this.#setup.listenTimeoutMs ?? LISTEN_CHECK_TIMEOUT_MS;
    return bounded(
      this.#listenWanted(client, extra, first),
      ms,
      this.#winding.signal,
      () =>
        new ListenSetupTimeout(
          `the LISTEN connection did not answer its LISTEN statement within ${ms}ms (listenCheckTimeoutMs): the path to the server ` +
            "went dark, or the listen connector returned a client it never connected (await client.connect() before returning it)",
        ),
    );
  }

  /** An attempt to open the LISTEN connection failed: said once through `onUnreachable` until it listens again. */
  #warnUnreachable(error: unknown): void {
    if (this.#warnedUnreachable) return;
    this.#warnedUnreachable = true;
    const message = unreachableMessage(error);
    try {
      this.#setup.onUnreachable?.(message, error);
    } catch {
      // A throwing hook must not turn a survived error into a crash.
    }
  }

  /**
   * Runs, in one query, `first`, then LISTEN on every wanted channel this connection has not
   * LISTENed yet and on `extra`.
   */
  async #listenWanted(client: ListenClient, extra: readonly string[], first: readonly string[] = []): Promise<void> {
    // In a fixed order, so the statement reads the same whoever asked first.
    const channels = [QUEUED_CHANNEL, DONE_CHANNEL, DONE_ROW_CHANNEL].filter((channel) => this.#wanted.has(channel) && !this.#listened.has(channel));
    for (const channel of channels) this.#listened.add(channel);
    const statements = [...first, ...[...channels, ...extra].map((channel) => `LISTEN ${channel}`)];
    if (statements.length > 0) await this.#gate.run(() => client.query(statements.join("; ")));
  }

  /**
   * Marks `channels` wanted; while listening, LISTENs on those new in one query now, and once that
   * took effect releases their waiters (what was sent before it was missed; a done row missed is
   * only a read more, so that channel releases nobody). While connecting, `#open` LISTENs on them.
   */
  #want(...channels: string[]): void {
    const fresh = channels.filter((channel) => !this.#wanted.has(channel));
    if (fresh.length === 0) return;
    for (const channel of fresh) this.#wanted.add(channel);
    const client = this.#client;
    if (this.#state !== "listening" || client === null) return;
    const generation = this.#generation;
    this.#listenWanted(client, []).then(
      () => {
        if (generation !== this.#generation) return;
        if (fresh.includes(QUEUED_CHANNEL)) {
          for (const queue of this.#wakeable) this.#buffered.add(queue);
          this.#claimWaiters.wakeAll();
        }
        if (fresh.includes(DONE_CHANNEL)) this.#doneWaiters.wakeAll();
      },
      (error: unknown) => {
        if (generation !== this.#generation) return;
        if (!refusesListen(error)) {
          this.#dropped(generation, client, error);
          return;
        }
        this.#report(error);
        this.#stopPing();
        this.#generation += 1;
        this.#client = null;
        this.#backendPid = null;
        void endQuietly(client);
        this.#giveUpUnavailable();
      },
    );
  }

  /** LISTEN is refused for good: poll forever; nothing will ever wake the waiters, so they re-read and sleep plainly. */
  #giveUpUnavailable(): void {
    this.#state = "unavailable";
    this.#buffered.clear();
    this.#releaseAll();
  }

  /**
   * Sends the check's NOTIFY through the work pool and waits (from its commit) for it to come back on
   * the LISTEN connection. A NOTIFY that could not be sent (the pool failing) rejects: that is a
   * connection failure, retried with backoff, not deafness.
   */
  async #hears(check: ListenCheck, generation: number): Promise<boolean> {
    const payload = randomBytes(8).toString("hex");
    let heard!: () => void;
    let abandon!: () => void;
    const arrived = new Promise<boolean>((resolve) => {
      heard = () => resolve(true);
      abandon = () => resolve(false);
    });
    this.#checkWaiter = { payload, heard, abandon };
    try {
      // Bounded by the store's statement timeout on the pool; abandoned at once when the store begins to close.
      await bounded(check.notify(this.#checkChannel, payload), 0, this.#winding.signal, () => new Error("unreachable"));
      if (generation !== this.#generation) return true;
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<false>((resolve) => {
        timer = setTimeout(() => resolve(false), check.timeoutMs ?? LISTEN_CHECK_TIMEOUT_MS);
      });
      const outcome = await Promise.race([arrived, timedOut]);
      clearTimeout(timer);
      return outcome;
    } finally {
      this.#checkWaiter = null;
    }
  }

  /** The check failed: poll for good, tell `onError` and the check's `onDeaf` once, let every waiter re-read. */
  async #giveUpDeaf(client: ListenClient, check: ListenCheck): Promise<void> {
    this.#state = "deaf";
    this.#generation += 1;
    const timeoutMs = check.timeoutMs ?? LISTEN_CHECK_TIMEOUT_MS;
    const error = new ListenUnavailable(
      `the LISTEN connection accepted LISTEN but did not hear a NOTIFY the store sent itself through its pool within ${timeoutMs}ms, ` +
        "so CairnQ gives push wakeups up and polls (a task is picked up within the worker's pollIntervalMs). " +
        "Usual cause: `listen` (or the connection string it defaults to) goes through a transaction-mode pooler such as PgBouncer, " +
        "RDS Proxy or Supavisor, where LISTEN runs on a server session other clients get next; give `listen` a direct or " +
        "session-mode connection string to the same database, or `listen: false` to poll without this warning",
    );
    this.#report(error);
    try {
      check.onDeaf?.(error);
    } catch {
      // A throwing hook must not turn a survived error into a crash.
    }
    this.#releaseAll();
    this.#buffered.clear();
    await endQuietly(client);
  }

  /**
   * A half-open connection (the path silently stopped carrying bytes) never
   * errors and never ends: notifications just stop. So every interval the
   * connection must answer `SELECT 1` within that interval (not counting
   * the time a write lent the connection holds it: that write is bounded by
   * its own read timeout), or it is treated as dropped — destroyed, waiters
   * released, reopened with backoff.
   */
  #startPing(generation: number, client: ListenClient): void {
    if (this.#pingIntervalMs <= 0) return;
    const interval = this.#pingIntervalMs;
    const tick = (): void => {
      this.#pingTimer = null;
      if (generation !== this.#generation) return;
      let answered = false;
      const gate = this.#gate;
      // Counted from when it was due, a query of the wakeups' own ahead of it included; not while a write lent the
      // connection (`lend`) holds it: that may wait on a lock for longer than the interval on a live connection, and is
      // bounded by its own read timeout (which drops the connection). Once sent, the ping has the whole interval.
      const expire = (): void => {
        if (answered) return;
        if (gate.lent) deadline = unrefTimer(expire, interval);
        else this.#dropped(generation, client, new Error(`the LISTEN connection did not answer a liveness ping within ${interval}ms`));
      };
      let deadline = unrefTimer(expire, interval);
      gate.run(() => {
        clearTimeout(deadline);
        deadline = unrefTimer(expire, interval);
        return client.query("SELECT 1");
      }).then(
        () => {
          answered = true;
          clearTimeout(deadline);
          if (generation !== this.#generation) return;
          this.#pingTimer = unrefTimer(tick, interval);
        },
        (error: unknown) => {
          answered = true;
          clearTimeout(deadline);
          this.#dropped(generation, client, error);
        },
      );
    };
    this.#pingTimer = unrefTimer(tick, interval);
  }

  #stopPing(): void {
    if (this.#pingTimer !== null) clearTimeout(this.#pingTimer);
    this.#pingTimer = null;
  }

  #dropped(generation: number, client: ListenClient, error: unknown): void {
    if (generation !== this.#generation || this.#state === "closed") return;
    this.#stopPing();
    this.#generation += 1;
    this.#client = null;
    this.#backendPid = null;
    this.#buffered.clear();
    this.#report(error);
    void endQuietly(client);
    this.#releaseAll();
    this.#scheduleRetry();
  }

  #scheduleRetry(): void {
    this.#state = "retrying";
    if (this.#winding.signal.aborted) return;
    const delay = this.#backoffMs;
    this.#backoffMs = Math.min(this.#backoffMs * 2, LISTEN_BACKOFF_MAX_MS);
    // Unref'd: a reconnect must not keep an otherwise finished process alive.
    this.#retryTimer = startTimer(
      () => {
        this.#retryTimer = null;
        this.#connecting = this.#open();
      },
      delay,
      { unref: true },
    );
  }

  // ---------------------------------------------------------------- signals

  #notified(message: ListenNotification): void {
    const payload = message.payload ?? "";
    if (message.channel === this.#checkChannel) {
      if (this.#checkWaiter?.payload === payload) this.#checkWaiter.heard();
      return;
    }
    if (message.channel === QUEUED_CHANNEL) {
      const woke = this.#claimWaiters.wakeWhere((queues) => queues.has(payload));
      if (woke === 0 && this.#wakeable.has(payload)) this.#buffered.add(payload);
      this.#emit({ reason: "queued", queue: payload });
    } else if (message.channel === DONE_CHANNEL) {
      this.#doneWaiters.wakeKey(payload);
      this.#emit({ reason: "done", taskId: payload });
    } else if (message.channel === DONE_ROW_CHANNEL) {
      // No signal of its own: the trigger's `cairnq_done` right behind it is the `done` signal. Every task's row
      // reaches every waiting process: parsed only when this one waits for that task.
      const id = doneRowId(payload);
      if (id === null || !this.#doneWaiters.hasKey(id)) return;
      const row = decodeDoneRow(payload);
      if (row?.id !== id) return;
      this.#doneWaiters.wakeKey(id, (wait) => {
        wait.row = row;
      });
    }
  }

  #emit(signal: StoreSignal): void {
    for (const subscriber of [...this.#subscribers]) {
      if (!subscriber[signal.reason]) continue;
      try {
        subscriber.listener(signal);
      } catch (error) {
        this.#report(error);
      }
    }
  }

  /** Ends every pending wait now; their callers re-read, exactly as after a signal. */
  #releaseAll(): void {
    this.#claimWaiters.wakeAll();
    this.#doneWaiters.wakeAll();
  }

  #report(error: unknown): void {
    try {
      this.onError(error);
    } catch {
      // A throwing hook must not turn a survived error into a crash.
    }
  }
}
