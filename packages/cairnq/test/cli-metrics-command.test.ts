/**
 * `cairnq metrics` prints stored queue names inside Prometheus labels: raw
 * when piped (a textfile collector reads the text byte for byte), escaped on
 * a terminal, where an escape sequence in a queue name would set the window
 * title or clear the screen.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { prometheusText } from "@cairnq/dashboard";
import { CairnQ } from "cairnq";
import { afterEach, describe, expect, it } from "vitest";
import { metricsCommand } from "../src/cli/metrics-command.js";
import type { CliIo } from "../src/cli/output.js";

const HOSTILE = "mail\u001b]0;PWNED\u0007\u001b[2J\u001b[H\u009b31m\u202e";
const dirs: string[] = [];

afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function io(tty: boolean): CliIo {
  return { out: () => {}, err: () => {}, color: false, tty, env: {}, now: () => Date.now() };
}

/** The scrape without the lines that change between two reads (the read's duration, the ages). */
function steady(text: string): string {
  return text.replace(/^(cairnq_metrics_read_seconds|cairnq_oldest_queued_age_seconds\{.*\}) \S+$/gm, "$1 <varies>");
}

describe("metricsCommand", () => {
  it("prints the Prometheus text byte for byte when piped, and with control characters written out on a terminal", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cairnq-metrics-"));
    dirs.push(dir);
    const client = CairnQ.sqlite(join(dir, "cairnq.db"));
    try {
      await client.submit("send", {}, { queue: HOSTILE });
      const piped = await metricsCommand(client, io(false));
      expect(piped.text).toContain(`cairnq_tasks{queue="${HOSTILE}",status="queued"} 1`);
      expect(steady(piped.text)).toBe(steady((await prometheusText(client.store)).text.trimEnd()));

      const terminal = await metricsCommand(client, io(true));
      // eslint-disable-next-line no-control-regex -- what a terminal would act on
      expect(terminal.text).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/);
      expect(terminal.text).toContain('cairnq_tasks{queue="mail\\x1b]0;PWNED\\x07\\x1b[2J\\x1b[H\\x9b31m\\u202e",status="queued"} 1');
      // Only the stored text changes: the rest of the scrape is the piped one.
      expect(steady(terminal.text).split("\n").filter((line) => !line.includes("mail"))).toEqual(steady(piped.text).split("\n").filter((line) => !line.includes("mail")));
      // --json carries the text as served.
      expect((terminal.json as { text: string }).text).toContain(HOSTILE);
    } finally {
      await client.close();
    }
  });
});
