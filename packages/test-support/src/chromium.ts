/**
 * The browser the browser tests drive: Debian's Chromium, through
 * playwright-core (which never downloads one).
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";

/** Debian's Chromium. */
export const CHROMIUM = "/usr/bin/chromium";

/**
 * Flags for a headless run on a machine without general network access:
 * the background-networking ones stop Chromium from calling home (updates,
 * sync, field trials), which would otherwise fail noisily at every start.
 */
export const CHROMIUM_ARGS: readonly string[] = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** What playwright-core's `chromium.launch` (or `launchPersistentContext`) takes to start {@link CHROMIUM}. */
export function chromiumLaunchOptions(): { executablePath: string; headless: true; args: string[] } {
  return { executablePath: CHROMIUM, headless: true, args: [...CHROMIUM_ARGS] };
}

function aptGet(args: readonly string[]): void {
  const { status, error } = spawnSync("apt-get", args, { stdio: "inherit", env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" } });
  if (error || status !== 0) throw new Error(`\`apt-get ${args.join(" ")}\` failed (${error?.message ?? `exit ${status}`}) while installing Chromium`);
}

/**
 * Makes sure {@link CHROMIUM} exists: on a Debian machine where we are root,
 * installs the `chromium` package with apt-get (a minute or two); anywhere
 * else, fails with what to do. `who` names the tests in that message
 * ("the dashboard's browser tests").
 */
export function ensureChromium(who: string): void {
  if (existsSync(CHROMIUM)) return;
  const isRoot = process.getuid?.() === 0;
  const hasApt = spawnSync("apt-get", ["--version"], { stdio: "ignore" }).status === 0;
  if (!isRoot || !hasApt) {
    throw new Error(
      `${who} drive Debian's Chromium at ${CHROMIUM}, which is not installed, and cannot install it here ` +
        `(${!hasApt ? "no apt-get" : "not running as root"}). Install it with \`sudo apt-get install -y chromium\` and run the tests again.`,
    );
  }
  console.log(`${CHROMIUM} is missing: installing Debian's chromium package (apt-get update && apt-get install -y chromium)`);
  aptGet(["update"]);
  aptGet(["install", "-y", "chromium"]);
  if (!existsSync(CHROMIUM)) throw new Error(`apt-get installed chromium, but ${CHROMIUM} still does not exist`);
}
