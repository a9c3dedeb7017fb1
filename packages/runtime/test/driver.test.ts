import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { CairnQError, isFatalError } from "@cairnq/protocol";
import { loadDriver } from "@cairnq/runtime";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

/** A directory with `node_modules/<name>/index.js` holding `body`, and the URL of a module beside it. */
function fakeInstall(name: string, body: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cairnq-driver-"));
  dirs.push(dir);
  const pkg = path.join(dir, "node_modules", name);
  fs.mkdirSync(pkg, { recursive: true });
  fs.writeFileSync(path.join(pkg, "package.json"), JSON.stringify({ name, version: "1.0.0", main: "index.js" }));
  fs.writeFileSync(path.join(pkg, "index.js"), body);
  return pathToFileURL(path.join(dir, "store.js")).href;
}

const spec = { requiredBy: "@cairnq/store-x", backend: "X" };

describe("loadDriver", () => {
  it("returns the driver resolved from the caller's location", () => {
    const from = fakeInstall("fake-driver-ok", "module.exports = { kind: 'fake' };");
    expect(loadDriver<{ kind: string }>({ ...spec, module: "fake-driver-ok", from })).toEqual({ kind: "fake" });
  });

  it("says which package to install when the driver is absent, as a fatal CairnQError", () => {
    const from = fakeInstall("something-else", "");
    let caught: unknown;
    try {
      loadDriver({ ...spec, module: "fake-driver-absent", from });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(CairnQError);
    expect(isFatalError(caught)).toBe(true);
    expect((caught as Error).message).toContain("@cairnq/store-x needs the 'fake-driver-absent' driver");
    expect((caught as Error).message).toContain("npm install fake-driver-absent");
    expect((caught as Error).cause).toBeInstanceOf(Error);
  });

  it("tells a driver that is installed but fails to load from an absent one", () => {
    const from = fakeInstall("fake-driver-broken", "throw new Error('was compiled against a different Node.js version');");
    expect(() => loadDriver({ ...spec, module: "fake-driver-broken", from })).toThrow(
      /found the 'fake-driver-broken' driver but could not load it \(was compiled against a different Node\.js version\); .*npm rebuild fake-driver-broken/,
    );
  });
});
