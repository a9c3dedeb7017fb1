import { describe, expect, it } from "vitest";
import { pgDsn, trackTimers } from "@cairnq/test-support";

describe("pgDsn", () => {
  it("fails loudly, naming the variable, when CAIRNQ_TEST_PG_DSN is unset or blank", () => {
    const saved = process.env.CAIRNQ_TEST_PG_DSN;
    try {
      for (const value of [undefined, "  "]) {
        if (value === undefined) delete process.env.CAIRNQ_TEST_PG_DSN;
        else process.env.CAIRNQ_TEST_PG_DSN = value;
        expect(() => pgDsn()).toThrow(/CAIRNQ_TEST_PG_DSN is not set.*never skip/);
      }
    } finally {
      if (saved === undefined) delete process.env.CAIRNQ_TEST_PG_DSN;
      else process.env.CAIRNQ_TEST_PG_DSN = saved;
    }
  });
});

describe("trackTimers", () => {
  it("reports a pending timeout with where it was made, and forgets fired and cleared ones", async () => {
    const timers = trackTimers();
    try {
      const left = setTimeout(() => {}, 60_000);
      clearTimeout(setTimeout(() => {}, 60_000));
      clearInterval(setInterval(() => {}, 60_000));
      await new Promise((resolve) => setTimeout(resolve, 1));
      expect(timers.pending()).toBe(1);
      expect(timers.open()[0]).toContain("test-support.test.ts");
      clearTimeout(left);
      expect(timers.pending()).toBe(0);
    } finally {
      timers.restore();
    }
  });
});
