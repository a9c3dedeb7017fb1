import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";

/** Debian's Chromium: the browser the tests drive (playwright-core never downloads one). */
export const CHROMIUM = "/usr/bin/chromium";

/** Headless flags for a machine without general network access (no calls home). */
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

/**
 * Makes sure {@link CHROMIUM} exists: as root on Debian, installs the
 * `chromium` package with apt-get; anywhere else, fails with what to do.
 */
export function ensureChromium(): void {
  if (existsSync(CHROMIUM)) return;
  const isRoot = process.getuid?.() === 0;
  const hasApt = spawnSync("apt-get", ["--version"], { stdio: "ignore" }).status === 0;
  if (!isRoot || !hasApt) {
    throw new Error(
      `The dashboard's browser tests drive Debian's Chromium at ${CHROMIUM}, which is not installed, and they cannot install it here ` +
        `(${!hasApt ? "no apt-get" : "not running as root"}). Install it with \`sudo apt-get install -y chromium\` and run the tests again.`,
    );
  }
  for (const args of [["update"], ["install", "-y", "chromium"]]) {
    const { status, error } = spawnSync("apt-get", args, { stdio: "inherit", env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" } });
    if (error || status !== 0) throw new Error(`\`apt-get ${args.join(" ")}\` failed (${error?.message ?? `exit ${status}`}) while installing Chromium`);
  }
  if (!existsSync(CHROMIUM)) throw new Error(`apt-get installed chromium, but ${CHROMIUM} still does not exist`);
}
