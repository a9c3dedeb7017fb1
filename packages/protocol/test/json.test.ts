import { runInNewContext } from "node:vm";
import { afterEach, describe, expect, it } from "vitest";
import { SerializationError } from "../src/errors.js";
import { decodeJson, encodeJson, MAX_JSON_DEPTH, sanitizeText, toMs, unstorableText } from "../src/json.js";

/** Runs `fn`, expects a SerializationError, and returns it. */
function rejection(fn: () => unknown): SerializationError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(SerializationError);
    return err as SerializationError;
  }
  throw new Error("expected a SerializationError");
}

describe("encodeJson: agrees with JSON.stringify on encodable values", () => {
  const samples: unknown[] = [
    null,
    true,
    false,
    0,
    -0,
    1.5,
    -12,
    1e21,
    5e-324,
    "",
    'quote " backslash \\ newline \n tab \t control \u0001 \u001f',
    "accents é, CJK 漢字, em dash —, emoji 🙂, pair at the end \ud83d\ude42",
    [],
    {},
    [null, [1, [2, [3]]], {}, []],
    { a: 1, b: "x", c: null, d: [true, false], e: { f: { g: [] } } },
    { "a b": 1, "0": 2, $ok: 3, "": 4 },
    new Date(0),
    { at: new Date(86_400_000) },
    [new Date(1)],
    Object.create(null) as object,
    // A class instance keeps its own fields; a Buffer its toJSON form.
    new (class Point {
      constructor(
        readonly x = 1,
        readonly y = 2,
      ) {}
    })(),
    Buffer.from([1, 2]),
  ];

  for (const value of samples) {
    it(`encodes ${JSON.stringify(value)}`, () => {
      expect(encodeJson(value, "payload")).toBe(JSON.stringify(value));
    });
  }

  it("omits object properties holding undefined, as JSON.stringify does", () => {
    const value = { a: undefined, d: 1, e: undefined, n: { toJSON: () => undefined } };
    expect(encodeJson(value, "payload")).toBe('{"d":1}');
    expect(encodeJson({ only: undefined }, "payload")).toBe("{}");
    expect(encodeJson({ a: undefined, b: 2 }, "payload")).toBe('{"b":2}');
  });

  it("rejects a function or symbol as an object property, which JSON.stringify would silently leave out", () => {
    const cases: [unknown, string, string][] = [
      [{ f: () => 1, keep: 1 }, "payload.f", "a function"],
      [{ keep: 1, s: Symbol("s") }, "payload.s", "a symbol"],
      [{ deep: [{ "a b": () => 1 }] }, 'payload.deep[0]["a b"]', "a function"],
      [{ viaToJSON: { toJSON: () => Symbol("s") } }, "payload.viaToJSON", "a symbol"],
    ];
    for (const [value, path, what] of cases) {
      const err = rejection(() => encodeJson(value, "payload"));
      expect(err.path).toBe(path);
      expect(err.reason).toContain(`the property is ${what}, which has no JSON form (JSON.stringify would silently leave it out)`);
    }
  });

  it("ignores symbol keys and non-enumerable or inherited properties", () => {
    const value = Object.create({ inherited: 1 }) as Record<string | symbol, unknown>;
    value[Symbol("s")] = 1;
    Object.defineProperty(value, "hidden", { value: 1, enumerable: false });
    value.shown = 2;
    expect(encodeJson(value, "payload")).toBe('{"shown":2}');
  });

  it("unboxes Number, String and Boolean objects", () => {
    const value = [Object(1) as unknown, Object("s") as unknown, Object(false) as unknown, Object(true) as unknown];
    expect(encodeJson(value, "payload")).toBe('[1,"s",false,true]');
  });

  it("allows the same object twice when it is not a cycle", () => {
    const shared = { n: 1 };
    const list = [shared];
    const value = { a: shared, b: shared, c: [shared, shared], d: { e: list, f: list } };
    expect(encodeJson(value, "payload")).toBe(JSON.stringify(value));
  });
});

describe("encodeJson: toJSON", () => {
  afterEach(() => {
    delete (BigInt.prototype as { toJSON?: unknown }).toJSON;
  });

  it("passes the property key, array index or '' to toJSON", () => {
    const keys: string[] = [];
    const probe = {
      toJSON(key: string) {
        keys.push(key);
        return key;
      },
    };
    expect(encodeJson({ k: probe, list: [probe, probe] }, "payload")).toBe('{"k":"k","list":["0","1"]}');
    expect(encodeJson(probe, "payload")).toBe('""');
    expect(keys).toEqual(["k", "0", "1", ""]);
  });

  it("checks what toJSON returns", () => {
    const err = rejection(() => encodeJson({ a: { toJSON: () => Number.NaN } }, "payload"));
    expect(err.path).toBe("payload.a");
  });

  it("omits or rejects an undefined toJSON result like an undefined value", () => {
    const nothing = { toJSON: () => undefined };
    expect(encodeJson({ a: nothing, b: 1 }, "payload")).toBe('{"b":1}');
    const inArray = rejection(() => encodeJson([nothing], "payload"));
    expect(inArray.path).toBe("payload[0]");
    expect(inArray.reason).toContain("an object whose toJSON() returned nothing");
    const atTop = rejection(() => encodeJson(nothing, "payload"));
    expect(atTop.path).toBe("payload");
    expect(atTop.reason).toContain("an object whose toJSON() returned nothing");
  });

  it("calls toJSON once, not on its own result (whose toJSON is then a function property, refused)", () => {
    let calls = 0;
    const inner = {
      toJSON: () => {
        calls++;
        return "never";
      },
    };
    const outer = { toJSON: () => inner };
    expect(JSON.stringify(outer)).toBe("{}");
    expect(rejection(() => encodeJson(outer, "payload")).path).toBe("payload.toJSON");
    expect(calls).toBe(0);
  });

  it("honours toJSON on functions and on BigInt, as JSON.stringify does", () => {
    const fn = Object.assign(() => 1, { toJSON: () => "fn" });
    expect(encodeJson({ fn }, "payload")).toBe('{"fn":"fn"}');
    (BigInt.prototype as { toJSON?: unknown }).toJSON = function (this: bigint) {
      return this.toString();
    };
    expect(encodeJson({ big: 12n }, "payload")).toBe('{"big":"12"}');
  });

  it("does not call a non-function toJSON property", () => {
    expect(encodeJson({ toJSON: 1 }, "payload")).toBe('{"toJSON":1}');
  });
});

describe("encodeJson: rejections name the path and the reason", () => {
  it("rejects non-finite numbers at any depth", () => {
    for (const [bad, shown] of [
      [Number.NaN, "NaN"],
      [Number.POSITIVE_INFINITY, "Infinity"],
      [Number.NEGATIVE_INFINITY, "-Infinity"],
      [Object(Number.NaN) as unknown, "NaN"],
    ] as const) {
      const err = rejection(() => encodeJson({ items: [{}, {}, { n: bad }] }, "payload"));
      expect(err.path).toBe("payload.items[2].n");
      expect(err.reason).toContain(`${shown} is not a finite number`);
      expect(err.message).toContain("cannot encode payload.items[2].n as JSON");
    }
    expect(rejection(() => encodeJson(Number.NaN, "result")).path).toBe("result");
  });

  it("rejects BigInt, boxed or not", () => {
    const err = rejection(() => encodeJson({ id: 12n }, "metadata"));
    expect(err.path).toBe("metadata.id");
    expect(err.reason).toContain("BigInt (12n)");
    expect(rejection(() => encodeJson([Object(3n)], "payload")).path).toBe("payload[0]");
  });

  it("rejects cycles and names the ancestor they point back to", () => {
    const self: Record<string, unknown> = {};
    self.me = self;
    const err = rejection(() => encodeJson(self, "payload"));
    expect(err.path).toBe("payload.me");
    expect(err.reason).toContain("cycle back to payload)");

    const deep: { a: { list: unknown[] } } = { a: { list: [] } };
    deep.a.list.push(1, deep.a);
    const deepErr = rejection(() => encodeJson(deep, "payload"));
    expect(deepErr.path).toBe("payload.a.list[1]");
    expect(deepErr.reason).toContain("cycle back to payload.a)");

    const array: unknown[] = [];
    array.push([array]);
    expect(rejection(() => encodeJson(array, "payload")).path).toBe("payload[0][0]");
  });

  it("rejects undefined, functions and symbols as array elements", () => {
    for (const [bad, word] of [
      [undefined, "undefined"],
      [() => 1, "a function"],
      [Symbol("s"), "a symbol"],
    ] as const) {
      const err = rejection(() => encodeJson({ list: [1, bad] }, "payload"));
      expect(err.path).toBe("payload.list[1]");
      expect(err.reason).toContain(`an array element is ${word}`);
    }
  });

  it.each([
    ["a Map", { tags: new Map([["a", 1]]) }, "payload.tags", /a Map, whose entries JSON.stringify drops \(it writes \{\}\); send a plain object/],
    ["a Set", { ids: [1, new Set([1, 2])] }, "payload.ids[1]", /a Set, whose members JSON.stringify drops .*\[\.\.\.set\]/],
    ["a WeakMap", { w: new WeakMap() }, "payload.w", /a WeakMap/],
    ["a WeakSet", { w: new WeakSet() }, "payload.w", /a WeakSet/],
    ["a Map at the root", new Map(), "payload", /a Map/],
    ["a typed array", { bytes: new Uint8Array([1, 2]) }, "payload.bytes", /binary data \(Uint8Array\), .*base64/],
    ["an ArrayBuffer", { raw: new ArrayBuffer(2) }, "payload.raw", /binary data \(ArrayBuffer\)/],
    ["a DataView", { v: new DataView(new ArrayBuffer(2)) }, "payload.v", /binary data \(DataView\)/],
    ["a RegExp", { re: /a+/ }, "payload.re", /a RegExp, which JSON.stringify writes as \{\}/],
    ["an Error", { cause: new Error("disk full") }, "payload.cause", /an Error \(Error\), whose message and stack JSON.stringify drops/],
    ["an Error from another realm", { e: runInNewContext("new RangeError('r')") as unknown }, "payload.e", /an Error \(RangeError\)/],
    ["an Error subclass with added fields", { e: [Object.assign(new TypeError("bad"), { code: 7 })] }, "payload.e[0]", /an Error \(TypeError\)/],
  ])("rejects %s, which JSON.stringify would store as {} or numbered keys", (_what, value, path, message) => {
    const err = rejection(() => encodeJson(value, "payload"));
    expect(err.path).toBe(path);
    expect(err.reason).toMatch(message);
    expect(err.message).toContain(`cannot encode ${path} as JSON`);
  });

  it("honours toJSON on a Map (or any object), as JSON.stringify does", () => {
    const map = Object.assign(new Map([["a", 1]]), { toJSON: () => ({ a: 1 }) });
    expect(encodeJson({ map }, "payload")).toBe('{"map":{"a":1}}');
    const err = Object.assign(new Error("x"), { toJSON: () => ({ message: "x" }) });
    expect(encodeJson({ err }, "payload")).toBe('{"err":{"message":"x"}}');
  });

  it("rejects array holes, which read as undefined", () => {
    // eslint-disable-next-line no-sparse-arrays -- the hole is the case under test
    expect(rejection(() => encodeJson([1, , 3], "payload")).path).toBe("payload[1]");
  });

  it("rejects a top-level undefined, function or symbol", () => {
    for (const bad of [undefined, () => 1, Symbol("s")]) {
      const err = rejection(() => encodeJson(bad, "result"));
      expect(err.path).toBe("result");
      expect(err.reason).toContain("has no JSON form");
    }
  });

  it("quotes keys that are not identifiers", () => {
    const err = rejection(() => encodeJson({ "a b": { "0": { _ok$: [Number.NaN] } } }, "payload"));
    expect(err.path).toBe('payload["a b"]["0"]._ok$[0]');
  });

  it("turns an error thrown by a getter, toJSON or a proxy trap into a SerializationError at its path, keeping the cause", () => {
    const boom = new Error("getter");
    const getter = rejection(() =>
      encodeJson(
        {
          list: [
            {
              get a(): never {
                throw boom;
              },
            },
          ],
        },
        "result",
      ),
    );
    expect(getter.path).toBe("result.list[0].a");
    expect(getter.reason).toContain("Error: getter");
    expect(getter.cause).toBe(boom);

    const toJSON = rejection(() =>
      encodeJson(
        {
          at: {
            toJSON(): never {
              // eslint-disable-next-line @typescript-eslint/only-throw-error -- what a careless handler might throw
              throw "nope";
            },
          },
        },
        "result",
      ),
    );
    expect(toJSON.path).toBe("result.at");
    expect(toJSON.reason).toContain("nope");

    const { proxy, revoke } = Proxy.revocable({}, {});
    revoke();
    expect(rejection(() => encodeJson({ p: proxy }, "result")).path).toBe("result.p");

    const unprintable = {
      get a(): never {
        throw Object.create(null);
      },
    };
    expect(rejection(() => encodeJson(unprintable, "result")).reason).toContain("an unprintable value");
  });
});

describe("encodeJson: what some backend cannot store is refused on every backend", () => {
  it("refuses U+0000 in a string or a key, naming the path", () => {
    const inString = rejection(() => encodeJson({ a: ["ok", "x\u0000y"] }, "payload"));
    expect(inString.path).toBe("payload.a[1]");
    expect(inString.reason).toContain("U+0000");
    const inKey = rejection(() => encodeJson({ a: { "k\u0000": 1 } }, "payload"));
    expect(inKey.path).toBe('payload.a["k\\u0000"]');
    expect(inKey.reason).toContain("key");
    expect(rejection(() => encodeJson("\u0000", "result")).path).toBe("result");
  });

  it("refuses a lone high or low surrogate in a string or a key, and accepts a proper pair", () => {
    expect(rejection(() => encodeJson({ s: "a\ud800" }, "payload")).reason).toContain("lone UTF-16 surrogate (\\ud800) at index 1");
    expect(rejection(() => encodeJson({ s: "\ud800b" }, "payload")).path).toBe("payload.s");
    expect(rejection(() => encodeJson({ s: "\udc00" }, "payload")).reason).toContain("\\udc00");
    expect(rejection(() => encodeJson({ "\udfff": 1 }, "payload")).path).toBe('payload["\\udfff"]');
    expect(encodeJson({ "🙂": "🙂\ud83d\ude42" }, "payload")).toBe(JSON.stringify({ "🙂": "🙂🙂" }));
  });

  it(`accepts nesting up to MAX_JSON_DEPTH (${MAX_JSON_DEPTH}) levels and refuses one more, without a RangeError`, () => {
    const nest = (levels: number): unknown => {
      let value: unknown = [];
      for (let i = 1; i < levels; i++) value = i % 2 === 0 ? [value] : { a: value };
      return value;
    };
    expect(JSON.parse(encodeJson(nest(MAX_JSON_DEPTH), "payload"))).toEqual(nest(MAX_JSON_DEPTH));
    const err = rejection(() => encodeJson(nest(MAX_JSON_DEPTH + 1), "payload"));
    expect(err.reason).toContain(`more than ${MAX_JSON_DEPTH} levels`);
    expect(err.path.startsWith("payload[0].a[0].a")).toBe(true);
    // Ten thousand levels (which overflowed the stack before) fail the same way.
    expect(rejection(() => encodeJson(nest(10_000), "result")).reason).toContain("levels deep");
  });
});

describe("unstorableText and sanitizeText", () => {
  it("accept clean text as it is", () => {
    for (const text of ["", "plain", "é漢字—", "\ud83d\ude42", "\u0001"]) {
      expect(unstorableText(text)).toBeNull();
      expect(sanitizeText(text)).toBe(text);
    }
  });

  it("name the first problem and replace every one with U+FFFD", () => {
    expect(unstorableText("ab\u0000")).toContain("U+0000 (NUL) at index 2");
    // The same rule on every backend, so the message names none of them.
    expect(unstorableText("ab\u0000")).toContain("which CairnQ refuses on every backend");
    expect(unstorableText("a\ud800")).not.toMatch(/Postgres/);
    expect(unstorableText("\udc01")).toContain("\\udc01");
    expect(sanitizeText("a\u0000b\ud800c\udc00\ud83d\ude42\ud800")).toBe("a\ufffdb\ufffdc\ufffd\ud83d\ude42\ufffd");
  });
});

describe("decodeJson", () => {
  it("parses strings", () => {
    expect(decodeJson('{"a":[1,null,"é"]}')).toEqual({ a: [1, null, "é"] });
    expect(decodeJson('"text"')).toBe("text");
    expect(decodeJson("0")).toBe(0);
  });

  it("maps SQL NULL to null", () => {
    expect(decodeJson(null)).toBeNull();
    expect(decodeJson(undefined)).toBeNull();
  });

  it("returns already-decoded values as they are", () => {
    const value = { a: 1 };
    expect(decodeJson(value)).toBe(value);
    expect(decodeJson(5)).toBe(5);
    expect(decodeJson(false)).toBe(false);
  });

  it("explains invalid JSON text and keeps the parser's error as the cause", () => {
    let caught: unknown;
    try {
      decodeJson("{not json");
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(SyntaxError);
    expect((caught as Error).message).toContain('("{not json")');
    expect((caught as Error).cause).toBeInstanceOf(SyntaxError);
  });

  it("shortens long invalid text in the message", () => {
    const long = "x".repeat(200);
    expect(() => decodeJson(long)).toThrow(`"${"x".repeat(80)}…"`);
  });
});

describe("toMs", () => {
  it("keeps null and maps undefined to null", () => {
    expect(toMs(null)).toBeNull();
    expect(toMs(undefined)).toBeNull();
  });

  it("normalizes numbers, bigints and numeric text", () => {
    expect(toMs(1_700_000_000_000)).toBe(1_700_000_000_000);
    expect(toMs(1_700_000_000_000n)).toBe(1_700_000_000_000);
    expect(toMs("1700000000000")).toBe(1_700_000_000_000);
    expect(toMs("-5")).toBe(-5);
    expect(toMs(0)).toBe(0);
  });

  it("throws a clear error on anything else", () => {
    expect(() => toMs("abc")).toThrow(/expected epoch milliseconds .* but got "abc"/);
    expect(() => toMs("")).toThrow(/but got ""/);
    expect(() => toMs("  ")).toThrow(TypeError);
    expect(() => toMs(Number.NaN)).toThrow(/but got NaN/);
    expect(() => toMs(Number.POSITIVE_INFINITY)).toThrow(/but got Infinity/);
    expect(() => toMs(10n ** 400n)).toThrow(/but got a bigint/);
    expect(() => toMs(true)).toThrow(/but got a boolean/);
    expect(() => toMs({})).toThrow(/but got an object/);
  });
});
