import type { ChildProcessByStdio } from "node:child_process";
import { spawn } from "node:child_process";
import type { Readable } from "node:stream";

/** A child process started by a test, with its output kept for failure messages. */
export interface Started {
  readonly child: ChildProcessByStdio<null, Readable, Readable>;
  /** Everything it printed so far (stdout and stderr interleaved). */
  output(): string;
  /** Resolves with the first match of `pattern` in its output; rejects if it exits or `timeoutMs` passes first. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves with how it exited. */
  stop(graceMs?: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Starts `node --import tsx <script>` in `cwd`, as `pnpm start` / `pnpm worker` would. */
export function startTs(label: string, script: string, options: { cwd: string; env: NodeJS.ProcessEnv }): Started {
  const child = spawn(process.execPath, ["--import", "tsx", script], {
    cwd: options.cwd,
    env: options.env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let text = "";
  const listeners = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    text += chunk.toString("utf8");
    for (const listener of listeners) listener();
  };
  child.stdout.on("data", onData);
  child.stderr.on("data", onData);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once("exit", (code, signal) => {
      for (const listener of listeners) listener();
      resolve({ code, signal });
    });
  });

  return {
    child,
    output: () => `--- ${label} output ---\n${text}--- end of ${label} output ---`,
    waitFor(pattern, timeoutMs = 20_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const match = pattern.exec(text);
          if (match) return done(() => resolve(match));
          if (child.exitCode !== null || child.signalCode !== null) {
            done(() => reject(new Error(`${label} exited (${child.exitCode ?? child.signalCode}) before printing ${pattern}\n${text}`)));
          }
        };
        const timer = setTimeout(() => done(() => reject(new Error(`${label} did not print ${pattern} within ${timeoutMs}ms\n${text}`))), timeoutMs);
        const done = (settle: () => void) => {
          clearTimeout(timer);
          listeners.delete(check);
          settle();
        };
        listeners.add(check);
        check();
      });
    },
    async stop(graceMs = 10_000) {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGTERM");
        const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
        await exited;
        clearTimeout(timer);
      }
      return exited;
    },
  };
}
