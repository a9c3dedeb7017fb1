#!/usr/bin/env node
/**
 * The `cairnq` bin: `cairnq <command> --db <sqlite file | postgres:// URL | mysql:// URL>`.
 * Run `cairnq --help` for the commands.
 */
import { runCli } from "./program.js";

// Colours only on a terminal; NO_COLOR (any non-empty value, https://no-color.org) and TERM=dumb turn them off.
const noColor = (process.env.NO_COLOR ?? "") !== "";
const color = process.stdout.isTTY === true && !noColor && process.env.TERM !== "dumb";

process.exitCode = await runCli(process.argv.slice(2), {
  out: (text) => void process.stdout.write(text),
  err: (text) => void process.stderr.write(text),
  color,
  env: process.env,
  now: () => Date.now(),
});
