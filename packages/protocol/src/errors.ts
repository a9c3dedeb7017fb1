/**
 * The error classes of protocol v1 §12.
 *
 * Terminology: an *envelope* is the JSON object a failed task stores in its
 * `error` column (`{ type, code, message, retryable, details }`); a *brand* is
 * a `Symbol.for` key that marks an instance as one of these classes.
 *
 * `instanceof` is branded rather than prototype-based because a process can
 * load two copies of `@cairnq/protocol` (two versions in `node_modules`, or a
 * CJS and an ESM build): a `LostLease` thrown by one copy's store must still
 * satisfy `err instanceof LostLease` in the other copy's worker. Every class
 * carries the registry symbol `cairnq.error.<ClassName>` and the base carries
 * `cairnq.error`, so `instanceof` matches the class (or its subclasses) from
 * any copy and nothing else.
 */
import { describe } from "./describe.js";
import { taskErrorOptionsProblem } from "./task-error-checks.js";
import type { Task } from "./task.js";

/**
 * The stored shape of a failure (§12): five keys in this order.
 *
 * `details` is free-form JSON for the handler's own data; the store does not
 * validate envelopes, so a row read back may hold any JSON (see `TaskFailed`).
 */
export type ErrorEnvelope = {
  type: string;
  code: string;
  message: string;
  retryable: boolean;
  details: Record<string, unknown>;
};

/**
 * Options every error class accepts last.
 *
 * `message` replaces the default text (callers that know more, such as the
 * wait loop naming why a task is stuck, should pass it); `cause` is the
 * standard `Error` cause.
 */
export interface CairnQErrorOptions {
  /** Replaces the generated message. @default a message built from the fields */
  message?: string;
  /** The underlying error, if any. @default undefined */
  cause?: unknown;
  /** Overrides the class's {@link CairnQError.fatal} verdict. @default the class's verdict */
  fatal?: boolean;
}

/** Registry key of the symbol marking every `CairnQError`, whichever copy created it. */
const ERROR_BRAND = "cairnq.error";
/** Where a class keeps the brand its own instances carry (absent on unbranded user subclasses). */
const CLASS_BRAND: symbol = Symbol.for("cairnq.error.classBrand");

type Branded = abstract new (...args: never[]) => object;

/**
 * Makes `instanceof cls` hold for instances of `cls` made by any copy of the
 * package that defines it: marks `cls` and its prototype with the registry
 * symbol `Symbol.for(key)`, names its instances `name`, and (unless an
 * ancestor already did) installs the `Symbol.hasInstance` test that checks
 * the brand instead of the prototype chain. Call it once per class, in a
 * `static {}` block; a store's own error classes use it as these do, so
 * `err instanceof DatabaseBusy` survives two copies of the store package.
 *
 * The brand lives on the prototype, so instances pay nothing per construction
 * and subclass instances inherit every ancestor's brand. A class without its
 * own brand (a caller's subclass) keeps the ordinary prototype-chain test,
 * because the inherited brand would also match its parent's instances.
 *
 * @example
 * ```ts
 * export class KeyLockBusy extends Error {
 *   static {
 *     brandErrorClass(this, "cairnq.KeyLockBusy", "KeyLockBusy");
 *   }
 * }
 * ```
 */
export function brandErrorClass(cls: Branded, key: string, name: string): void {
  const brand = Symbol.for(key);
  Object.defineProperty(cls, CLASS_BRAND, { value: brand });
  Object.defineProperty(cls.prototype, brand, { value: true });
  Object.defineProperty(cls.prototype, "name", { value: name, writable: true, configurable: true });
  if ((cls as { [Symbol.hasInstance]: unknown })[Symbol.hasInstance] !== hasBrandedInstance) {
    Object.defineProperty(cls, Symbol.hasInstance, { value: hasBrandedInstance });
  }
}

/** The `instanceof` test {@link brandErrorClass} installs; `this` is the right-hand side of `instanceof`. */
function hasBrandedInstance(this: Branded, value: unknown): boolean {
  if (!Object.hasOwn(this, CLASS_BRAND)) {
    return Function.prototype[Symbol.hasInstance].call(this, value);
  }
  if ((typeof value !== "object" && typeof value !== "function") || value === null) return false;
  const brand = (this as unknown as Record<symbol, symbol>)[CLASS_BRAND] as symbol;
  return (value as Record<symbol, unknown>)[brand] === true;
}

/** What {@link CairnQError}'s constructor takes besides the message: the standard `cause`, and `fatal`. */
export interface CairnQErrorInit extends ErrorOptions {
  /** Overrides the class's {@link CairnQError.fatal} verdict. @default the class's verdict */
  fatal?: boolean;
}

function optionsOf(options: CairnQErrorOptions | undefined): CairnQErrorInit | undefined {
  if (options === undefined) return undefined;
  const init: CairnQErrorInit = {};
  if (options.cause !== undefined) init.cause = options.cause;
  if (options.fatal !== undefined) init.fatal = options.fatal;
  return init;
}

/**
 * Base class of every error a CairnQ caller may catch.
 *
 * Subclasses carry structured fields (`taskId`, `key`, …) so callers branch
 * on data, not text; `instanceof` works across copies of the package (see the
 * module comment).
 *
 * @example
 * ```ts
 * try { await client.call(summarize, { url }); }
 * catch (err) { if (err instanceof CairnQError) log.warn(err.message, { name: err.name }); }
 * ```
 */
export class CairnQError extends Error {
  static {
    brandErrorClass(this, ERROR_BRAND, "CairnQError");
  }

  /**
   * The verdict instances of this class get unless their constructor is told
   * otherwise: `true` on the classes that report a misconfiguration or a
   * wrong database ({@link ProtocolVersionMismatch}, {@link SchemaMismatch},
   * {@link DatabaseUnusable}, {@link InvalidArgument},
   * {@link UnsupportedBackend}, {@link SerializationError}).
   */
  static readonly fatalByDefault: boolean = false;

  /**
   * Whether repeating the operation unchanged cannot succeed: the cause is
   * the configuration, the input or the database itself (a directory given
   * as the SQLite file, a database of another protocol major or another
   * installation, an invalid argument), not a passing condition (a server
   * restarting, a lock held, a lost lease). A worker's claim loop stops on
   * a fatal error instead of retrying it forever; anything else — including
   * every error that is not a `CairnQError` — counts as transient. Test it
   * with {@link isFatalError}, which also reads errors from other copies of
   * this package.
   */
  readonly fatal: boolean;

  constructor(message: string, options?: CairnQErrorInit) {
    const { fatal, ...errorOptions } = options ?? {};
    super(message, options === undefined ? undefined : errorOptions);
    this.fatal = fatal ?? new.target.fatalByDefault;
  }
}

/**
 * Whether `err` is a {@link CairnQError} marked {@link CairnQError.fatal}:
 * retrying the operation that raised it cannot succeed without a change of
 * configuration, input or database. Errors from other copies of this
 * package count (the brand is checked, not the prototype); every other
 * error — a driver's connection error, a timeout — is transient.
 *
 * @example
 * ```ts
 * try { await store.claim(input); }
 * catch (err) { if (isFatalError(err)) throw err; else await sleep(backoffMs); }
 * ```
 */
export function isFatalError(err: unknown): boolean {
  return err instanceof CairnQError && (err as { fatal?: unknown }).fatal === true;
}

/**
 * A keyed submit with conflict `reject` found the key already taken (§5.1).
 *
 * Nothing was written. Raised for any status of the existing task.
 */
export class AlreadyExists extends CairnQError {
  static {
    brandErrorClass(this, "cairnq.error.AlreadyExists", "AlreadyExists");
  }

  /** The business key that is taken. */
  readonly key: string;

  constructor(key: string, options?: CairnQErrorOptions) {
    super(
      options?.message ??
        `a task with key '${key}' already exists and the submit used conflict 'reject', so nothing was submitted; ` +
          `use conflict 'reuse' to get the existing task, or 'replace' to supersede it`,
      optionsOf(options),
    );
    this.key = key;
  }
}

/**
 * The backpressure gate waited `maxQueueWaitMs` without headroom (§5.6).
 *
 * Nothing was enqueued; the caller may retry later.
 */
export class QueueFull extends CairnQError {
  static {
    brandErrorClass(this, "cairnq.error.QueueFull", "QueueFull");
  }

  readonly queue: string;
  /** The configured depth limit of queued tasks. */
  readonly maxDepth: number;
  /** How long the submit waited for headroom. */
  readonly waitedMs: number;

  constructor(queue: string, maxDepth: number, waitedMs: number, options?: CairnQErrorOptions) {
    super(
      options?.message ??
        `queue '${queue}' stayed full (${maxDepth} queued tasks, the maxQueueDepth limit) for ${waitedMs}ms, so nothing was submitted; ` +
          `add workers for '${queue}', raise maxQueueDepth or maxQueueWaitMs, or retry later`,
      optionsOf(options),
    );
    this.queue = queue;
    this.maxDepth = maxDepth;
    this.waitedMs = waitedMs;
  }
}

/**
 * A wait or call reached its deadline before the task was terminal (§7).
 *
 * The task keeps running; `task` is the row read on the timeout beat (or
 * `null` when none was found), so callers can see where it was stuck.
 */
export class TaskTimeout extends CairnQError {
  static {
    brandErrorClass(this, "cairnq.error.TaskTimeout", "TaskTimeout");
  }

  /** The awaited task's id (for a by-key wait that never resolved: the key). */
  readonly taskId: string;
  /** The awaited key for by-key waits, else `null`. */
  readonly key: string | null;
  /** The row read at the deadline, or `null` if none was found. */
  readonly task: Task | null;

  constructor(taskId: string, key: string | null = null, task: Task | null = null, options?: CairnQErrorOptions) {
    super(options?.message ?? TaskTimeout.describe(taskId, key, task), optionsOf(options));
    this.taskId = taskId;
    this.key = key;
    this.task = task;
  }

  private static describe(taskId: string, key: string | null, task: Task | null): string {
    const subject = key === null ? `task ${taskId}` : `task with key '${key}'`;
    if (task === null) {
      return `${subject} was not found before the wait deadline; check the id/key and that the task was submitted to this database`;
    }
    return (
      `${subject} did not finish before the wait deadline (status ${task.status}, attempt ${task.attempt}/${task.max_attempts}, ` +
      `queue '${task.queue}'); it keeps running — wait again with a longer timeout, or check that a worker with a handler for ` +
      `'${task.name}' is running against this database`
    );
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * A called task ended `failed` (§7); the fields unpack its stored envelope.
 *
 * The stored error is whatever JSON the failing writer chose (peers, `ctx.fail`
 * with a plain object, §5.16 fallbacks), so every field tolerates a missing or
 * mistyped value and falls back to the §12 defaults; the raw value stays in
 * `error`. A bare JSON string is taken as the message. `message` is the
 * envelope's message verbatim, so callers can match it.
 */
export class TaskFailed extends CairnQError {
  static {
    brandErrorClass(this, "cairnq.error.TaskFailed", "TaskFailed");
  }

  /** The stored error value exactly as read (normally an {@link ErrorEnvelope}). */
  readonly error: unknown;
  /** @default "TaskError" */
  readonly type: string;
  /** @default "task_error" */
  readonly code: string;
  /** @default false */
  readonly retryable: boolean;
  /** @default {} */
  readonly details: Record<string, unknown>;
  /** The failed task's id when the caller knows it. @default null */
  readonly taskId: string | null;

  constructor(error: unknown, options?: { taskId?: string | null; cause?: unknown }) {
    const envelope = isRecord(error) ? error : {};
    const message =
      typeof envelope.message === "string" ? envelope.message : typeof error === "string" ? error : "task failed";
    super(message, optionsOf(options));
    this.error = error;
    this.type = typeof envelope.type === "string" ? envelope.type : "TaskError";
    this.code = typeof envelope.code === "string" ? envelope.code : "task_error";
    this.retryable = typeof envelope.retryable === "boolean" ? envelope.retryable : false;
    this.details = isRecord(envelope.details) ? envelope.details : {};
    this.taskId = options?.taskId ?? null;
  }
}

/** A called task ended `canceled` (§7); it has no result. */
export class TaskCanceled extends CairnQError {
  static {
    brandErrorClass(this, "cairnq.error.TaskCanceled", "TaskCanceled");
  }

  readonly taskId: string;

  constructor(taskId: string, options?: CairnQErrorOptions) {
    super(
      options?.message ??
        `task ${taskId} was canceled before it finished, so it has no result; submit it again or retry it if the work is still needed`,
      optionsOf(options),
    );
    this.taskId = taskId;
  }
}

/**
 * An owned write matched nothing: this worker no longer holds the task (§5.0, §8.5).
 *
 * The write was not applied. The lease expired (another worker may already be
 * re-running the task), or the task was settled; the handler should stop.
 */
export class LostLease extends CairnQError {
  static {
    brandErrorClass(this, "cairnq.error.LostLease", "LostLease");
  }

  readonly taskId: string;

  constructor(taskId: string, options?: CairnQErrorOptions) {
    super(
      options?.message ??
        `this worker no longer owns task ${taskId} (its lease expired, it was settled, or another worker claimed it), ` +
          `so the write was not applied; stop working on it, and raise leaseMs if heartbeats are being delayed`,
      optionsOf(options),
    );
    this.taskId = taskId;
  }
}

/**
 * The worker's heartbeat ran more than one interval late (§8.5).
 *
 * Reported through `onError` only: it warns that leases may expire while the
 * event loop is blocked, so another worker could run the same task.
 */
export class EventLoopBlocked extends CairnQError {
  static {
    brandErrorClass(this, "cairnq.error.EventLoopBlocked", "EventLoopBlocked");
  }

  /** How late the heartbeat ran beyond its interval. */
  readonly lateMs: number;
  readonly intervalMs: number;
  readonly leaseMs: number;

  constructor(lateMs: number, intervalMs: number, leaseMs: number, options?: CairnQErrorOptions) {
    super(
      options?.message ??
        `the event loop was blocked: a heartbeat ran ${lateMs}ms late (interval ${intervalMs}ms, lease ${leaseMs}ms), ` +
          `so leases may expire and tasks run twice; move CPU-bound work off the main thread or raise leaseMs`,
      optionsOf(options),
    );
    this.lateMs = lateMs;
    this.intervalMs = intervalMs;
    this.leaseMs = leaseMs;
  }
}

/** Fields a {@link ProtocolVersionMismatch} may carry besides its message. */
export interface ProtocolVersionMismatchFields extends CairnQErrorOptions {
  /**
   * The `protocol_version` value as the database holds it, when it is not an integer (`"1.0"`, `"v2"`): the
   * message shows it, where `storedVersion` is `NaN`. @default undefined
   */
  storedText?: string;
}

/**
 * The database's `protocol_version` is not one this SDK speaks (§11).
 *
 * Raised at connect time; the SDK refuses to run rather than corrupt rows a
 * peer of another version relies on. A stored version of 0 means the meta row
 * is absent.
 */
export class ProtocolVersionMismatch extends CairnQError {
  static {
    brandErrorClass(this, "cairnq.error.ProtocolVersionMismatch", "ProtocolVersionMismatch");
  }

  /** Retrying cannot help: see {@link CairnQError.fatal}. */
  static override readonly fatalByDefault: boolean = true;

  readonly storedVersion: number;
  readonly supportedVersion: number;

  constructor(storedVersion: number, supportedVersion: number, options?: ProtocolVersionMismatchFields) {
    const shown = options?.storedText === undefined ? String(storedVersion) : JSON.stringify(options.storedText);
    const stored = storedVersion === 0 ? "has no protocol_version row" : `has CairnQ protocol_version ${shown}`;
    super(
      options?.message ??
        `the database ${stored} but this SDK supports protocol_version ${supportedVersion}, so it refuses to run; ` +
          `use a CairnQ release that supports the stored version, or point it at another database`,
      optionsOf(options),
    );
    this.storedVersion = storedVersion;
    this.supportedVersion = supportedVersion;
  }
}

/** Fields a {@link SchemaMismatch} may carry besides its message. */
export interface SchemaMismatchFields extends CairnQErrorOptions {
  /** The `schema` option, if one was set. @default null */
  schema?: string | null;
  /** The connection's `current_schema()`. @default null */
  currentSchema?: string | null;
  /** Schemas already holding `cairnq_tasks`. @default [] */
  installations?: readonly string[];
}

/**
 * Connecting would use a different Postgres schema than the installation (§10).
 *
 * Raised by the installation guard before migrations, because connecting
 * anyway would create a second, invisible installation.
 */
export class SchemaMismatch extends CairnQError {
  static {
    brandErrorClass(this, "cairnq.error.SchemaMismatch", "SchemaMismatch");
  }

  /** Retrying cannot help: see {@link CairnQError.fatal}. */
  static override readonly fatalByDefault: boolean = true;

  readonly schema: string | null;
  readonly currentSchema: string | null;
  readonly installations: readonly string[];

  constructor(message: string, fields?: SchemaMismatchFields) {
    super(fields?.message ?? message, optionsOf(fields));
    this.schema = fields?.schema ?? null;
    this.currentSchema = fields?.currentSchema ?? null;
    this.installations = fields?.installations ?? [];
  }
}

/**
 * A value cannot cross the JSON boundary (§2.2): it would be coerced or lost.
 *
 * `path` names the bad value (`payload.items[2].n`), `reason` says why; the
 * message combines both.
 */
export class SerializationError extends CairnQError {
  static {
    brandErrorClass(this, "cairnq.error.SerializationError", "SerializationError");
  }

  /** Retrying cannot help: see {@link CairnQError.fatal}. */
  static override readonly fatalByDefault: boolean = true;

  /** Where the bad value sits, rooted at what was encoded (e.g. `payload.items[2].n`). */
  readonly path: string;
  /** Why it cannot be encoded, and what to do instead. */
  readonly reason: string;

  constructor(path: string, reason: string, options?: CairnQErrorOptions) {
    super(options?.message ?? `cannot encode ${path} as JSON: ${reason}`, optionsOf(options));
    this.path = path;
    this.reason = reason;
  }
}

/**
 * The operation needs a capability this backend lacks (§5.15, e.g. `succeedIn` on a store without `transactionalComplete`).
 */
export class UnsupportedBackend extends CairnQError {
  static {
    brandErrorClass(this, "cairnq.error.UnsupportedBackend", "UnsupportedBackend");
  }

  /** Retrying cannot help: see {@link CairnQError.fatal}. */
  static override readonly fatalByDefault: boolean = true;

  /** What was asked for, e.g. `"succeedIn"`. */
  readonly feature: string;
  /** The backend that lacks it, e.g. `"sqlite"`. */
  readonly backend: string;

  constructor(feature: string, backend: string, options?: CairnQErrorOptions) {
    super(
      options?.message ??
        `${feature} is not supported by the ${backend} backend; use a backend that supports it (e.g. Postgres) or settle the task another way`,
      optionsOf(options),
    );
    this.feature = feature;
    this.backend = backend;
  }
}

/**
 * The database cannot be opened or used as a CairnQ database at all: the
 * SQLite path is a directory, a file that is not a database, a file the
 * process may not read or write, or a directory it cannot create; on a
 * server (Postgres, MySQL/MariaDB), the database named does not exist or the
 * server refused the login.
 *
 * Fatal (see {@link CairnQError.fatal}): retrying cannot help until the
 * path, its permissions, the database or the credentials change, so a
 * worker stops instead of retrying. `database` names the file as resolved
 * (or the server database asked for); `reason` says what is wrong with it.
 */
export class DatabaseUnusable extends CairnQError {
  static {
    brandErrorClass(this, "cairnq.error.DatabaseUnusable", "DatabaseUnusable");
  }

  /** Retrying cannot help: see {@link CairnQError.fatal}. */
  static override readonly fatalByDefault: boolean = true;

  /** The database as the store resolved it (an absolute file path for SQLite, the database name on a server). */
  readonly database: string;
  /** What is wrong with it, and what to do. */
  readonly reason: string;

  constructor(database: string, reason: string, options?: CairnQErrorOptions) {
    super(options?.message ?? `cannot use '${database}' as a CairnQ database: ${reason}`, optionsOf(options));
    this.database = database;
    this.reason = reason;
  }
}

/**
 * An operation input is invalid (an unknown conflict, `maxAttempts < 1`, a negative delay, …).
 *
 * Raised before anything is written, by the shared input validation every
 * store uses, so bad input fails the same way on every backend. `argument`
 * names the offending input so callers and tests need not parse the message.
 */
export class InvalidArgument extends CairnQError {
  static {
    brandErrorClass(this, "cairnq.error.InvalidArgument", "InvalidArgument");
  }

  /** Retrying cannot help: see {@link CairnQError.fatal}. */
  static override readonly fatalByDefault: boolean = true;

  /** The input that was rejected, e.g. `"maxAttempts"`. */
  readonly argument: string;

  constructor(argument: string, message: string, options?: CairnQErrorOptions) {
    super(options?.message ?? message, optionsOf(options));
    this.argument = argument;
  }
}

/** Options of a {@link TaskError}; each becomes an envelope field. */
export interface TaskErrorOptions {
  /** Machine-readable failure code. @default "task_error" */
  code?: string;
  /** Whether the worker may run the task again. @default false */
  retryable?: boolean;
  /** The envelope's `type`. @default "TaskError" */
  type?: string;
  /** Handler data stored with the failure (JSON). @default {} */
  details?: Record<string, unknown>;
  /** The underlying error, if any. @default undefined */
  cause?: unknown;
}

/**
 * What a handler throws to say how its task failed (§8.4, §12).
 *
 * Not retryable by default: a deliberate `TaskError` is a verdict, whereas any
 * other thrown error is retried.
 *
 * @example
 * ```ts
 * worker.task(chargeCard, async (ctx, p) => {
 *   if (!p.cardId) throw new TaskError("card id missing", { code: "bad_input" });
 *   // ...
 * });
 * ```
 */
export class TaskError extends CairnQError {
  static {
    brandErrorClass(this, "cairnq.error.TaskError", "TaskError");
  }

  readonly code: string;
  readonly retryable: boolean;
  readonly type: string;
  readonly details: Record<string, unknown>;

  /**
   * @throws InvalidArgument when an option is of the wrong type (`retryable: "yes"`, `code: 42`, `details: 5`) or
   * unknown (`retriable`): the envelope it would build is one the database cannot hold or a reader cannot trust,
   * and a handler that threw it would learn that only from the task's stored failure.
   */
  constructor(message: string, options?: TaskErrorOptions) {
    const problem = taskErrorOptionsProblem(options);
    if (problem !== undefined) throw new InvalidArgument(problem.argument, `new TaskError(${describe(message)}, …): ${problem.message}`);
    super(message, optionsOf(options));
    this.code = options?.code ?? "task_error";
    this.retryable = options?.retryable ?? false;
    this.type = options?.type ?? "TaskError";
    this.details = options?.details ?? {};
  }

  /** The §12 envelope to store: `{ type, code, message, retryable, details }`, in that key order. */
  envelope(): ErrorEnvelope {
    return { type: this.type, code: this.code, message: this.message, retryable: this.retryable, details: this.details };
  }
}

/**
 * LISTEN will never work on this connection (e.g. a transaction-mode pooler) (§9, §12).
 *
 * Thrown by a caller-supplied executor's listen hook so the store stops
 * retrying and just polls. Deliberately not a `CairnQError`: it never reaches
 * callers of the store. Branded like the others so a store from another copy
 * of the package still recognizes it.
 */
export class ListenUnavailable extends Error {
  static {
    brandErrorClass(this, "cairnq.ListenUnavailable", "ListenUnavailable");
  }

  constructor(
    message = "LISTEN is unavailable on this connection, so CairnQ falls back to polling; use a session-mode connection to get push wakeups",
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}
