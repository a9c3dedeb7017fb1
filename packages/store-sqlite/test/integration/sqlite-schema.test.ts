import fs from "node:fs";
import path from "node:path";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { exited, nextLine, spawnFixture, tempFile } from "../helpers.js";
import { describeSchema, INDEXES, LEDGER, ledger, TABLES } from "../schema.js";

describe("concurrent migration from several processes (§3.7)", () => {
  it("applies each migration exactly once when 4 processes connect to one fresh file at once", async () => {
    const file = tempFile();
    const children = Array.from({ length: 4 }, () => spawnFixture("connect-child.ts", [file]));
    await Promise.all(children.map((child) => nextLine(child, (line) => line === "ready")));
    const results = children.map((child) => nextLine(child, (line) => line.startsWith("{")));
    for (const child of children) child.stdin.write("go\n");
    const reports = (await Promise.all(results)).map((line) => JSON.parse(line) as { applied?: string[]; error?: string });
    expect(reports.filter((r) => r.error !== undefined)).toEqual([]);
    const all = reports.flatMap((r) => r.applied ?? []);
    expect(all.sort()).toEqual(LEDGER);
    expect(await Promise.all(children.map(exited))).toEqual([0, 0, 0, 0]);
    expect(ledger(file).map((e) => e.name)).toEqual(LEDGER);
    const schema = describeSchema(file);
    expect(schema.tables).toEqual(TABLES);
    expect(schema.indexes).toEqual(INDEXES);
  });
});

describe("open errors name the file and say what is wrong (fatal: retrying cannot help)", () => {
  it("a database file this process may not open (a real process without the permission)", () => {
    const file = tempFile();
    fs.writeFileSync(file, "");
    fs.chmodSync(path.dirname(file), 0o755);
    fs.chmodSync(file, 0o000);
    const fixture = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "fixtures", "open-store.mjs");
    // Root may open anything: as root, the child runs as an unprivileged user (the one Postgres tests use).
    const argv = process.getuid?.() === 0 ? ["/usr/sbin/runuser", "-u", "postgres", "--", process.execPath, fixture, file] : [process.execPath, fixture, file];
    const child = spawnSync(argv[0] as string, argv.slice(1), { encoding: "utf8", timeout: 20_000 });
    expect(child.status, child.stderr).toBe(0);
    const outcome = JSON.parse(child.stdout.trim().split("\n").pop() as string) as Record<string, unknown>;
    expect(outcome).toMatchObject({ ok: false, name: "DatabaseUnusable", database: file, fatal: true });
    expect(outcome.message).toMatch(/cannot open it for reading and writing; check its owner and permissions/);
  });
});
