/**
 * The worker's task registry (§8.2): which handler runs each task name, and
 * how that name is claimed (`batch`, `concurrency`, `resource`).
 */
import type { FlowControl, Logger, RetryPolicy, TaskDef } from "@cairnq/protocol";
import type { RateLimit } from "@cairnq/protocol";
import { InvalidArgument, UnsupportedBackend } from "@cairnq/protocol";
import { describe, hasGroupLimits, normalizeFlowControl, requireName } from "@cairnq/protocol/adapter";
import type { GivenBackoff, NormalizedRetryPolicy } from "@cairnq/protocol/sdk";
import { logSafely, normalizeRetryPolicy } from "@cairnq/protocol/sdk";
import { checkOptions, describeKind, requireCount } from "@cairnq/runtime";
import { argumentsAfter } from "./arguments.js";
import type { NameRule } from "./planner.js";
import type { TaskContext } from "./task-context.js";

/** A value or a promise of it. */
export type Awaitable<T> = T | Promise<T>;

/**
 * Handles one task: gets its context and payload; what it returns becomes
 * the task's result (unless it settled the task itself). It must return the
 * result type: a handler that returns nothing stores `null`, which a
 * `call()` would hand back typed as `R`. (A handler for a task whose result
 * type is `void` returns nothing.)
 */
export type TaskHandler<P = unknown, R = unknown> = (ctx: TaskContext<P, R>, payload: P) => Awaitable<R>;

/** Results of a batch call by task id; ids left out complete with a `null` result. */
export type BatchResults<R = unknown> = Readonly<Record<string, R>> | ReadonlyMap<string, R>;

/** Handles a batch of tasks of one name in one call (`worker.task(name, { batch }, handler)`). */
export type BatchHandler<P = unknown, R = unknown> = (ctxs: TaskContext<P, R>[]) => Awaitable<BatchResults<R> | void>;

/**
 * The handler `worker.task(task, handler)` takes: for a {@link TaskDef}, one
 * with its payload and result types; for a name, `P` and `R` as the handler
 * declares them (its payload annotation, what it returns).
 */
export type HandlerFor<D, P = unknown, R = unknown> = D extends TaskDef<infer DP, infer DR> ? TaskHandler<DP, DR> : TaskHandler<P, R>;

/** The batch handler `worker.task(task, { batch }, handler)` takes; see {@link HandlerFor}. */
export type BatchHandlerFor<D, P = unknown, R = unknown> = D extends TaskDef<infer DP, infer DR> ? BatchHandler<DP, DR> : BatchHandler<P, R>;

/**
 * Per-name options of `worker.task` (§8.2). The retry options
 * (`retryBackoffMs`, `retryBackoffMaxMs`, `retryBackoff`) replace the
 * worker's for this name only; see {@link RetryPolicy}.
 */
export interface TaskOptions extends RetryPolicy {
  /** Deliver up to this many tasks per call to a batch handler (an integer ≥ 1). @default undefined (one task per call, single handler) */
  batch?: number;
  /** At most this many calls of this name at once (an integer ≥ 1). @default undefined (only the worker's concurrency) */
  concurrency?: number;
  /** A resource declared in the worker's `resources`; each call holds one unit. @default undefined */
  resource?: string;
  /**
   * At most this many tasks of this name `running` across every worker of the
   * database (an integer ≥ 1), checked inside the claim transaction. Every
   * worker of the name must declare the same value. Needs a store with
   * `capabilities.flowControl`. @default undefined (no cross-process cap)
   */
  globalConcurrency?: number;
  /**
   * At most `max` claims of this name in any window of `perMs` ms, across
   * every worker of the database, checked inside the claim transaction.
   * Needs a store with `capabilities.flowControl`. @default undefined (no rate limit)
   */
  rateLimit?: RateLimit;
  /**
   * At most this many tasks of this name and one group (the submit option
   * `group`) `running` across every worker of the database (an integer ≥ 1),
   * checked inside the claim transaction; claims of the name also rotate
   * across its groups, least recently served first, so one group's backlog
   * never starves another. Tasks without a group are not limited. Needs a
   * store with `capabilities.groups`. @default undefined (no group limit)
   */
  groupConcurrency?: number;
  /**
   * At most `max` claims of this name and one group in any window of `perMs`
   * ms, across every worker of the database; like `groupConcurrency` it makes
   * claims rotate across groups. Needs a store with `capabilities.groups`.
   * @default undefined (no group rate limit)
   */
  groupRateLimit?: RateLimit;
}

/** Every key of {@link TaskOptions}, for the unknown-key check. */
export const TASK_OPTION_KEYS = [
  "batch",
  "concurrency",
  "resource",
  "globalConcurrency",
  "rateLimit",
  "groupConcurrency",
  "groupRateLimit",
  "retryBackoffMs",
  "retryBackoffMaxMs",
  "retryBackoff",
] as const satisfies readonly (keyof TaskOptions)[];

/** A handler of either shape, as stored. @internal */
export type AnyHandler = (...args: never[]) => unknown;

/** A registered name: its handler and claim rule. @internal */
export interface Registration extends NameRule {
  readonly handler: AnyHandler;
  /** This name's retry options, replacing the worker's; `null` or absent = the worker's. */
  readonly retry?: NormalizedRetryPolicy | null;
}

/** What the registry checks registrations against. @internal */
export interface RegistryScope {
  readonly workerId: string;
  readonly queues: readonly string[];
  readonly resources: Readonly<Record<string, number>>;
  readonly logger: Logger | undefined;
  /** Whether the store enforces `globalConcurrency` / `rateLimit` (`capabilities.flowControl`). */
  readonly flowControl: boolean;
  /** Whether the store enforces `groupConcurrency` / `groupRateLimit` (`capabilities.groups`). */
  readonly groups?: boolean;
  /** The worker's `retryBackoffMs` / `retryBackoffMaxMs` as its options set them, which a task's are checked against. @default neither set */
  readonly retryBackoff?: GivenBackoff;
}

/**
 * The handlers of one worker by task name, in registration order (the
 * planner's source order). @internal
 */
export class TaskRegistry {
  readonly #scope: RegistryScope;
  readonly #handlers = new Map<string, Registration>();
  /** {@link TaskRegistry.flowControl}'s answer, built once per change of the registrations; `undefined` = to rebuild. */
  #flowControl: Record<string, FlowControl> | null | undefined = undefined;

  constructor(scope: RegistryScope) {
    this.#scope = scope;
  }

  /** Registered names. */
  get size(): number {
    return this.#handlers.size;
  }

  /** The registration of `name`, if any. */
  get(name: string): Registration | undefined {
    return this.#handlers.get(name);
  }

  /** Every registration, in registration order. */
  registrations(): Registration[] {
    return [...this.#handlers.values()];
  }

  /** Registered names, in registration order. */
  names(): string[] {
    return [...this.#handlers.keys()];
  }

  /**
   * The `ClaimInput.flowControl` of the registered names that have limits, or `null` when none has.
   * Every claim cycle sends it, so it is built when the registrations change, not per claim.
   */
  flowControl(): Record<string, FlowControl> | null {
    if (this.#flowControl === undefined) this.#flowControl = flowControlOf(this.#handlers.values());
    return this.#flowControl;
  }

  /** Unregisters a name; whether it was registered. */
  remove(task: TaskDef | string): boolean {
    const removed = this.#handlers.delete(typeof task === "string" ? task : task.name);
    if (removed) this.#flowControl = undefined;
    return removed;
  }

  /**
   * Checks and stores a registration (`worker.task`'s arguments); a name
   * registered again replaces its handler and options.
   *
   * @throws `InvalidArgument` for a bad name, option or undeclared resource.
   */
  register(task: TaskDef | string, optionsOrHandler: unknown, rest: readonly unknown[]): void {
    const name = requireName(typeof task === "string" ? task : (task as TaskDef | null)?.name, "name");
    const shapes = `worker.task('${name}', handler) or worker.task('${name}', options, handler)`;
    let options: TaskOptions;
    let handler: unknown;
    // Every argument is checked: one after the handler (options put last, say) would otherwise be dropped unread.
    if (typeof optionsOrHandler === "function") {
      if (rest.length > 0) {
        throw new InvalidArgument(
          "options",
          `worker.task('${name}', handler, …) got ${argumentsAfter(rest)} after its handler, which would be ignored; the options come before the handler: ${shapes}`,
        );
      }
      options = {};
      handler = optionsOrHandler;
    } else {
      if (optionsOrHandler === null || typeof optionsOrHandler !== "object" || Array.isArray(optionsOrHandler)) {
        // With a handler after it, the second argument was meant as the options; alone, as the handler.
        throw new InvalidArgument(
          typeof rest[0] === "function" ? "options" : "handler",
          `worker.task('${name}', …) got ${describe(optionsOrHandler)} as its second argument, which is neither a handler function nor an options object; call ${shapes}`,
        );
      }
      options = checkOptions(optionsOrHandler, `worker.task('${name}', options, handler)`, TASK_OPTION_KEYS);
      handler = rest[0];
      if (rest.length > 1) {
        throw new InvalidArgument("handler", `worker.task('${name}', options, handler, …) got ${argumentsAfter(rest.slice(1))} after its handler, which would be ignored; call ${shapes}`);
      }
    }
    if (typeof handler !== "function") {
      throw new InvalidArgument("handler", `worker.task('${name}', …) needs a handler function, got ${describeKind(handler)}; call ${shapes}`);
    }
    const batch = options.batch === undefined ? null : requireCount(options.batch, "batch");
    const concurrency = options.concurrency === undefined ? null : requireCount(options.concurrency, "concurrency");
    let resource: string | null = null;
    const { resources, queues, logger, workerId } = this.#scope;
    if (options.resource !== undefined) {
      resource = requireName(options.resource, "resource");
      if (!Object.hasOwn(resources, resource)) {
        const declared = Object.keys(resources);
        throw new InvalidArgument(
          "resource",
          `task '${name}' uses resource '${resource}', which this worker does not declare ` +
            `(declared: ${declared.length === 0 ? "none" : declared.join(", ")}); add it to the worker's resources option with its capacity`,
        );
      }
    }
    const limits: Record<string, unknown> = {};
    if (options.globalConcurrency !== undefined) limits.globalConcurrency = options.globalConcurrency;
    if (options.rateLimit !== undefined) limits.rateLimit = options.rateLimit;
    if (options.groupConcurrency !== undefined) limits.groupConcurrency = options.groupConcurrency;
    if (options.groupRateLimit !== undefined) limits.groupRateLimit = options.groupRateLimit;
    const flowControl = normalizeFlowControl(limits, `task '${name}' options`);
    if (hasGroupLimits(flowControl) && this.#scope.groups !== true) {
      throw new UnsupportedBackend("groupConcurrency/groupRateLimit", "store's", {
        message: `task '${name}' sets groupConcurrency or groupRateLimit, but this store does not enforce them (capabilities.groups is not true); SQLiteStore, PostgresStore and MySQLStore do`,
      });
    }
    if (flowControl !== null && !this.#scope.flowControl) {
      throw new UnsupportedBackend("globalConcurrency/rateLimit", "store's", {
        message: `task '${name}' sets globalConcurrency or rateLimit, but this store does not enforce them (capabilities.flowControl is not true); SQLiteStore, PostgresStore and MySQLStore do`,
      });
    }
    const retry = normalizeRetryPolicy(options, `task '${name}' options`, this.#scope.retryBackoff);
    if (typeof task !== "string" && task.queue !== undefined && !queues.includes(task.queue)) {
      logSafely(logger, "warn", "task definition's queue is not one this worker claims from", {
        workerId,
        name,
        queue: task.queue,
        queues,
      });
    }
    this.#handlers.set(name, { name, handler: handler as AnyHandler, batch, concurrency, resource, flowControl, retry });
    this.#flowControl = undefined;
  }
}

/** The `ClaimInput.flowControl` of the names that have limits, or `null` when none has. */
function flowControlOf(rules: Iterable<NameRule>): Record<string, FlowControl> | null {
  let out: Record<string, FlowControl> | null = null;
  for (const rule of rules) {
    const limits = rule.flowControl ?? null;
    if (limits === null) continue;
    out ??= {};
    out[rule.name] = {
      ...(limits.globalConcurrency === null ? {} : { globalConcurrency: limits.globalConcurrency }),
      ...(limits.rateLimit === null ? {} : { rateLimit: limits.rateLimit }),
      ...((limits.groupConcurrency ?? null) === null ? {} : { groupConcurrency: limits.groupConcurrency as number }),
      ...((limits.groupRateLimit ?? null) === null ? {} : { groupRateLimit: limits.groupRateLimit as RateLimit }),
    };
  }
  return out;
}
