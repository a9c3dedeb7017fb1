/**
 * "Each name is exported from exactly one entry point" (README, What is
 * where): an import line then has one right answer. Values only: types leave
 * nothing at run time (`scripts/count-exports.mjs` checks both, from the
 * build).
 */
import { describe, expect, it } from "vitest";
import * as adapter from "../src/adapter.js";
import * as app from "../src/index.js";
import * as sdk from "../src/sdk.js";

const ENTRY_POINTS: Record<string, object> = { "@cairnq/protocol": app, "@cairnq/protocol/adapter": adapter, "@cairnq/protocol/sdk": sdk };

describe("entry points", () => {
  it("export each value from one of them only", () => {
    const where = new Map<string, string[]>();
    for (const [entry, module] of Object.entries(ENTRY_POINTS)) {
      for (const name of Object.keys(module)) where.set(name, [...(where.get(name) ?? []), entry]);
    }
    const twice = [...where].filter(([, entries]) => entries.length > 1).map(([name, entries]) => `${name}: ${entries.join(", ")}`);
    expect(twice).toEqual([]);
  });

  it("keep holdsJoin where the stores, the kit and explain read it: the adapter's rules", () => {
    expect(typeof adapter.holdsJoin).toBe("function");
    expect("holdsJoin" in sdk).toBe(false);
  });
});
