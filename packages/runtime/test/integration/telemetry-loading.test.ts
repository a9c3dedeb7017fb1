import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";

// Child processes on the built package (dist/), so these run in the integration tier, after the build.
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

/** The URL of a module in an empty directory: nothing resolves from there. */
function nowhere(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cairnq-otel-"));
  dirs.push(dir);
  return pathToFileURL(path.join(dir, "worker.js")).href;
}

/**
 * Runs `body` in a child Node process without NODE_PATH (a package manager's `exec` sets it to its store,
 * from which anything would resolve), with `loadOpenTelemetry` and `Telemetry` of the built package in
 * scope and `from` a module URL in an empty directory; returns what it printed.
 */
function inChild(body: string): string {
  const runtime = pathToFileURL(path.resolve(import.meta.dirname, "../../dist/index.js")).href;
  const script = `import { loadOpenTelemetry, Telemetry } from ${JSON.stringify(runtime)};\nconst from = ${JSON.stringify(nowhere())};\n${body}`;
  const env = { ...process.env };
  delete env.NODE_PATH;
  return execFileSync(process.execPath, ["--input-type=module", "-e", script], { env, encoding: "utf8" });
}

describe("loading @opentelemetry/api", () => {
  it("fails with a fatal CairnQError naming the package, the option and the install command when it is missing", () => {
    const out = JSON.parse(
      inChild(`try { loadOpenTelemetry({ requiredBy: "@cairnq/worker", option: "tracing", from }); console.log("null"); }
        catch (err) { console.log(JSON.stringify({ name: err.name, fatal: err.fatal, message: err.message })); }`),
    ) as { name: string; fatal: boolean; message: string } | null;
    expect(out).toMatchObject({ name: "CairnQError", fatal: true });
    expect(out?.message).toMatch(/^@cairnq\/worker needs '@opentelemetry\/api' for the 'tracing' option, and it is not installed/);
    expect(out?.message).toContain("npm install @opentelemetry/api");
  });

  it("is never loaded while tracing and metrics are off", () => {
    // Nothing resolves from `from`: a load would throw, as it does once an option asks for it.
    const out = inChild(`
      const what = { requiredBy: "@cairnq/client", from, what: "new CairnQ(store, options)" };
      console.log([{}, { tracing: false, metrics: false }, { tracing: null, metrics: undefined }].map((o) => String(Telemetry.of(o, what))).join(","));
      try { Telemetry.of({ metrics: true }, what); } catch (err) { console.log(err.message.slice(0, 71)); }`);
    expect(out).toBe("null,null,null\n@cairnq/client needs '@opentelemetry/api' for the 'metrics' option, and\n");
  });
});
