/**
 * One input, one meaning, on every backend: text a backend cannot store
 * exactly is rejected before anything is written, lengths are bounded by
 * `TEXT_LIMITS` (sized for Postgres index rows), and JSON values either
 * round-trip exactly or fail with `SerializationError` naming the path
 * (§2.2). A store that accepted U+0000 or a lone surrogate in one of these
 * places, or a name longer than the limit, would give the same input a
 * different meaning than a Postgres deployment of the same code.
 */
import type { SubmitInput, Task } from "@cairnq/protocol";
import { InvalidArgument, SerializationError } from "@cairnq/protocol";
import { MAX_JSON_DEPTH, TEXT_LIMITS, utf8Length } from "@cairnq/protocol/adapter";
import type { CaseContext, ConformanceCase } from "../case.js";

/** Text no backend may store as given: U+0000 and lone surrogates (a high one, a low one). */
const UNSTORABLE: readonly [string, string][] = [
  ["U+0000", "a\u0000b"],
  ["a lone high surrogate", "key-\ud800"],
  ["a lone low surrogate", "\udc00-key"],
];

/** The submit fields whose text reaches a column (and, but for `parentId`, an index). */
const TEXT_FIELDS = ["name", "queue", "key", "correlationId", "parentId", "rootId"] as const;

/**
 * `bytes` UTF-8 bytes of text that does not compress (Postgres compresses
 * wide index tuples, so a repeated character would hide an index row that
 * does not fit): pseudo-random CJK characters (3 bytes each), padded with
 * ASCII. Deterministic per `seed`.
 */
function incompressible(bytes: number, seed: number): string {
  let state = seed >>> 0 || 1;
  let out = "";
  for (let i = 0; i < Math.floor(bytes / 3); i++) {
    state = (Math.imul(state, 1_103_515_245) + 12_345) >>> 0;
    out += String.fromCharCode(0x4e00 + (state % 0x5000));
  }
  return out + "z".repeat(bytes % 3);
}

/** A value nested `levels` deep, alternating objects and arrays, with a string at the bottom. */
function nested(levels: number): unknown {
  let value: unknown = ["bottom"];
  for (let i = 1; i < levels; i++) value = i % 2 === 0 ? [value] : { k: value };
  return value;
}

async function expectInvalid(t: CaseContext, promise: Promise<unknown>, argument: string, what: string): Promise<void> {
  const err = await t.rejects(promise, InvalidArgument, what);
  t.expect({ what, argument: err.argument }).toEqual({ what, argument });
}

async function expectUnserializable(t: CaseContext, promise: Promise<unknown>, path: string, what: string): Promise<void> {
  const err = await t.rejects(promise, SerializationError, what);
  t.expect({ what, path: err.path }).toEqual({ what, path });
}

export const boundaryCases: readonly ConformanceCase[] = [
  {
    id: "input-unstorable-text",
    title: "U+0000 and lone surrogates in name, queue, key, correlationId, parentId and rootId are rejected with InvalidArgument, writing nothing",
    spec: "§5.1, §2.2 (one input, one meaning on every backend)",
    async run(t) {
      for (const [label, text] of UNSTORABLE) {
        for (const field of TEXT_FIELDS) {
          const input = { name: "job", key: `k-${field}`, [field]: text } as SubmitInput;
          await expectInvalid(t, t.store.submit(input), field, `submit with ${label} in ${field}`);
        }
        await expectInvalid(t, t.store.getByKey(text), "key", `getByKey with ${label}`);
        await expectInvalid(t, t.store.getStatusByKey(text), "key", `getStatusByKey with ${label}`);
        await expectInvalid(t, t.store.cancelByKey(text), "key", `cancelByKey with ${label}`);
        await expectInvalid(t, t.store.retryByKey(text), "key", `retryByKey with ${label}`);
        await expectInvalid(t, t.store.list({ correlationId: text }), "correlationId", `list by correlationId with ${label}`);
        await expectInvalid(t, t.store.list({ name: text }), "name", `list by name with ${label}`);
        await expectInvalid(t, t.claim(t.w1, { names: [text] }), "names[0]", `claim of names [${label}]`);
        await expectInvalid(t, t.claim(t.w1, { queues: [text] }), "queues[0]", `claim of queues [${label}]`);
      }
      t.expect(await t.all()).toEqual([]);
      // U+FFFD (what Postgres would have made of a lone surrogate) is ordinary text: its key stays its own.
      const replacement = await t.submit("job", { key: "key-\ufffd" });
      t.expect((await t.store.getByKey("key-\ufffd"))?.id).toBe(replacement.id);
      // A surrogate pair is fine anywhere.
      const emoji = await t.submit("job-🙂", { key: "key-🙂", queue: "q-🙂", correlationId: "c-🙂" });
      t.fields(await t.store.getByKey("key-🙂"), { id: emoji.id, name: "job-🙂", queue: "q-🙂", correlation_id: "c-🙂" });
    },
  },
  {
    id: "input-text-limits",
    title: "text at TEXT_LIMITS (UTF-8 bytes) is stored, indexed and found exactly; one byte more is rejected with InvalidArgument, writing nothing",
    spec: "§5.1, §3.5 (every index row fits on Postgres)",
    async run(t) {
      const at = {
        name: incompressible(TEXT_LIMITS.name, 1),
        queue: incompressible(TEXT_LIMITS.queue, 2),
        key: incompressible(TEXT_LIMITS.key, 3),
        correlationId: incompressible(TEXT_LIMITS.correlationId, 4),
        parentId: incompressible(TEXT_LIMITS.parentId, 5),
        rootId: incompressible(TEXT_LIMITS.rootId, 6),
      };
      for (const field of TEXT_FIELDS) t.expect(utf8Length(at[field])).toBe(TEXT_LIMITS[field]);
      const task = await t.store.submit({ ...at, payload: { n: 1 } });
      t.fields(task, {
        name: at.name,
        queue: at.queue,
        correlation_id: at.correlationId,
        parent_id: at.parentId,
        root_id: at.rootId,
      });
      t.fields(await t.store.getByKey(at.key), { id: task.id, name: at.name });
      t.expect((await t.store.list({ correlationId: at.correlationId, rootId: at.rootId, name: at.name, queue: at.queue })).map((r) => r.id)).toEqual([
        task.id,
      ]);
      t.expect(await t.store.queueDepth(at.queue, 5)).toBe(4);
      const [claimed] = await t.claim(t.w1, { queues: [at.queue], names: [at.name] });
      t.fields(claimed ?? null, { id: task.id, status: "running" });
      await t.store.complete({ taskId: task.id, workerId: t.w1, result: { ok: true } });

      const before = await t.all();
      for (const field of TEXT_FIELDS) {
        const input = { ...at, key: `short-${field}`, [field]: `${at[field]}x` } as SubmitInput;
        await expectInvalid(t, t.store.submit(input), field, `submit with ${field} one byte over its limit`);
      }
      const longKey = `${at.key}x`;
      await expectInvalid(t, t.store.getByKey(longKey), "key", "getByKey with a key over the limit");
      await expectInvalid(t, t.store.cancelByKey(longKey), "key", "cancelByKey with a key over the limit");
      await expectInvalid(t, t.store.list({ queue: `${at.queue}x` }), "queue", "list by a queue over the limit");
      await expectInvalid(t, t.store.queueDepth(`${at.queue}x`, 1), "queue", "queueDepth of a queue over the limit");
      t.expect(await t.all()).toEqual(before);
    },
  },
  {
    id: "json-unstorable-values",
    title: "payload and metadata with U+0000, a lone surrogate or nesting beyond MAX_JSON_DEPTH fail with SerializationError naming the path, writing nothing",
    spec: "§2.2",
    async run(t) {
      const bad: [string, unknown, string][] = [
        ["U+0000 in a string", { a: ["ok", "x\u0000y"] }, "payload.a[1]"],
        ["U+0000 in a key", { a: { "k\u0000": 1 } }, 'payload.a["k\\u0000"]'],
        ["a lone high surrogate", { s: "abc\ud83d" }, "payload.s"],
        ["a lone low surrogate in a key", { "\ude42": true }, 'payload["\\ude42"]'],
      ];
      for (const [label, payload, path] of bad) {
        await expectUnserializable(t, t.store.submit({ name: "job", payload }), path, `submit with ${label}`);
        await expectUnserializable(
          t,
          t.store.submit({ name: "job", key: "k", metadata: payload as Record<string, unknown> }),
          path.replace(/^payload/, "metadata"),
          `keyed submit with ${label} in metadata`,
        );
      }
      const tooDeep = await t.rejects(t.store.submit({ name: "job", payload: nested(MAX_JSON_DEPTH + 1) }), SerializationError, "a payload too deep");
      t.expect(tooDeep.path.startsWith("payload")).toBe(true);
      await t.rejects(t.store.submit({ name: "job", payload: nested(10_000) }), SerializationError, "a payload 10,000 levels deep");
      t.expect(await t.all()).toEqual([]);
      t.expect(await t.store.getByKey("k")).toBeNull();

      // What every backend holds round-trips exactly: the deepest allowed value, pairs, control characters.
      const deepest = nested(MAX_JSON_DEPTH);
      const text = { emoji: "🙂\ud83d\ude42", controls: "\u0001\u001f\t\n", accents: "é漢—", "key 🙂": "\ufffd" };
      const deep = await t.store.submit({ name: "job", payload: deepest, metadata: text });
      const read = await t.get(deep.id);
      t.expect(read.payload).toEqual(deepest);
      t.expect(read.metadata).toEqual(text);
    },
  },
  {
    id: "json-unstorable-outcomes",
    title: "a result that cannot be stored fails complete with SerializationError and leaves the task running; an error message with U+0000 is still recorded, sanitized, code kept",
    spec: "§2.2, §5.15, §5.16",
    async run(t) {
      const task: Task = await t.submitAndClaim(t.w1);
      await expectUnserializable(t, t.store.complete({ taskId: task.id, workerId: t.w1, result: { out: "a\u0000" } }), "result.out", "complete with U+0000");
      await expectUnserializable(t, t.store.complete({ taskId: task.id, workerId: t.w1, result: ["\ud800"] }), "result[0]", "complete with a lone surrogate");
      const tooDeep = await t.rejects(
        t.store.succeed({ taskId: task.id, workerId: t.w1, result: nested(MAX_JSON_DEPTH + 1) }),
        SerializationError,
        "succeed with a result too deep",
      );
      t.expect(tooDeep.path.startsWith("result")).toBe(true);
      await expectInvalid(t, t.store.progress({ taskId: task.id, workerId: t.w1, progress: 0.5, message: "half\u0000" }), "message", "progress with U+0000 in its message");
      t.fields(await t.get(task.id), { status: "running", worker_id: t.w1, result: null, progress: null, message: null });

      const failed = await t.store.fail({
        taskId: task.id,
        workerId: t.w1,
        error: { type: "Boom", code: "boom_code", message: "bad \u0000 byte", retryable: false, details: { raw: "\ud800" } },
        retryable: false,
      });
      t.fields(failed, {
        status: "failed",
        error: { type: "Boom", code: "boom_code", message: "bad \ufffd byte", retryable: false, details: {} },
      });
    },
  },
];
