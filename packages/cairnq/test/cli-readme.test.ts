/**
 * The README's CLI section against the CLI: every command of its table that
 * prints a document names that document's shape in the `--json` paragraph,
 * and `metrics`'s help says what its `--json` prints.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { runCli } from "../src/cli/program.js";

const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");

/** The commands of the README's command table (`| \`retry <id> …\` | …`), each once. */
function tableCommands(): string[] {
  const names = [...readme.matchAll(/^\| `([a-z-]+)[^`]*` \|/gm)].map((match) => match[1] as string);
  return [...new Set(names)];
}

/** The paragraph that starts "With `--json`", joined into one line. */
function jsonParagraph(): string {
  const start = readme.indexOf("With `--json`");
  expect(start, "the README's --json paragraph").toBeGreaterThan(0);
  const end = readme.indexOf("\n\n", start);
  return readme.slice(start, end).replace(/\s*\n\s*/g, " ");
}

describe("the README's --json shapes", () => {
  it("name a document for every command of the table but dashboard (which serves, printing text)", () => {
    const commands = tableCommands();
    expect(commands).toEqual(["stats", "list", "get", "explain", "cancel", "retry", "purge", "migrate", "metrics", "dashboard"]);
    const paragraph = jsonParagraph();
    const missing = commands.filter((name) => name !== "dashboard" && !new RegExp(`\`${name}\`[^;]*→`).test(paragraph));
    expect(missing, `commands whose --json shape the README does not give: ${paragraph}`).toEqual([]);
    expect(paragraph).toContain("`metrics` → `{ contentType, text }`");
    expect(paragraph).toContain('`migrate` → `{ command: "migrate", database, protocolVersion, schemaVersion }`');
  });

  it("metrics --help says what --json prints", async () => {
    let out = "";
    const io = { out: (text: string) => (out += text), err: (text: string) => (out += text), color: false, tty: false, env: {}, now: () => 0 };
    expect(await runCli(["--help"], io)).toBe(0);
    expect(out).toMatch(/metrics.*--json: \{ contentType, text \}/s);
  });
});
