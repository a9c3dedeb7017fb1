/**
 * A script that never calls `close()` ends by itself: the idle connections of
 * the pool the store builds hold no process open (as pg's `allowExitOnIdle`
 * does for the Postgres store), while a connection in use does. Each case
 * runs `test/fixtures/exit-child.ts` in a child process. Needs
 * `CAIRNQ_TEST_MYSQL_DSN`; without it the tests fail.
 */
import { MySQLAdmin, exited, fixtureSpawner, killChildren, mysqlDsn } from "@cairnq/test-support";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";

const spawnFixture = fixtureSpawner(new URL("..", import.meta.url));
const admin = new MySQLAdmin(mysqlDsn());
let dsn = "";
beforeAll(async () => {
  dsn = await admin.createDatabase("process_exit");
});
afterEach(() => killChildren());
afterAll(async () => {
  await admin.dropDatabase("process_exit");
  await admin.close();
});

/** Runs the fixture in `mode`; its exit code, stdout and how long it lived (killed after 15 s: without the fix it never exits; the margin is for tsx starting on a loaded machine). */
async function run(mode: string): Promise<{ code: number | null; out: string; ms: number }> {
  const started = Date.now();
  const child = spawnFixture("exit-child.ts", [dsn, mode]);
  let out = "";
  let err = "";
  child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()));
  const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
  const code = await exited(child);
  clearTimeout(timer);
  if (code !== 0) out += err;
  return { code, out, ms: Date.now() - started };
}

it.each(["submit", "worker"])("a script that never closes the store exits by itself once its work is done (%s)", async (mode) => {
  const { code, out } = await run(mode);
  expect(out).toBe(`done ${mode}\n`);
  expect(code).toBe(0);
}, 30_000);

it("a connection in use still holds the process: a statement a second long is answered before it exits", async () => {
  const { code, out, ms } = await run("busy");
  expect(out).toBe("done busy\n");
  expect(code).toBe(0);
  expect(ms).toBeGreaterThanOrEqual(1000);
}, 30_000);
