/**
 * `cairnq get` on rows it must show as they are: a `run_at_ms` past what a
 * JavaScript `Date` holds (a v1 peer may write 9223372036854775807: docs/protocol.md,
 * "Delay limit"), a wait's park without a deadline (`PARK_FOREVER_AT_MS`), and
 * the `waiting` entry a cancel leaves in a finished task's journal.
 */
import type { CairnQ } from "@cairnq/client";
import type { StepRecord, Task } from "@cairnq/protocol";
import { PARK_FOREVER_AT_MS } from "@cairnq/protocol";
import { stepRecord, TASK_ROW_NOW, taskRow } from "@cairnq/test-support/task-rows";
import { describe, expect, it } from "vitest";
import { getCommand } from "../src/cli/commands.js";
import type { CliIo } from "../src/cli/output.js";

const NOW = TASK_ROW_NOW;
const io: CliIo = { out: () => {}, err: () => {}, color: false, tty: false, env: {}, now: () => NOW };
const ID = "task_01J0000000000000000000000A";

/** The row `cairnq get` shows: test-support's task row, of 'far' on queue 'default', due now, its own root. */
function row(fields: Partial<Task>): Task {
  return taskRow({ id: ID, name: "far", queue: "default", run_at_ms: NOW, root_id: ID, ...fields });
}

function clientOf(task: Task, steps: StepRecord[] | null = null, messages: readonly string[] = []): CairnQ {
  return {
    get: () => Promise.resolve(task),
    steps: () => Promise.resolve(steps ?? []),
    store: { capabilities: { durableSteps: steps !== null }, hasMessage: (_id: string, name: string) => Promise.resolve(messages.includes(name)) },
  } as unknown as CairnQ;
}

describe("getCommand", () => {
  it("shows a run_at_ms no Date holds as the number read, instead of failing with 'Invalid time value'", async () => {
    const out = await getCommand(clientOf(row({ run_at_ms: Number("9223372036854775807") })), io, ID);
    expect(out.text).toMatch(/run at\s+9223372036854776000 ms since the epoch \(beyond the year 275760\)/);
  });

  it("shows a park without a deadline as never, not as a date in the year 275760", async () => {
    const wait = stepRecord({ name: "approval", kind: "wait", atMs: NOW - 1000, wakeAtMs: PARK_FOREVER_AT_MS, waitingFor: "approval" });
    const out = await getCommand(clientOf(row({ run_at_ms: PARK_FOREVER_AT_MS }), [wait]), io, ID);
    expect(out.text).toMatch(/run at\s+never \(no deadline\)\n/);
    expect(out.text).not.toContain("275760");
    expect(out.text).toContain("waiting for a message 'approval'");
    // Once sent, the entry stays `waiting` until a worker resumes the task: it says so, rather than ask for the message again.
    const sent = await getCommand(clientOf(row({ run_at_ms: NOW }), [wait], ["approval"]), io, ID);
    expect(sent.text).toContain("waiting for a worker to resume it: the message 'approval' has arrived");
    expect(sent.text).not.toContain("cairnq.send(");
  });

  it("pads step names by terminal columns, so the kind column starts at one column after a CJK, emoji or combining name", async () => {
    // Hand-counted columns: 日本語 6, 🚀 2 + ' go' 3, e + U+0301 one, a zero-width space none; the longest is 'ascii-step', 10.
    const names: [string, number][] = [["ascii-step", 10], ["日本語", 6], ["🚀 go", 5], ["cafe\u0301", 4], ["zero\u200bw", 5]];
    const steps = names.map(([name], i) => stepRecord({ name, kind: "step", status: "done", result: i, seq: i + 1 }));
    const out = await getCommand(clientOf(row({}), steps), io, ID);
    const lines = out.text.split("\n").filter((line) => line.includes("  step   "));
    expect(lines).toHaveLength(names.length);
    // Two spaces, the name padded to 10 columns, two spaces: the kind starts at column 14 of every line.
    const column = (line: string, [name, width]: [string, number]): number => line.indexOf("  step   ") + 2 - name.length + width;
    expect(lines.map((line, i) => column(line, names[i] as [string, number]))).toEqual(names.map(() => 14));
  });

  it("a finished task's waiting entry is where it was parked, not a wait still going on", async () => {
    const nap = stepRecord({ atMs: NOW - 1000, wakeAtMs: NOW + 3_540_000 });
    const canceled = await getCommand(clientOf(row({ status: "canceled", completed_at_ms: NOW, run_at_ms: NOW + 3_540_000 }), [nap]), io, ID);
    expect(canceled.text).toMatch(/nap\s+sleep\s+waiting\s+attempt 1 .* parked here when the task ended canceled: no longer waiting$/m);
    expect(canceled.text).not.toContain("waiting for the end of sleep");
    // While it is queued, the same entry is what it waits for.
    const parked = await getCommand(clientOf(row({ run_at_ms: NOW + 3_540_000 }), [nap]), io, ID);
    expect(parked.text).toContain("waiting for the end of sleep 'nap' 2026-12-01T10:59:00.000Z (in 59 min)");
  });
});

describe("getCommand and bidi controls", () => {
  it("writes bidi controls out in the fields, the progress message and the JSON blocks", async () => {
    const task = row({ name: "bill\u202e", queue: "mail\u2066", progress: 0.5, message: "half\u202e done", payload: { to: "x\u202e@example.com", c1: "\u009b2J" } });
    const out = await getCommand(clientOf(task), io, ID);
    expect(out.text).not.toMatch(/[\u009b\u202a-\u202e\u2066-\u2069]/);
    expect(out.text).toMatch(/name\s+bill\\u202e\n/);
    expect(out.text).toMatch(/queue\s+mail\\u2066\n/);
    expect(out.text).toContain('50% "half\\u202e done"');
    expect(out.text).toContain('"to": "x\\u202e@example.com"');
    // JSON escapes, so the block still reads back as the stored JSON (printable's \x9b would not).
    expect(out.text).toContain('"c1": "\\u009b2J"');
  });
});
