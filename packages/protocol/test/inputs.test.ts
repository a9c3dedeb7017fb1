import { describe, expect, it } from "vitest";
import { MAX_DELAY_MS } from "../src/delay.js";
import { SerializationError } from "../src/errors.js";
import {
  answerReprobe,
  DEFAULT_LEASE_MS,
  DEFAULT_LIST_LIMIT,
  DEFAULT_MAX_ATTEMPTS,
  DEFAULT_PURGE_LIMIT,
  DEFAULT_QUEUE,
  completeParams,
  failParams,
  heartbeatBatchParams,
  heartbeatParams,
  normalizeClaim,
  normalizeList,
  normalizeSubmit,
  progressParams,
  purgeParams,
  requireInt,
  requireName,
  retryParams,
  succeedParams,
} from "../src/inputs.js";
import type { SubmitInput } from "../src/store.js";
import { ID, W1 } from "./fixtures.js";
import { expectInvalid, loose, owned } from "./input-checks.js";

describe("defaults", () => {
  it("match the protocol's defaults", () => {
    expect(DEFAULT_LEASE_MS).toBe(30_000);
    expect(DEFAULT_LIST_LIMIT).toBe(100);
    expect(DEFAULT_PURGE_LIMIT).toBe(1000);
    expect(DEFAULT_MAX_ATTEMPTS).toBe(3);
    expect(DEFAULT_QUEUE).toBe("default");
  });
});

describe("requireName", () => {
  it("returns a non-empty string", () => {
    expect(requireName("a", "name")).toBe("a");
    expect(requireName(" ", "name")).toBe(" ");
  });

  it.each([
    ["", /got ""/],
    [null, /got null/],
    [undefined, /got undefined/],
    [5, /got 5/],
    [true, /got true/],
    [5n, /got 5n/],
    [["a"], /got an array/],
    [{}, /got an object/],
    [() => "a", /got a function/],
    [Symbol("s"), /got a symbol/],
  ])("rejects %s, describing it", (value, message) => {
    expectInvalid(() => requireName(value, "name"), "name", message);
    expectInvalid(() => requireName(value, "name"), "name", /name must be a non-empty string/);
  });
});

describe("requireInt", () => {
  it("returns an integer within range (inclusive)", () => {
    expect(requireInt(0, "n", 0)).toBe(0);
    expect(requireInt(5, "n", 1, 5)).toBe(5);
    expect(requireInt(-3, "n", -3, 3)).toBe(-3);
  });

  it.each([[1.5], [NaN], [Infinity], [-Infinity], ["3"], [null], [undefined], [3n]])("rejects %s", (value) => {
    expectInvalid(() => requireInt(value, "n", 0), "n");
  });

  it("rejects below min and above max, stating the range", () => {
    expectInvalid(() => requireInt(-1, "n", 0), "n", /an integer ≥ 0, got -1/);
    expectInvalid(() => requireInt(6, "n", 1, 5), "n", /an integer from 1 to 5, got 6/);
    expectInvalid(() => requireInt(0, "n", 1, 5), "n", /an integer from 1 to 5, got 0/);
    expectInvalid(() => requireInt(Number.MAX_SAFE_INTEGER + 2, "n", 0), "n");
  });
});

describe("normalizeSubmit (§5.1)", () => {
  it("applies every default: payload {}, queue 'default', conflict reuse, max 3, priority 0, metadata {}, delay 0, no key, no group", () => {
    expect(normalizeSubmit({ name: "summarize" }, ID)).toEqual({
      key: null,
      group: null,
      debounce: null,
      conflict: "reuse",
      queue: "default",
      params: {
        taskId: ID,
        name: "summarize",
        queue: "default",
        payload: "{}",
        metadata: "{}",
        maxAttempts: 3,
        priority: 0,
        runAtDelayMs: 0,
        parentId: null,
        rootId: null,
        correlationId: null,
      },
    });
  });

  it("null options mean the defaults too", () => {
    const n = normalizeSubmit(
      loose<SubmitInput>({ name: "n", payload: null, queue: null, key: null, conflict: null, maxAttempts: null, priority: null, metadata: null, runAtDelayMs: null }),
      ID,
    );
    expect(n).toMatchObject({ key: null, conflict: "reuse", queue: "default" });
    expect(n.params).toMatchObject({ payload: "{}", metadata: "{}", maxAttempts: 3, priority: 0, runAtDelayMs: 0 });
  });

  it("keeps every given value and encodes payload and metadata as compact JSON", () => {
    const n = normalizeSubmit(
      {
        name: "summarize",
        payload: { url: "u", tags: ["é", null] },
        queue: "rpc",
        key: "k1",
        conflict: "replace",
        maxAttempts: 1,
        priority: -5,
        metadata: { m: 1 },
        parentId: "task_p",
        rootId: "task_r",
        correlationId: "c",
        runAtDelayMs: 2_500,
      },
      ID,
    );
    expect(n.key).toBe("k1");
    expect(n.conflict).toBe("replace");
    expect(n.queue).toBe("rpc");
    expect(n.params).toEqual({
      taskId: ID,
      name: "summarize",
      queue: "rpc",
      payload: JSON.stringify({ url: "u", tags: ["é", null] }),
      metadata: '{"m":1}',
      maxAttempts: 1,
      priority: -5,
      runAtDelayMs: 2_500,
      parentId: "task_p",
      rootId: "task_r",
      correlationId: "c",
    });
  });

  it.each(["reuse", "reuse-succeeded", "reject", "replace"] as const)("accepts conflict %s", (conflict) => {
    expect(normalizeSubmit({ name: "n", conflict }, ID).conflict).toBe(conflict);
  });

  it("accepts a non-object payload (any JSON)", () => {
    expect(normalizeSubmit({ name: "n", payload: [1, "a"] }, ID).params.payload).toBe('[1,"a"]');
    expect(normalizeSubmit({ name: "n", payload: 0 }, ID).params.payload).toBe("0");
  });

  it("accepts the 32-bit priority bounds and max_attempts up to 2^31 − 1", () => {
    expect(normalizeSubmit({ name: "n", priority: -2_147_483_648 }, ID).params.priority).toBe(-2_147_483_648);
    expect(normalizeSubmit({ name: "n", priority: 2_147_483_647 }, ID).params.priority).toBe(2_147_483_647);
    expect(normalizeSubmit({ name: "n", maxAttempts: 2_147_483_647 }, ID).params.maxAttempts).toBe(2_147_483_647);
  });

  describe("rejects", () => {
    const bad = (input: Record<string, unknown>) => () => normalizeSubmit(loose<SubmitInput>({ name: "n", ...input }), ID);

    it.each([[null], [undefined], ["summarize"], [5]])("a non-object input (%s)", (input) => {
      expectInvalid(() => normalizeSubmit(loose<SubmitInput>(input), ID), "input", /input must be an object/);
    });

    it("a missing or empty name", () => {
      expectInvalid(() => normalizeSubmit(loose<SubmitInput>({}), ID), "name");
      expectInvalid(bad({ name: "" }), "name");
      expectInvalid(bad({ name: 3 }), "name");
    });

    it("an empty or non-string queue", () => {
      expectInvalid(bad({ queue: "" }), "queue");
      expectInvalid(bad({ queue: 1 }), "queue");
    });

    it("an unknown conflict, listing the strategies", () => {
      const err = expectInvalid(bad({ conflict: "ignore" }), "conflict");
      expect(err.message).toContain("'reuse', 'reuse-succeeded', 'reject', 'replace'");
      expect(err.message).toContain('"ignore"');
      expectInvalid(bad({ conflict: 1 }), "conflict");
    });

    it("an empty or non-string key", () => {
      expectInvalid(bad({ key: "" }), "key");
      expectInvalid(bad({ key: 7 }), "key");
    });

    it("max_attempts < 1 or not an integer", () => {
      expectInvalid(bad({ maxAttempts: 0 }), "maxAttempts");
      expectInvalid(bad({ maxAttempts: -1 }), "maxAttempts");
      expectInvalid(bad({ maxAttempts: 1.5 }), "maxAttempts");
      expectInvalid(bad({ maxAttempts: "3" }), "maxAttempts");
      expectInvalid(bad({ maxAttempts: 2_147_483_648 }), "maxAttempts");
    });

    it("a priority outside 32 bits or not an integer", () => {
      expectInvalid(bad({ priority: 2_147_483_648 }), "priority");
      expectInvalid(bad({ priority: -2_147_483_649 }), "priority");
      expectInvalid(bad({ priority: 0.5 }), "priority");
    });

    it("run_at_delay_ms < 0 or not an integer", () => {
      expectInvalid(bad({ runAtDelayMs: -1 }), "runAtDelayMs");
      expectInvalid(bad({ runAtDelayMs: 0.5 }), "runAtDelayMs");
      expectInvalid(bad({ runAtDelayMs: NaN }), "runAtDelayMs");
    });

    it("a runAtDelayMs past MAX_DELAY_MS (now + it would leave the Date range), naming the bound", () => {
      expectInvalid(bad({ runAtDelayMs: Number.MAX_SAFE_INTEGER }), "runAtDelayMs", /over MAX_DELAY_MS \(3153600000000 ms/);
      expectInvalid(bad({ runAtDelayMs: MAX_DELAY_MS + 1 }), "runAtDelayMs", /MAX_DELAY_MS/);
      expect(normalizeSubmit({ name: "x", runAtDelayMs: MAX_DELAY_MS }, ID).params.runAtDelayMs).toBe(MAX_DELAY_MS);
      expect(normalizeSubmit({ name: "x", runAtDelayMs: null as never }, ID).params.runAtDelayMs).toBe(0);
    });

    it("metadata that is not an object (or is an array)", () => {
      expectInvalid(bad({ metadata: [] }), "metadata", /got an array/);
      expectInvalid(bad({ metadata: "m" }), "metadata");
      expectInvalid(bad({ metadata: new Date(0) }), "metadata", /plain object/);
      expectInvalid(bad({ metadata: new Map([["a", 1]]) }), "metadata", /plain object/);
      expect(normalizeSubmit({ name: "n", metadata: Object.create(null) as Record<string, unknown> }, ID).params.metadata).toBe("{}");
      expectInvalid(bad({ metadata: 1 }), "metadata");
    });

    it("empty or non-string parent/root/correlation ids", () => {
      expectInvalid(bad({ parentId: "" }), "parentId");
      expectInvalid(bad({ rootId: 1 }), "rootId");
      expectInvalid(bad({ correlationId: "" }), "correlationId");
    });

    it("an unencodable payload or metadata with SerializationError (never coerced)", () => {
      for (const input of [{ payload: { n: NaN } }, { payload: 1n }, { metadata: { f: [undefined] } }]) {
        let caught: unknown;
        try {
          bad(input)();
        } catch (err) {
          caught = err;
        }
        expect(caught).toBeInstanceOf(SerializationError);
        expect((caught as Error).name).toBe("SerializationError");
      }
    });
  });
});

describe("owned writes: common fields", () => {
  const cases: [string, (input: Record<string, unknown>) => unknown][] = [
    ["heartbeat", (i) => heartbeatParams(loose(i))],
    ["progress", (i) => progressParams(loose(i))],
    ["succeed", (i) => succeedParams(loose(i))],
    ["complete", (i) => completeParams(loose(i))],
    ["fail", (i) => failParams(loose(i))],
  ];

  describe.each(cases)("%s", (_op, build) => {
    it("requires taskId and workerId as non-empty strings", () => {
      expectInvalid(() => build({ workerId: W1 }), "taskId");
      expectInvalid(() => build({ taskId: "", workerId: W1 }), "taskId");
      expectInvalid(() => build({ taskId: ID }), "workerId");
      expectInvalid(() => build({ taskId: ID, workerId: 1 }), "workerId");
    });

    it("attempt: absent or null = no fence; else an integer ≥ 0", () => {
      expect(build({ ...owned })).toMatchObject({ taskId: ID, workerId: W1, attempt: null });
      expect(build({ ...owned, attempt: null })).toMatchObject({ attempt: null });
      expect(build({ ...owned, attempt: 0 })).toMatchObject({ attempt: 0 });
      expect(build({ ...owned, attempt: 4 })).toMatchObject({ attempt: 4 });
      expectInvalid(() => build({ ...owned, attempt: -1 }), "attempt");
      expectInvalid(() => build({ ...owned, attempt: 1.5 }), "attempt");
      expectInvalid(() => build({ ...owned, attempt: "1" }), "attempt");
    });
  });

  it("claim's probe flag: on by default, false skips it, anything but a boolean is rejected", () => {
    const base = { queues: ["q"], workerId: "w" };
    expect(normalizeClaim(base).probe).toBe(true);
    expect(normalizeClaim({ ...base, probe: true }).probe).toBe(true);
    expect(normalizeClaim({ ...base, probe: false }).probe).toBe(false);
    expectInvalid(() => normalizeClaim(loose({ ...base, probe: "no" })), "probe", /probe must be a boolean/);
  });

  it("claim's reprobe: absent or null asks for nothing, a function is kept as given, anything else is rejected", () => {
    const base = { queues: ["q"], workerId: "w" };
    expect(normalizeClaim(base).reprobe).toBeNull();
    expect(normalizeClaim({ ...base, reprobe: null }).reprobe).toBeNull();
    const reprobe = (_claimable: boolean): void => {};
    expect(normalizeClaim({ ...base, reprobe }).reprobe).toBe(reprobe);
    expectInvalid(() => normalizeClaim(loose({ ...base, reprobe: true })), "reprobe", /reprobe must be a function/);
  });

  it("answerReprobe hands a claim's reprobe its answer, does nothing without one, and ignores a throwing one", () => {
    const base = { queues: ["q"], workerId: "w" };
    const heard: boolean[] = [];
    answerReprobe(normalizeClaim({ ...base, reprobe: (claimable) => void heard.push(claimable) }), false);
    expect(heard).toEqual([false]);
    expect(() => answerReprobe(normalizeClaim(base), true)).not.toThrow();
    const throwing = normalizeClaim({
      ...base,
      reprobe: () => {
        throw new Error("a reprobe listener failed");
      },
    });
    expect(() => answerReprobe(throwing, true)).not.toThrow();
  });

  it("every operation rejects a null input with InvalidArgument, never a TypeError", () => {
    expectInvalid(() => progressParams(loose(null)), "input");
    expectInvalid(() => succeedParams(loose(null)), "input");
    expectInvalid(() => failParams(loose(null)), "input");
    expectInvalid(() => heartbeatBatchParams(loose(null)), "input");
    expectInvalid(() => normalizeClaim(loose(null)), "input");
    expectInvalid(() => normalizeList(loose(null)), "input");
    expectInvalid(() => purgeParams(loose(null)), "input");
    expectInvalid(() => retryParams("task_x", loose(null)), "options");
  });

  it("a non-object input is rejected where the owned fields are read first", () => {
    expectInvalid(() => heartbeatParams(loose(null)), "input", /input must be an object, got null/);
    expectInvalid(() => completeParams(loose("task_x")), "input", /got "task_x"/);
  });
});
