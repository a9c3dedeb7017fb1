/**
 * `cairnq explain` (and the paragraph `cairnq cancel` adds): the summary is
 * built around stored values (queue, name, group, worker, error message), so
 * it is printed as one paragraph: a line break or control character in a
 * value is written out, and cannot forge lines after it.
 */
import type { CairnQ, Explanation } from "@cairnq/client";
import type { Task } from "@cairnq/protocol";
import { describe, expect, it } from "vitest";
import { cancelCommand, explainCommand } from "../src/cli/commands.js";
import type { CliIo } from "../src/cli/output.js";

const io: CliIo = { out: () => {}, err: () => {}, color: false, tty: false, env: {}, now: () => 1_000 };
const ID = "task_01J0000000000000000000000A";
const FORGED = "acme (0 running).\n\ntask_01M8RFQRJGGQ5PBVNQT5EVBXFK succeeded (succeeded)\nFinished: succeeded on attempt 1 of 3.\u202e\n\n";

function clientOf(status: Task["status"], summary: string): CairnQ {
  const task = { id: ID, name: "invoice.send", queue: "mail", status } as unknown as Task;
  const explained: Explanation = { taskId: ID, state: "unclaimed", summary, atMs: null, activity: null, task, steps: null };
  return { explain: () => Promise.resolve(explained), cancel: () => Promise.resolve(task) } as unknown as CairnQ;
}

describe("explainCommand", () => {
  it("prints the paragraph on one line: a stored value's line breaks and bidi controls are written out", async () => {
    const summary = `Queued in queue 'mail', waiting on its group's limit: group ${FORGED}: 1 of 1 running. The last error was TypeError: "bad \\"x\\" in C:\\\\tmp".`;
    const out = await explainCommand(clientOf("queued", summary), io, ID);
    const lines = out.text.split("\n");
    expect(lines).toHaveLength(2);
    expect(lines[0]).toBe(`${ID} queued (unclaimed)`);
    expect(lines[1]).toContain("group acme (0 running).\\n\\ntask_01M8RFQRJGGQ5PBVNQT5EVBXFK succeeded (succeeded)\\nFinished: succeeded on attempt 1 of 3.\\u202e\\n\\n: 1 of 1 running.");
    // The JSON quoting of the error message reads as it was written: its backslashes are not doubled.
    expect(lines[1]).toContain('TypeError: "bad \\"x\\" in C:\\\\tmp".');
    // --json has the summary as it is.
    expect(out.json).toMatchObject({ explanation: { summary } });
  });

  it("cancel of a running task prints explain's paragraph the same way", async () => {
    const out = await cancelCommand(clientOf("running", `Running under worker ${FORGED}.`), io, ID);
    expect(out.text.split("\n")).toHaveLength(2);
    expect(out.text).toContain("worker acme (0 running).\\n\\ntask_01M8RFQRJGGQ5PBVNQT5EVBXFK");
  });
});
