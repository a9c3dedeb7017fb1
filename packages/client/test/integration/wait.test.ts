import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

describe("process lifetime", () => {
  it("keeps the process alive while a wait is pending, even on a store whose sleeps are unref'd", () => {
    const packageDir = fileURLToPath(new URL("../..", import.meta.url));
    const run = spawnSync(process.execPath, ["--import", "tsx", "test/fixtures/top-level-wait.ts"], {
      cwd: packageDir,
      encoding: "utf8",
      timeout: 15_000,
    });
    expect(run.stderr).toBe("");
    expect(run.stdout.trim()).toBe("TaskTimeout after the timeout");
    expect(run.status).toBe(0);
  });
});
