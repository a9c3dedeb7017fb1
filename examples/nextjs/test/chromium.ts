import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";

/** Debian's Chromium: the browser the test drives (playwright-core never downloads one). */
export const CHROMIUM = "/usr/bin/chromium";

/**
 * Flags for a headless run on a machine without general network access:
 * the background-networking ones stop Chromium from calling home (updates,
 * sync, field trials), which would otherwise fail noisily at every start.
 */
export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

function run(command: string, args: string[]): void {
  const { status, error } = spawnSync(command, args, {
    stdio: "inherit",
    env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
  });
  if (error || status !== 0) {
    throw new Error(`\`${command} ${args.join(" ")}\` failed (${error?.message ?? `exit ${status}`}) while installing Chromium for the Next.js example's test`);
  }
}

/**
 * Makes sure {@link CHROMIUM} exists: on a fresh Debian machine where we are
 * root, installs the `chromium` package with apt-get (a minute or two);
 * anywhere else, fails with what to do.
 */
export function ensureChromium(): void {
  if (existsSync(CHROMIUM)) return;
  const isRoot = process.getuid?.() === 0;
  const hasApt = spawnSync("apt-get", ["--version"], { stdio: "ignore" }).status === 0;
  if (!isRoot || !hasApt) {
    throw new Error(
      `The Next.js example's test drives Debian's Chromium at ${CHROMIUM}, which is not installed, and it cannot install it here ` +
        `(${!hasApt ? "no apt-get" : "not running as root"}). Install it with \`sudo apt-get install -y chromium\` and run the test again.`,
    );
  }
  console.log(`${CHROMIUM} is missing: installing Debian's chromium package (apt-get update && apt-get install -y chromium)`);
  run("apt-get", ["update"]);
  run("apt-get", ["install", "-y", "chromium"]);
  if (!existsSync(CHROMIUM)) throw new Error(`apt-get installed chromium, but ${CHROMIUM} still does not exist`);
}
