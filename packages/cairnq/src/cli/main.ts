#!/usr/bin/env node
/**
 * The `cairnq` bin: `cairnq <command> --db <sqlite file | postgres:// URL | mysql:// URL>`.
 * Run `cairnq --help` for the commands.
 */
import { runCli } from "./program.js";

// Colours only on a terminal; NO_COLOR (any non-empty value, https://no-color.org) and TERM=dumb turn them off.
const noColor = (process.env.NO_COLOR ?? "") !== "";
const tty = process.stdout.isTTY === true;
const color = tty && !noColor && process.env.TERM !== "dumb";

// A reader that stops early (`cairnq list --json | head -c 20`) closes stdout: Node reports EPIPE as an
// 'error' event, which unhandled prints a stack trace. End at once and quietly instead, with 141 = 128 +
// SIGPIPE, the status a shell reports for coreutils (`seq 1000000 | head -1`), which SIGPIPE ends: a
// pipeline under `set -o pipefail` sees the output was cut, as it would with them. Node ignores SIGPIPE, so
// the status is set, not raised. Any other write error is reported on stderr, exit 1.
const EXIT_CLOSED_PIPE = 141;
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (err: NodeJS.ErrnoException) => {
    if (err.code !== "EPIPE" && stream === process.stdout) process.stderr.write(`error: cannot write the output: ${err.message}\n`);
    process.exit(err.code === "EPIPE" ? EXIT_CLOSED_PIPE : 1);
  });
}

process.exitCode = await runCli(process.argv.slice(2), {
  out: (text) => void process.stdout.write(text),
  err: (text) => void process.stderr.write(text),
  color,
  tty,
  env: process.env,
  now: () => Date.now(),
});
