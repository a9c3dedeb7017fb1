import { describe, expect, it } from "vitest";
import {
  AlreadyExists,
  CairnQError,
  DatabaseUnusable,
  EventLoopBlocked,
  InvalidArgument,
  ListenUnavailable,
  LostLease,
  ProtocolVersionMismatch,
  QueueFull,
  SchemaMismatch,
  SerializationError,
  TaskCanceled,
  TaskError,
  TaskFailed,
  TaskTimeout,
  UnsupportedBackend,
  brandErrorClass,
  isFatalError,
} from "../src/errors.js";
import { taskErrorProblem } from "../src/task-error-checks.js";
import type * as ErrorsExports from "../src/errors.js";
import type { Task } from "../src/task.js";

type ErrorsModule = typeof ErrorsExports;

/** A second, independent instance of the module, as if the package were installed twice. */
async function loadSecondCopy(): Promise<ErrorsModule> {
  const specifier = "../src/errors.ts?second-copy";
  return (await import(/* @vite-ignore */ specifier)) as ErrorsModule;
}

function sampleTask(overrides: Partial<Task> = {}): Task {
  return {
    id: "task_01J9Z8Q0R8V6X4T2M1N3P5S7W9",
    name: "summarize",
    queue: "default",
    status: "queued",
    attempt: 0,
    max_attempts: 3,
    ...overrides,
  } as Task;
}

describe("error classes", () => {
  const samples = (): [string, CairnQError][] => [
    ["AlreadyExists", new AlreadyExists("k")],
    ["QueueFull", new QueueFull("q", 10, 600000)],
    ["TaskTimeout", new TaskTimeout("task_x")],
    ["TaskFailed", new TaskFailed({})],
    ["TaskCanceled", new TaskCanceled("task_x")],
    ["LostLease", new LostLease("task_x")],
    ["EventLoopBlocked", new EventLoopBlocked(300, 100, 300)],
    ["ProtocolVersionMismatch", new ProtocolVersionMismatch(2, 1)],
    ["SchemaMismatch", new SchemaMismatch("schema mismatch")],
    ["SerializationError", new SerializationError("$.a", "bad")],
    ["UnsupportedBackend", new UnsupportedBackend("succeedIn", "sqlite")],
    ["InvalidArgument", new InvalidArgument("limit", "limit must be ≥ 0")],
    ["DatabaseUnusable", new DatabaseUnusable("/tmp/x", "it is a directory")],
    ["TaskError", new TaskError("boom")],
  ];

  it("names each error after its class and makes it a CairnQError and an Error", () => {
    for (const [name, err] of samples()) {
      expect(err.name).toBe(name);
      expect(err).toBeInstanceOf(CairnQError);
      expect(err).toBeInstanceOf(Error);
      expect(String(err.stack)).toContain(`${name}: `);
      expect(Object.keys(err)).not.toContain("name");
    }
  });

  it("matches instanceof only for its own class", () => {
    const all = samples();
    for (const [, err] of all) {
      for (const [, other] of all) {
        expect(err instanceof (other.constructor as typeof CairnQError)).toBe(err.constructor === other.constructor);
      }
    }
  });

  it("recognizes instances created by a second copy of the package, class by class", async () => {
    const copy = await loadSecondCopy();
    expect(copy.TaskFailed).not.toBe(TaskFailed);
    const failed = new copy.TaskFailed({ code: "x" });
    expect(failed).toBeInstanceOf(TaskFailed);
    expect(failed).toBeInstanceOf(CairnQError);
    expect(failed).not.toBeInstanceOf(LostLease);
    const lost = new LostLease("task_x");
    expect(lost).toBeInstanceOf(copy.LostLease);
    expect(lost).toBeInstanceOf(copy.CairnQError);
    expect(lost).not.toBeInstanceOf(copy.TaskFailed);
    expect(new copy.ListenUnavailable()).toBeInstanceOf(ListenUnavailable);
    expect(new copy.ListenUnavailable()).not.toBeInstanceOf(CairnQError);
  });

  it("brandErrorClass: a store's own error class passes instanceof across copies, a caller's subclass by prototype", async () => {
    const copy = await loadSecondCopy();
    const make = (brand: typeof brandErrorClass) =>
      class StoreBusy extends Error {
        static {
          brand(this, "cairnq.test.StoreBusy", "StoreBusy");
        }
      };
    const Ours = make(brandErrorClass);
    const Theirs = make(copy.brandErrorClass);
    expect(Theirs).not.toBe(Ours);
    expect(new Theirs("x")).toBeInstanceOf(Ours);
    expect(new Ours("x")).toBeInstanceOf(Theirs);
    expect(new Ours("x").name).toBe("StoreBusy");
    expect(new Error("x")).not.toBeInstanceOf(Ours);
    expect(new Ours("x")).not.toBeInstanceOf(CairnQError);
    class Narrower extends Ours {}
    expect(new Narrower("x")).toBeInstanceOf(Ours);
    expect(new Ours("x")).not.toBeInstanceOf(Narrower);
  });

  it("rejects non-objects and unrelated objects", () => {
    for (const value of [null, undefined, 1, "LostLease", Symbol("x"), () => 1, {}, new Error("x")]) {
      expect(value instanceof CairnQError).toBe(false);
      expect(value instanceof LostLease).toBe(false);
    }
  });

  it("falls back to the prototype chain for a caller's unbranded subclass", () => {
    class RateLimited extends TaskError {}
    const limited = new RateLimited("slow down", { retryable: true });
    expect(limited).toBeInstanceOf(RateLimited);
    expect(limited).toBeInstanceOf(TaskError);
    expect(limited).toBeInstanceOf(CairnQError);
    expect(new TaskError("plain")).not.toBeInstanceOf(RateLimited);
    expect(limited.name).toBe("TaskError");
  });

  it("passes a cause through and lets the message be replaced", () => {
    const cause = new Error("root");
    const err = new LostLease("task_x", { cause, message: "custom" });
    expect(err.cause).toBe(cause);
    expect(err.message).toBe("custom");
    expect("cause" in new LostLease("task_x")).toBe(false);
    expect(new CairnQError("m", { cause }).cause).toBe(cause);
  });
});

describe("AlreadyExists", () => {
  it("carries the key and says what to do", () => {
    const err = new AlreadyExists("order-42");
    expect(err.key).toBe("order-42");
    expect(err.message).toContain("'order-42'");
    expect(err.message).toContain("'reject'");
    expect(err.message).toContain("'reuse'");
  });
});

describe("QueueFull", () => {
  it("carries queue, maxDepth and waitedMs", () => {
    const err = new QueueFull("emails", 100, 600000);
    expect([err.queue, err.maxDepth, err.waitedMs]).toEqual(["emails", 100, 600000]);
    expect(err.message).toContain("'emails'");
    expect(err.message).toContain("100");
    expect(err.message).toContain("600000ms");
  });
});

describe("TaskTimeout", () => {
  it("defaults key and task to null and says the task was not found", () => {
    const err = new TaskTimeout("task_x");
    expect(err.taskId).toBe("task_x");
    expect(err.key).toBeNull();
    expect(err.task).toBeNull();
    expect(err.message).toContain("task task_x was not found");
  });

  it("names the key for by-key waits", () => {
    const err = new TaskTimeout("order-1", "order-1", null);
    expect(err.key).toBe("order-1");
    expect(err.message).toContain("task with key 'order-1' was not found");
  });

  it("describes where a found task is stuck", () => {
    const task = sampleTask({ status: "running", attempt: 2 });
    const err = new TaskTimeout(task.id, null, task);
    expect(err.task).toBe(task);
    expect(err.message).toContain("status running, attempt 2/3");
    expect(err.message).toContain("'summarize'");
  });

  it("accepts the wait loop's own message", () => {
    expect(new TaskTimeout("task_x", null, null, { message: "never claimed" }).message).toBe("never claimed");
  });
});

describe("TaskFailed", () => {
  it("unpacks a full envelope and keeps the raw value", () => {
    const envelope = { type: "Boom", code: "boom", message: "it broke", retryable: true, details: { n: 1 } };
    const err = new TaskFailed(envelope, { taskId: "task_x" });
    expect(err.error).toBe(envelope);
    expect([err.type, err.code, err.message, err.retryable, err.details]).toEqual([
      "Boom",
      "boom",
      "it broke",
      true,
      { n: 1 },
    ]);
    expect(err.taskId).toBe("task_x");
  });

  it("falls back to the §12 defaults for missing or mistyped fields", () => {
    for (const error of [
      {},
      null,
      undefined,
      42,
      [1, 2],
      { type: 1, code: false, message: {}, retryable: "yes", details: [1] },
      { details: null },
    ]) {
      const err = new TaskFailed(error);
      expect(err.error).toBe(error);
      expect([err.type, err.code, err.message, err.retryable, err.details]).toEqual([
        "TaskError",
        "task_error",
        "task failed",
        false,
        {},
      ]);
      expect(err.taskId).toBeNull();
    }
  });

  it("takes a bare JSON string as the message", () => {
    expect(new TaskFailed("disk full").message).toBe("disk full");
  });

  it("passes a cause through", () => {
    const cause = new Error("x");
    expect(new TaskFailed({}, { cause }).cause).toBe(cause);
  });
});

describe("TaskCanceled and LostLease", () => {
  it("carry the task id", () => {
    const canceled = new TaskCanceled("task_a");
    expect(canceled.taskId).toBe("task_a");
    expect(canceled.message).toContain("task_a was canceled");
    const lost = new LostLease("task_b");
    expect(lost.taskId).toBe("task_b");
    expect(lost.message).toContain("no longer owns task task_b");
    expect(lost.message).toContain("leaseMs");
  });
});

describe("EventLoopBlocked", () => {
  it("carries lateMs, intervalMs and leaseMs", () => {
    const err = new EventLoopBlocked(1200, 1000, 3000);
    expect([err.lateMs, err.intervalMs, err.leaseMs]).toEqual([1200, 1000, 3000]);
    expect(err.message).toContain("1200ms late");
  });
});

describe("ProtocolVersionMismatch", () => {
  it("states both versions", () => {
    const err = new ProtocolVersionMismatch(2, 1);
    expect([err.storedVersion, err.supportedVersion]).toEqual([2, 1]);
    expect(err.message).toContain("protocol_version 2");
    expect(err.message).toContain("supports protocol_version 1");
  });

  it("shows a stored value that is not an integer as the database holds it, not as NaN", () => {
    const err = new ProtocolVersionMismatch(Number.NaN, 1, { storedText: "1.0" });
    expect(err.message).toContain('has CairnQ protocol_version "1.0" but this SDK supports protocol_version 1');
    expect(err.storedVersion).toBeNaN();
  });

  it("says when the version row is absent", () => {
    expect(new ProtocolVersionMismatch(0, 1).message).toContain("has no protocol_version row");
  });
});

describe("SchemaMismatch", () => {
  it("keeps the message and defaults its fields", () => {
    const err = new SchemaMismatch("tables live in 'jobs'");
    expect(err.message).toBe("tables live in 'jobs'");
    expect([err.schema, err.currentSchema, err.installations]).toEqual([null, null, []]);
  });

  it("carries the schemas involved", () => {
    const err = new SchemaMismatch("m", { schema: "a", currentSchema: "public", installations: ["b"], message: "n" });
    expect([err.schema, err.currentSchema, err.installations, err.message]).toEqual(["a", "public", ["b"], "n"]);
  });
});

describe("SerializationError", () => {
  it("names the path and the reason", () => {
    const err = new SerializationError("payload.items[2].n", "NaN is not finite");
    expect(err.path).toBe("payload.items[2].n");
    expect(err.reason).toBe("NaN is not finite");
    expect(err.message).toBe("cannot encode payload.items[2].n as JSON: NaN is not finite");
  });
});

describe("UnsupportedBackend", () => {
  it("names the feature and the backend", () => {
    const err = new UnsupportedBackend("succeedIn", "sqlite");
    expect([err.feature, err.backend]).toEqual(["succeedIn", "sqlite"]);
    expect(err.message).toContain("succeedIn is not supported by the sqlite backend");
  });
});

describe("InvalidArgument", () => {
  it("names the argument and keeps the message", () => {
    const err = new InvalidArgument("maxAttempts", "maxAttempts must be ≥ 1");
    expect(err.argument).toBe("maxAttempts");
    expect(err.message).toBe("maxAttempts must be ≥ 1");
  });
});

describe("TaskError", () => {
  it("defaults to a non-retryable task_error", () => {
    const err = new TaskError("bad input");
    expect([err.code, err.retryable, err.type, err.details, err.message]).toEqual([
      "task_error",
      false,
      "TaskError",
      {},
      "bad input",
    ]);
  });

  it("builds its envelope with the five keys in order", () => {
    const cause = new Error("x");
    const err = new TaskError("rate limited", {
      code: "rate_limited",
      retryable: true,
      type: "Upstream",
      details: { retryAfterMs: 5 },
      cause,
    });
    const envelope = err.envelope();
    expect(Object.keys(envelope)).toEqual(["type", "code", "message", "retryable", "details"]);
    expect(envelope).toEqual({
      type: "Upstream",
      code: "rate_limited",
      message: "rate limited",
      retryable: true,
      details: { retryAfterMs: 5 },
    });
    expect(err.cause).toBe(cause);
  });
});

describe("TaskError options (§12 envelope)", () => {
  const refusals: [string, unknown, RegExp][] = [
    ["retryable \"yes\"", { retryable: "yes" }, /new TaskError\("m", …\): retryable must be a boolean, got "yes"/],
    ["retryable 1", { retryable: 1 }, /retryable must be a boolean, got 1/],
    ["code 42", { code: 42 }, /code must be a string, got 42/],
    ["type {}", { type: {} }, /type must be a string, got an object/],
    ["details 5", { details: 5 }, /details must be a plain object \(stored as JSON\), got 5/],
    ["details an array", { details: [1] }, /details must be a plain object .*got an array/],
    ["an unknown key", { retriable: true }, /'retriable' is not an option of TaskError; the options are code, retryable, type, details, cause/],
    ["options a string", "retry", /options must be an object, got "retry"/],
  ];
  it.each(refusals)("refuses %s with InvalidArgument", (_label, options, message) => {
    const make = (): TaskError => new TaskError("m", options as never);
    expect(make).toThrow(InvalidArgument);
    expect(make).toThrow(message);
  });

  it("accepts every valid option, and null details' absence", () => {
    expect(new TaskError("m", { code: "c", type: "T", retryable: true, details: { a: 1 }, cause: 1 }).envelope()).toEqual({
      type: "T",
      code: "c",
      message: "m",
      retryable: true,
      details: { a: 1 },
    });
    expect(new TaskError("m", {}).retryable).toBe(false);
  });

  it("taskErrorProblem finds fields changed after construction, a bad envelope() and a throwing one", () => {
    expect(taskErrorProblem(new TaskError("m"))).toBeUndefined();
    expect(taskErrorProblem(Object.assign(new TaskError("m"), { retryable: "yes" }))).toBe('retryable must be a boolean, got "yes"');
    expect(taskErrorProblem(Object.assign(new TaskError("m"), { details: null }))).toMatch(/details must be a plain object/);
    expect(taskErrorProblem(Object.assign(new TaskError("m"), { message: 5 }))).toBe("message must be a string, got 5");
    class NotObject extends TaskError {
      override envelope(): never {
        return 5 as never;
      }
    }
    expect(taskErrorProblem(new NotObject("m"))).toBe("envelope() must return an object, got 5");
    class BadField extends TaskError {
      override envelope(): never {
        return { ...super.envelope(), code: 1 } as never;
      }
    }
    expect(taskErrorProblem(new BadField("m"))).toBe("envelope(): code must be a string, got 1");
    class BadMessage extends TaskError {
      override envelope(): never {
        return { ...super.envelope(), message: null } as never;
      }
    }
    expect(taskErrorProblem(new BadMessage("m"))).toBe("envelope(): message must be a string, got null");
    class Throws extends TaskError {
      override envelope(): never {
        throw new Error("boom");
      }
    }
    expect(taskErrorProblem(new Throws("m"))).toBe("reading its fields or calling its envelope() threw");
  });
});

describe("ListenUnavailable", () => {
  it("is an Error but not a CairnQError", () => {
    const err = new ListenUnavailable();
    expect(err).toBeInstanceOf(Error);
    expect(err).toBeInstanceOf(ListenUnavailable);
    expect(err).not.toBeInstanceOf(CairnQError);
    expect(err.name).toBe("ListenUnavailable");
    expect(err.message).toContain("polling");
    expect(new LostLease("t")).not.toBeInstanceOf(ListenUnavailable);
  });

  it("accepts a message and a cause", () => {
    const cause = new Error("pgbouncer");
    const err = new ListenUnavailable("transaction pooler", { cause });
    expect(err.message).toBe("transaction pooler");
    expect(err.cause).toBe(cause);
  });
});

describe("DatabaseUnusable", () => {
  it("names the database and the reason, and keeps a cause", () => {
    const cause = new Error("SQLITE_NOTADB");
    const err = new DatabaseUnusable("/srv/app/tasks.db", "it is not a SQLite database", { cause });
    expect(err.database).toBe("/srv/app/tasks.db");
    expect(err.reason).toBe("it is not a SQLite database");
    expect(err.message).toBe("cannot use '/srv/app/tasks.db' as a CairnQ database: it is not a SQLite database");
    expect(err.cause).toBe(cause);
    expect(new DatabaseUnusable("a", "b", { message: "custom" }).message).toBe("custom");
  });
});

describe("fatal (retrying cannot help) vs transient", () => {
  it("marks misconfiguration and wrong-database errors fatal, everything else transient", () => {
    const fatal = [
      new ProtocolVersionMismatch(2, 1),
      new SchemaMismatch("elsewhere"),
      new DatabaseUnusable("/x", "a directory"),
      new InvalidArgument("queues", "bad"),
      new UnsupportedBackend("succeedIn", "sqlite"),
      new SerializationError("payload", "bad"),
    ];
    for (const err of fatal) {
      expect({ name: err.name, fatal: err.fatal }).toEqual({ name: err.name, fatal: true });
      expect(isFatalError(err)).toBe(true);
    }
    const transient = [
      new AlreadyExists("k"),
      new QueueFull("q", 1, 1),
      new TaskTimeout("task_x"),
      new TaskFailed({}),
      new TaskCanceled("task_x"),
      new LostLease("task_x"),
      new EventLoopBlocked(1, 1, 1),
      new TaskError("boom"),
      new CairnQError("plain"),
    ];
    for (const err of transient) {
      expect({ name: err.name, fatal: err.fatal }).toEqual({ name: err.name, fatal: false });
      expect(isFatalError(err)).toBe(false);
    }
    for (const other of [new Error("ECONNREFUSED"), new TypeError("x"), null, undefined, "text", { fatal: true }]) {
      expect(isFatalError(other)).toBe(false);
    }
  });

  it("lets an instance override its class's verdict", () => {
    expect(new CairnQError("no database file", { fatal: true }).fatal).toBe(true);
    expect(new SchemaMismatch("m", { fatal: false }).fatal).toBe(false);
    expect(new ProtocolVersionMismatch(2, 1, { fatal: false }).fatal).toBe(false);
    expect(new LostLease("task_x", { fatal: true, cause: 1 }).fatal).toBe(true);
    expect(Object.keys(new CairnQError("x", { cause: 1 }))).not.toContain("cause");
  });

  it("reads the verdict of an error from a second copy of the package", async () => {
    const copy = await loadSecondCopy();
    expect(isFatalError(new copy.ProtocolVersionMismatch(2, 1))).toBe(true);
    expect(isFatalError(new copy.LostLease("task_x"))).toBe(false);
    expect(copy.isFatalError(new DatabaseUnusable("/x", "y"))).toBe(true);
  });
});
