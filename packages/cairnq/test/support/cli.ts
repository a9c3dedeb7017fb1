import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";

/** The built CLI (`pnpm build` writes it): the integration tests run it as a user would, as its own process. */
export const CLI_BIN = fileURLToPath(new URL("../../dist/cli/main.js", import.meta.url));

/** What one run of the CLI did: its exit code (-1 when it ended without one: killed, or over 30 s) and its output. */
export interface CliRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** The environment a CLI run gets: this process's without `CAIRNQ_DB` and `NO_COLOR`, then `env` (an entry set to `undefined` removes that variable). */
export function cliEnv(env: Readonly<Record<string, string | undefined>> = {}): NodeJS.ProcessEnv {
  return { ...process.env, NO_COLOR: undefined, CAIRNQ_DB: undefined, ...env };
}

/**
 * Runs `cairnq <args>` ({@link CLI_BIN}) to its end, at most 30 s, in {@link cliEnv}`(options.env)`.
 */
export function runCli(args: readonly string[], options: { readonly cwd?: string; readonly env?: Readonly<Record<string, string | undefined>> } = {}): Promise<CliRun> {
  const env = cliEnv(options.env);
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI_BIN, ...args], { cwd: options.cwd, env, timeout: 30_000 }, (err, stdout, stderr) => {
      resolve({ code: err === null ? 0 : typeof err.code === "number" ? err.code : -1, stdout, stderr });
    });
  });
}
