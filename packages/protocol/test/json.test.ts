import { afterEach, describe, expect, it } from "vitest";
import { SerializationError } from "../src/errors.js";
import { decodeJson, encodeJson, toMs } from "../src/json.js";

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
    'quote " backslash \\ newline \n tab \t nul \u0000',
    "accents é, CJK 漢字, em dash —, emoji 🙂, lone surrogate \ud800",
    [],
    {},
    [null, [1, [2, [3]]], {}, []],
    { a: 1, b: "x", c: null, d: [true, false], e: { f: { g: [] } } },
    { "a b": 1, "0": 2, $ok: 3, "": 4 },
    new Date(0),
    { at: new Date(86_400_000) },
    [new Date(1)],
    new Map([["a", 1]]),
    new Uint8Array([1, 2]),
    Object.create(null) as object,
  ];

  for (const value of samples) {
    it(`encodes ${JSON.stringify(value)}`, () => {
      expect(encodeJson(value, "payload")).toBe(JSON.stringify(value));
    });
  }

  it("omits object properties holding undefined, functions and symbols", () => {
    const value = { a: undefined, b: () => 1, c: Symbol("c"), d: 1, e: undefined };
    expect(encodeJson(value, "payload")).toBe('{"d":1}');
    expect(encodeJson({ only: undefined }, "payload")).toBe("{}");
    expect(encodeJson({ a: undefined, b: 2 }, "payload")).toBe('{"b":2}');
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

  it("calls toJSON once, not on its own result", () => {
    const inner = { toJSON: () => "never" };
    const outer = { toJSON: () => inner };
    expect(encodeJson(outer, "payload")).toBe(JSON.stringify(outer));
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

  it("propagates an error thrown by a getter or toJSON", () => {
    const boom = new Error("getter");
    const value = {
      get a(): never {
        throw boom;
      },
    };
    expect(() => encodeJson(value, "payload")).toThrow(boom);
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
