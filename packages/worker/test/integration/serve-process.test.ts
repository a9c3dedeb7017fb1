import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";

const child = fileURLToPath(new URL("../fixtures/serve-child.ts", import.meta.url));

it("serve() in a real process: SIGTERM drains the running task, then the process exits by itself", async () => {
  const proc = spawn(process.execPath, ["--import", "tsx", child], { cwd: fileURLToPath(new URL("../..", import.meta.url)), stdio: "pipe" });
  let out = "";
  let err = "";
  proc.stderr.on("data", (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => proc.on("exit", (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    proc.stdout.on("data", (d: Buffer) => {
      out += d.toString();
      if (out.includes("started")) resolve();
    });
    proc.on("exit", () => reject(new Error(`child exited early: ${out}${err}`)));
  });
  proc.kill("SIGTERM");
  const code = await exited;
  expect(err).toBe("");
  expect(out).toContain('done succeeded "drained" listeners=0');
  expect(code).toBe(0);
}, 20_000);

it("serve() in a real process exits non-zero at once when the database can never work", async () => {
  const fatalChild = fileURLToPath(new URL("../fixtures/serve-fatal-child.ts", import.meta.url));
  const proc = spawn(process.execPath, ["--import", "tsx", fatalChild], { cwd: fileURLToPath(new URL("../..", import.meta.url)), stdio: "pipe" });
  let out = "";
  let err = "";
  proc.stdout.on("data", (d: Buffer) => (out += d.toString()));
  proc.stderr.on("data", (d: Buffer) => (err += d.toString()));
  const code = await new Promise<number | null>((resolve) => proc.on("exit", (c) => resolve(c)));
  expect(code).not.toBe(0);
  expect(code).not.toBeNull();
  expect(out).not.toContain("serve returned normally");
  expect(err).toContain("cairnq error: worker cannot work and stops");
  expect(err).toContain("belongs to another CairnQ installation");
}, 20_000);
