/**
 * `cairnq cancel` of a running task: the cancel is written before the
 * command asks `explain` what happens next, so an explain that fails leaves
 * the plain "requested cancel" line instead of a reported failure.
 */
import type { CairnQ } from "@cairnq/client";
import type { Task } from "@cairnq/protocol";
import { describe, expect, it } from "vitest";
import { cancelCommand } from "../src/cli/commands.js";
import type { CliIo } from "../src/cli/output.js";

const io: CliIo = { out: () => {}, err: () => {}, color: false, tty: false, env: {}, now: () => 1_000 };
const ID = "task_01J0000000000000000000000A";

describe("cancelCommand", () => {
  it("reports the requested cancel of a running task even when explain fails afterwards", async () => {
    const running = { id: ID, status: "running", worker_id: "worker_x" } as unknown as Task;
    const client = {
      cancel: () => Promise.resolve(running),
      explain: () => Promise.reject(new Error("connection reset")),
    } as unknown as CairnQ;
    const out = await cancelCommand(client, io, ID);
    expect(out.text).toBe(`requested cancel of 1 running task: ${ID}`);
    expect(out.json).toEqual({ command: "cancel", changed: 1, task: running });
  });
});
