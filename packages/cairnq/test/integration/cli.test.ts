/**
 * The `cairnq` bin, run as a real child process (the built
 * `dist/cli/main.js`, as npm links it) against a real SQLite file, a real
 * Postgres schema and a real MariaDB database holding tasks in every status. Asserts on `--json`
 * documents and exit codes (0 ok, 1 failed, 2 usage).
 */
import type { ChildProcess } from "node:child_process";
import { execFile, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Task, TaskStore } from "@cairnq/protocol";
import { newTaskId } from "@cairnq/protocol/adapter";
import { MySQLStore } from "@cairnq/store-mysql";
import { PostgresStore } from "@cairnq/store-postgres";
import { SQLiteStore } from "@cairnq/store-sqlite";
import { MySQLAdmin, mysqlDsn } from "@cairnq/test-support";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closeAdmin, dropSchema, freshSchemaName, pgDsn, q } from "../support/postgres.js";
import type { Seeded } from "../support/seed.js";
import { seed } from "../support/seed.js";
import { CLI_BIN as BIN, cliEnv, runCli as cli } from "../support/cli.js";
import type { CliRun } from "../support/cli.js";

async function cliJson<T = Record<string, unknown>>(args: readonly string[], expectedCode = 0): Promise<T> {
  const run = await cli([...args, "--json"]);
  expect(run.code, `cairnq ${args.join(" ")}\n${run.stderr}`).toBe(expectedCode);
  return JSON.parse(run.stdout) as T;
}

interface Backend {
  name: string;
  db: string[];
  open(): TaskStore;
  setUp(): Promise<void>;
  tearDown(): Promise<void>;
}

function sqliteBackend(): Backend {
  let dir = "";
  const backend: Backend = {
    name: "SQLite",
    db: [],
    open: () => new SQLiteStore(join(dir, "cairnq.db")),
    async setUp() {
      dir = mkdtempSync(join(tmpdir(), "cairnq-cli-"));
      backend.db = ["--db", join(dir, "cairnq.db")];
    },
    async tearDown() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return backend;
}

function postgresBackend(): Backend {
  let schema = "";
  const backend: Backend = {
    name: "Postgres",
    db: [],
    open: () => new PostgresStore(pgDsn(), { schema, listen: false }),
    async setUp() {
      schema = await freshSchemaName("cairnq_cli");
      backend.db = ["--db", pgDsn(), "--schema", schema];
    },
    async tearDown() {
      await dropSchema(schema);
      await closeAdmin();
    },
  };
  return backend;
}

function mysqlBackend(): Backend {
  let admin: MySQLAdmin | null = null;
  let dsn = "";
  const backend: Backend = {
    name: "MySQL",
    db: [],
    open: () => new MySQLStore(dsn, { max: 2 }),
    async setUp() {
      admin = new MySQLAdmin(mysqlDsn());
      dsn = await admin.createDatabase("cli");
      backend.db = ["--db", dsn];
    },
    async tearDown() {
      await admin?.dropDatabase("cli");
      await admin?.close();
    },
  };
  return backend;
}

for (const backend of [sqliteBackend(), postgresBackend(), mysqlBackend()]) {
  describe(`cairnq CLI on ${backend.name}`, () => {
    let store: TaskStore;
    let t: Seeded;

    beforeAll(async () => {
      await backend.setUp();
      store = backend.open();
      t = await seed(store);
    });

    afterAll(async () => {
      await store?.close();
      await backend.tearDown();
    });

    it("stats --json counts every queue by status; the text form is an aligned table without colours off a TTY", async () => {
      const out = await cliJson<{ queues: Record<string, Record<string, number>>; totals: Record<string, number> }>(["stats", ...backend.db]);
      expect(out.queues.mail).toEqual({ queued: 2, running: 0, succeeded: 0, failed: 0, canceled: 1, total: 3 });
      expect(out.queues.jobs).toEqual({ queued: 1, running: 2, succeeded: 1, failed: 0, canceled: 0, total: 4 });
      expect(out.queues.billing).toEqual({ queued: 0, running: 0, succeeded: 0, failed: 2, canceled: 0, total: 2 });
      expect(out.queues.crash).toEqual({ queued: 0, running: 1, succeeded: 0, failed: 0, canceled: 0, total: 1 });
      expect(out.totals.total).toBe(10);

      const text = await cli(["stats", ...backend.db]);
      expect(text.code).toBe(0);
      expect(text.stdout).not.toContain("\u001b[");
      const lines = text.stdout.trimEnd().split("\n");
      expect(lines[0]).toMatch(/^QUEUE\s+QUEUED\s+RUNNING\s+SUCCEEDED\s+FAILED\s+CANCELED\s+TOTAL$/);
      expect(lines.map((l) => l.length).every((n) => n === lines[0]?.length)).toBe(true);
      expect(lines.at(-1)).toMatch(/^\(all\)\s+3\s+3\s+1\s+2\s+1\s+10$/);
    });

    // Two cases, not one: each CLI call is a fresh Node process, and ten of them on a loaded 2-core gate
    // neared the 20 s test timeout.
    it("list filters by status, queue and name; people get an aligned table", async () => {
      const failed = await cliJson<{ tasks: Task[] }>(["list", ...backend.db, "--status", "failed"]);
      expect(failed.tasks.map((x) => x.id).sort()).toEqual([t.failed.id, t.failed2.id].sort());
      const mail = await cliJson<{ tasks: Task[] }>(["list", ...backend.db, "--queue", "mail", "--name", "email", "--status", "queued"]);
      expect(mail.tasks.map((x) => x.id).sort()).toEqual([t.queued.id, t.delayed.id].sort());
      const correlated = await cliJson<{ tasks: Task[] }>(["list", ...backend.db, "--correlation-id", "order-7"]);
      expect(correlated.tasks.map((x) => x.id)).toEqual([t.failed.id]);

      // People get an aligned table with relative times.
      const text = await cli(["list", ...backend.db, "--queue", "billing"]);
      const lines = text.stdout.trimEnd().split("\n");
      expect(lines[0]).toMatch(/^ID\s+NAME\s+QUEUE\s+STATUS\s+ATTEMPT\s+PROGRESS\s+CREATED$/);
      expect(lines).toHaveLength(3);
      for (const line of lines.slice(1)) expect(line).toMatch(/^task_\S+\s+(charge|refund)\s+billing\s+failed\s+1\/1\s+(just now|\d+ s ago|\d+ min( \d+ s)? ago)$/);
      expect(lines[1]?.indexOf("billing")).toBe(lines[0]?.indexOf("QUEUE"));
    });

    it("list pages with --before without repeats; a page that is exactly full is the last when nothing follows", async () => {
      const seen: string[] = [];
      let before: string | null = null;
      for (let page = 0; page < 10; page++) {
        const out: { tasks: Task[]; nextBeforeId: string | null } = await cliJson(["list", ...backend.db, "--limit", "4", ...(before === null ? [] : ["--before", before])]);
        seen.push(...out.tasks.map((x) => x.id));
        before = out.nextBeforeId;
        if (before === null) break;
      }
      expect(seen).toHaveLength(10);
      expect(new Set(seen).size).toBe(10);
      expect(seen).toEqual([...seen].sort().reverse());
      // A page that is exactly full is the last one when nothing follows it: no next page that holds nothing.
      const first = await cliJson<{ tasks: Task[]; nextBeforeId: string | null }>(["list", ...backend.db, "--limit", "5"]);
      expect(first.nextBeforeId).toBe(first.tasks[4]?.id);
      const last = await cliJson<{ tasks: Task[]; nextBeforeId: string | null }>(["list", ...backend.db, "--limit", "5", "--before", first.nextBeforeId as string]);
      expect([last.tasks.length, last.nextBeforeId]).toEqual([5, null]);
      expect((await cli(["list", ...backend.db, "--limit", "5", "--before", first.nextBeforeId as string])).stdout).not.toContain("more:");
    });

    it("get --json prints the whole row; an unknown id fails with 1, a malformed one is usage (2)", async () => {
      const out = await cliJson<{ task: Task }>(["get", t.failed.id, ...backend.db]);
      expect(out.task).toEqual(t.failed);
      const missing = await cliJson<{ error: { code: string; message: string } }>(["get", newTaskId(), ...backend.db], 1);
      expect(missing.error.code).toBe("not_found");
      const bad = await cli(["get", "42", ...backend.db]);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain("is not a task id");
      expect(bad.stderr).toContain("cairnq list");
      const text = await cli(["get", t.running.id, ...backend.db]);
      expect(text.stdout).toMatch(/progress\s+40% "resizing"/);
    });

    it("explain says why each task is where it is", async () => {
      const explain = async (task: Task) => (await cliJson<{ explanation: { state: string; summary: string } }>(["explain", task.id, ...backend.db])).explanation;
      const [queued, delayed, backingOff, running, cancelRequested, expired, succeeded, failed, canceled] = await Promise.all(
        [t.queued, t.delayed, t.backingOff, t.running, t.cancelRequested, t.expired, t.succeeded, t.failed, t.canceled].map(explain),
      );
      expect(queued).toMatchObject({ state: "unclaimed", summary: expect.stringContaining("Nothing has claimed queue 'mail' recently") });
      expect(delayed).toMatchObject({ state: "delayed", summary: expect.stringMatching(/^Not due until \S+ \(in 59 min/) });
      expect(backingOff).toMatchObject({ state: "backing-off", summary: expect.stringContaining("503 from upstream") });
      expect(running).toMatchObject({ state: "running", summary: expect.stringContaining(`worker ${t.running.worker_id}`) });
      expect(cancelRequested).toMatchObject({ state: "cancel-requested" });
      expect(expired).toMatchObject({ state: "lease-expired", summary: expect.stringContaining("awaits recovery") });
      expect(succeeded).toMatchObject({ state: "succeeded" });
      expect(failed).toMatchObject({ state: "failed", summary: expect.stringContaining('card_declined: "card declined"') });
      expect(canceled).toMatchObject({ state: "canceled", summary: expect.stringContaining("while queued, before any worker claimed it") });
    });

    it("cancel and retry one task say what changed; the wrong status fails with 1", async () => {
      const canceled = await cliJson<{ changed: number; task: Task }>(["cancel", t.queued.id, ...backend.db]);
      expect(canceled).toMatchObject({ command: "cancel", changed: 1, task: { id: t.queued.id, status: "canceled" } });
      const again = await cliJson<{ error: { code: string } }>(["cancel", t.queued.id, ...backend.db], 1);
      expect(again.error.code).toBe("not_cancelable");
      const flagged = await cliJson<{ task: Task }>(["cancel", t.running.id, ...backend.db]);
      expect(flagged.task.status).toBe("running");
      expect(flagged.task.cancel_requested_at_ms).not.toBeNull();

      const retried = await cliJson<{ changed: number; task: Task }>(["retry", t.failed.id, ...backend.db]);
      expect(retried).toMatchObject({ command: "retry", changed: 1, task: { id: t.failed.id, status: "queued", error: null } });
      const notRetryable = await cli(["retry", t.succeeded.id, ...backend.db]);
      expect(notRetryable.code).toBe(1);
      expect(notRetryable.stderr).toContain("only failed or canceled tasks can be retried");
      expect((await store.get(t.succeeded.id))?.status).toBe("succeeded");
    });

    it("retry --status failed requeues every match in bulk and prints the count", async () => {
      const out = await cliJson<{ changed: number }>(["retry", "--status", "failed", "--queue", "billing", ...backend.db]);
      expect(out.changed).toBe(1);
      expect((await store.get(t.failed2.id))?.status).toBe("queued");
      const none = await cli(["retry", "--status", "failed", "--queue", "billing", ...backend.db]);
      expect(none.code).toBe(0);
      expect(none.stdout).toBe("requeued 0 failed tasks (queue billing)\n");
    });

    it("purge --older-than deletes finished tasks and says how many", async () => {
      const out = await cliJson<{ changed: number }>(["purge", "--older-than", "0s", "--status", "succeeded", ...backend.db]);
      expect(out.changed).toBe(1);
      expect(await store.get(t.succeeded.id)).toBeNull();
      const keep = await cliJson<{ changed: number }>(["purge", "--older-than", "1h", ...backend.db]);
      expect(keep.changed).toBe(0);
    });

    it("migrate on an installed database applies nothing new and says its versions", async () => {
      const out = await cliJson<Record<string, unknown>>(["migrate", ...backend.db]);
      expect(out).toMatchObject({ command: "migrate", protocolVersion: 1, schemaVersion: 10 });
      expect((await cliJson<{ totals: { total: number } }>(["stats", ...backend.db])).totals.total).toBe(9);
    });

    it("dashboard serves the dashboard on 127.0.0.1 until SIGTERM", async () => {
      const child: ChildProcess = spawn(process.execPath, [BIN, "dashboard", "--port", "0", ...backend.db], { stdio: ["ignore", "pipe", "pipe"] });
      let output = "";
      child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")));
      child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")));
      const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
      const url = await new Promise<string>((resolve, reject) => {
        // Generous: the integration tier runs this file beside the 20-process fleet test, and a cold start of the CLI
        // on 2 shared cores has taken most of the old 20 s test timeout.
        const timer = setTimeout(() => reject(new Error(`no URL printed:\n${output}`)), 45_000);
        const check = (): void => {
          const m = /on (http:\/\/127\.0\.0\.1:\d+\/)/.exec(output);
          if (m) {
            clearTimeout(timer);
            resolve(m[1] as string);
          }
        };
        child.stdout?.on("data", check);
      });
      const overview = (await (await fetch(`${url}api/overview`)).json()) as { queues: Record<string, Record<string, number>>; readOnly: boolean; pushWakeups: boolean };
      expect(overview.readOnly).toBe(false);
      // On Postgres the served dashboard LISTENs, so live updates are pushed, not only polled.
      expect(overview.pushWakeups).toBe(backend.name === "Postgres");
      expect(Object.keys(overview.queues).sort()).toEqual(["billing", "crash", "jobs", "mail"]);
      // DNS rebinding guard: another Host name is refused.
      const rebound = await new Promise<number | undefined>((resolve, reject) => {
        const req = request(url, { headers: { host: "evil.example" } }, (res) => {
          res.resume();
          resolve(res.statusCode);
        });
        req.once("error", reject);
        req.end();
      });
      expect(rebound).toBe(421);
      child.kill("SIGTERM");
      // Bounded, so a dashboard that does not stop fails here with what it printed, not as a bare test timeout.
      const code = await Promise.race([exited, new Promise<string>((resolve) => setTimeout(() => resolve("still running 20 s after SIGTERM"), 20_000).unref())]);
      if (code !== 0) child.kill("SIGKILL");
      expect(code, output).toBe(0);
      expect(output).toContain("dashboard stopped");
    }, 90_000);
  });
}

describe("cairnq CLI usage", () => {
  let dir = "";
  let file = "";
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "cairnq-cli-usage-"));
    file = join(dir, "cairnq.db");
    const store = new SQLiteStore(file);
    await store.submit({ name: "x" });
    await store.close();
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("bad usage exits 2 with what to type instead", async () => {
    const db = ["--db", file];
    // Independent invocations: run them side by side.
    const [noDb, typo, status, bare, both, neither, limit, help] = await Promise.all([
      cli(["stats"]),
      cli(["stast", ...db]),
      cli(["list", "--status", "done", ...db]),
      cli(["purge", "--older-than", "7", ...db]),
      cli(["retry", newTaskId(), "--status", "failed", ...db]),
      cli(["retry", ...db]),
      cli(["list", "--limit", "0", ...db]),
      cli(["explain", "--help"]),
    ]);
    expect(noDb.code).toBe(2);
    expect(noDb.stderr).toContain("pass --db");
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain("Did you mean stats?");
    expect(status.code).toBe(2);
    expect(status.stderr).toContain("queued");
    expect(bare.code).toBe(2);
    expect(bare.stderr).toContain("--older-than 7d");
    expect(both.code).toBe(2);
    expect(both.stderr).toContain("not both");
    expect(neither.code).toBe(2);
    expect(neither.stderr).toContain("cairnq retry --status failed");
    expect(limit.code).toBe(2);
    expect(limit.stderr).toContain("from 1 to 1000");
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("Usage: cairnq explain [options] <id>");

    // With --json, a script gets one JSON document on stdout for bad usage too.
    const [badJson, noDbJson] = await Promise.all([cli(["list", "--status", "done", "--json", ...db]), cli(["stats", "--json"])]);
    for (const run of [badJson, noDbJson]) {
      expect(run.code).toBe(2);
      expect(JSON.parse(run.stdout)).toMatchObject({ error: { code: "usage", message: expect.any(String) } });
    }
    expect(JSON.parse(badJson.stdout).error.message).toContain("Allowed choices are queued");
    expect(JSON.parse(noDbJson.stdout).error.message).toContain("pass --db");
  });

  it("refuses a SQLite file that does not exist (exit 2, suggests migrate); migrate creates it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cairnq-cli-new-"));
    try {
      const file = join(dir, "new.db");
      const missing = await cli(["stats", "--db", file]);
      expect(missing.code).toBe(2);
      expect(missing.stderr).toContain("cairnq migrate --db");
      expect(existsSync(file)).toBe(false);
      const migrated = await cli(["migrate", "--json"], { env: { CAIRNQ_DB: file } });
      expect(migrated.code).toBe(0);
      expect(JSON.parse(migrated.stdout)).toMatchObject({ command: "migrate", protocolVersion: 1, schemaVersion: 10 });
      expect(existsSync(file)).toBe(true);
      const schemaOnSqlite = await cli(["stats", "--db", file, "--schema", "x"]);
      expect(schemaOnSqlite.code).toBe(2);
      expect(schemaOnSqlite.stderr).toContain("--schema applies to Postgres only");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("no command prints the help to stderr and exits 2", async () => {
    const run = await cli([]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("Commands:");
    const help = await cli(["--help"]);
    expect(help.code).toBe(0);
    for (const word of ["stats", "list", "get", "explain", "cancel", "retry", "purge", "migrate", "dashboard", "CAIRNQ_DB", "postgres://", "mysql://", "--schema", "--json", "NO_COLOR", "Exit codes: 0 ok, 1 the operation failed, 2 bad usage"]) {
      expect(help.stdout).toContain(word);
    }
  });
});

describe("cairnq migrate on Postgres", () => {
  const schemas: string[] = [];
  afterAll(async () => {
    for (const schema of schemas) await dropSchema(schema);
    await closeAdmin();
  });

  it("a --schema without CairnQ's tables is refused (exit 2, suggests migrate) and left alone; migrate creates it", async () => {
    const schema = await freshSchemaName("cairnq_cli_migrate");
    schemas.push(schema);
    const db = ["--db", pgDsn(), "--schema", schema];
    const typo = await cli(["stats", ...db]);
    expect(typo.code, typo.stderr).toBe(2);
    expect(typo.stderr).toContain(`no CairnQ tables in schema "${schema}"`);
    expect(typo.stderr).toContain(`cairnq migrate --db <url> --schema ${schema}`);
    expect(await q("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema])).toEqual([]);
    const dashboard = await cli(["dashboard", "--port", "0", ...db]);
    expect(dashboard.code).toBe(2);

    const migrated = await cliJson<Record<string, unknown>>(["migrate", ...db]);
    expect(migrated).toMatchObject({ command: "migrate", protocolVersion: 1, schemaVersion: 10 });
    expect(migrated.database).toContain(`(schema ${schema})`);
    const tables = await q<{ table_name: string }>("SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name", [schema]);
    expect(tables.map((r) => r.table_name)).toEqual(["cairnq_meta", "cairnq_migrations", "cairnq_task_keys", "cairnq_tasks"]);
    expect(await cliJson(["stats", ...db])).toEqual({ queues: {}, totals: { queued: 0, running: 0, succeeded: 0, failed: 0, canceled: 0, total: 0 } });
  });
});

describe("cairnq colours", () => {
  let dir = "";
  let file = "";
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "cairnq-cli-tty-"));
    file = join(dir, "cairnq.db");
    const store = new SQLiteStore(file);
    await store.submit({ name: "x", queue: "q" });
    await store.close();
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** Runs the bin with its stdout on a pseudo-terminal (util-linux `script`), as a person at a terminal would. */
  function onTty(args: readonly string[], env: Record<string, string | undefined>): Promise<CliRun> {
    const command = [process.execPath, BIN, ...args].map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(" ");
    return new Promise((resolve) => {
      execFile("script", ["-qec", command, "/dev/null"], { env: cliEnv({ TERM: "xterm", ...env }), timeout: 30_000 }, (err, stdout, stderr) => {
        resolve({ code: err === null ? 0 : typeof err.code === "number" ? err.code : -1, stdout, stderr });
      });
    });
  }

  it("colours status counts on a terminal, and not with NO_COLOR set or when piped", async () => {
    const tty = await onTty(["stats", "--db", file], {});
    expect(tty.code, tty.stderr).toBe(0);
    expect(tty.stdout).toContain("\u001b[36m1\u001b[0m"); // the queued count in cyan
    const noColor = await onTty(["stats", "--db", file], { NO_COLOR: "1" });
    expect(noColor.code).toBe(0);
    expect(noColor.stdout).toMatch(/QUEUE\s+QUEUED/);
    expect(noColor.stdout).not.toContain("\u001b[");
    // An empty NO_COLOR does not count (no-color.org).
    expect((await onTty(["stats", "--db", file], { NO_COLOR: "" })).stdout).toContain("\u001b[");
    const piped = await cli(["stats", "--db", file]);
    expect(piped.stdout).not.toContain("\u001b[");
  });
});
