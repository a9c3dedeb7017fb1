/**
 * The `cairnq` command line: commander parses, the commands in
 * `commands.ts` act, and {@link runCli} turns the outcome into an exit code
 * (0 ok, 1 the operation failed, 2 bad usage; main.ts ends with 141 when stdout closes early).
 */
import type { CairnQ } from "@cairnq/client";
import type { TaskStatus, TerminalStatus } from "@cairnq/protocol";
import { InvalidArgument, MAX_DELAY_MS, RETRYABLE_STATUSES, STATUSES, TERMINAL_STATUSES } from "@cairnq/protocol";
import { Command, CommanderError, InvalidArgumentError, Option } from "commander";
import type { CommandOutput, TaskFilter } from "./commands.js";
import {
  cancelCommand,
  explainCommand,
  getCommand,
  listCommand,
  migrateCommand,
  purgeCommand,
  retryManyCommand,
  retryOneCommand,
  groupStatsCommand,
  statsCommand,
} from "./commands.js";
import type { DatabaseTarget } from "./database.js";
import { openClient, requireInstalled, resolveDatabase } from "./database.js";
import { parseDuration } from "./duration.js";
import { allowedHostValue } from "./allowed-host.js";
import type { CliIo } from "./output.js";
import { json } from "./output.js";
import { metricsCommand } from "./metrics-command.js";
import { OperationFailed, UsageError } from "./usage-error.js";

/** How many groups `stats --by-group` prints without `--limit`. */
const GROUP_STATS_LIMIT = 50;

/** Exit codes of the `cairnq` command. */
export const EXIT = { ok: 0, failed: 1, usage: 2 } as const;

interface DbOptions {
  db?: string;
  schema?: string;
  json?: boolean;
}

interface FilterOptions extends DbOptions {
  status?: TaskStatus;
  queue?: string;
  name?: string;
  correlationId?: string;
}

function withDb(command: Command): Command {
  return command
    .option("--db <database>", "SQLite file, postgres:// or mysql:// URL (default: $CAIRNQ_DB)")
    .option("--schema <schema>", "Postgres schema holding CairnQ's tables")
    .option("--json", "print one JSON document instead of text");
}

function positiveInt(max: number) {
  return (value: string): number => {
    const n = Number(value);
    if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < 1 || n > max) {
      throw new InvalidArgumentError(`expected a whole number from 1 to ${max}, for example 50`);
    }
    return n;
  };
}

function port(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n > 65535) throw new InvalidArgumentError("expected a port number from 0 to 65535 (0 picks a free port), for example 4000");
  return n;
}

function allowedHost(value: string, previous: readonly string[]): string[] {
  const name = allowedHostValue(value);
  if (name === null) throw new InvalidArgumentError("expected a host name or address as a Host header carries it, optionally with :port, for example queue.internal or queue.internal:4000");
  return [...previous, name];
}

function statusOption(statuses: readonly string[], description: string): Option {
  return new Option("--status <status>", description).choices(statuses);
}

function filterOf(options: FilterOptions): TaskFilter {
  const filter: TaskFilter = {};
  if (options.status !== undefined) filter.status = options.status;
  if (options.queue !== undefined) filter.queue = options.queue;
  if (options.name !== undefined) filter.name = options.name;
  if (options.correlationId !== undefined) filter.correlationId = options.correlationId;
  return filter;
}

const EXAMPLES = `
Every command takes --db <sqlite file | postgres:// URL | mysql:// URL> (or the CAIRNQ_DB
environment variable), --schema <schema> on Postgres, and --json for one JSON
document instead of text. Colours only on a terminal; NO_COLOR turns them off.
Only migrate creates a database (or a schema's tables).
Run cairnq <command> --help for its options.

Examples:
  cairnq stats --db ./cairnq.db
  cairnq list --db ./cairnq.db --status failed --queue emails
  cairnq explain task_01JB8ZK3M2Q4W5E6R7T8Y9V0XP --db postgres://app@localhost/app
  cairnq retry --status failed --queue emails --db ./cairnq.db
  cairnq purge --older-than 7d --status succeeded --db ./cairnq.db
  cairnq dashboard --db ./cairnq.db --port 4000
  cairnq metrics --db ./cairnq.db

Exit codes: 0 ok, 1 the operation failed, 2 bad usage, 141 stdout closed early (| head).`;

/**
 * Runs the `cairnq` command line with `argv` (the arguments after the
 * program name) and resolves with its exit code. Output goes through `io`.
 *
 * @example
 * ```ts
 * process.exitCode = await runCli(process.argv.slice(2), nodeIo());
 * ```
 */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  let asJson = argv.includes("--json");
  const program = new Command("cairnq")
    .description("Inspect and operate a CairnQ database (SQLite file, Postgres or MySQL).")
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.out(s), writeErr: (s) => io.err(s) })
    .showSuggestionAfterError()
    .showHelpAfterError("(add --help for usage)")
    .addHelpText("after", EXAMPLES);

  /** Opens the database for one command, runs it, prints, closes. */
  const run = async (options: DbOptions, open: { create?: boolean }, body: (client: CairnQ, target: DatabaseTarget) => Promise<CommandOutput>): Promise<void> => {
    asJson = options.json === true;
    const target = resolveDatabase(options.db, options.schema, io.env);
    if (open.create !== true) await requireInstalled(target);
    const client = openClient(target, { create: open.create === true, listen: false });
    try {
      const output = await body(client, target);
      io.out(asJson ? json(output.json) : `${output.text}\n`);
    } finally {
      await client.close();
    }
  };

  withDb(program.command("stats"))
    .description("task counts per queue and status")
    .option("--queue <queue>", "only this queue (shown even when empty)")
    .option("--by-group <name>", "queued and running tasks of this task name per group (most queued first)")
    .option("--limit <n>", `with --by-group: at most this many groups (1–1000, default ${GROUP_STATS_LIMIT})`, positiveInt(1000))
    .action((options: FilterOptions & { byGroup?: string; limit?: number }) => {
      // Refused rather than ignored: the group counts are read across every queue (the store's group read
      // takes no queue), and the queue counts are never cut, so either would print something else than asked.
      if (options.byGroup === undefined) {
        if (options.limit !== undefined) {
          throw new UsageError(`stats --limit caps the groups of --by-group and takes nothing else: cairnq stats --by-group <task name> --limit ${options.limit}, or cairnq stats for every queue`);
        }
        return run(options, {}, (client) => statsCommand(client, io, options.queue));
      }
      if (options.queue !== undefined) {
        throw new UsageError(
          `stats --by-group counts the groups of '${options.byGroup}' across every queue, so it takes no --queue: cairnq stats --by-group ${options.byGroup}, or cairnq stats --queue ${options.queue} for that queue's counts`,
        );
      }
      const byGroup = options.byGroup;
      return run(options, {}, (client) => groupStatsCommand(client, io, byGroup, options.limit ?? GROUP_STATS_LIMIT));
    });

  withDb(program.command("list"))
    .description("tasks, newest first (by id); page with --before")
    .addOption(statusOption(STATUSES, "only tasks with this status"))
    .option("--queue <queue>", "only this queue")
    .option("--name <name>", "only tasks with this name")
    .option("--correlation-id <id>", "only tasks with this correlation id")
    .option("--limit <n>", "at most this many tasks (1–1000)", positiveInt(1000), 50)
    .option("--before <id>", "the page after this task id (the last id of the previous page)")
    .action((options: FilterOptions & { limit: number; before?: string }) =>
      run(options, {}, (client) => listCommand(client, io, filterOf(options), options.limit, options.before)),
    );

  /** `cairnq <name> <id>`: a command on one task, by id. */
  const taskCommand = (name: string, description: string, command: (client: CairnQ, io: CliIo, id: string) => Promise<CommandOutput>): void => {
    withDb(program.command(name))
      .description(description)
      .argument("<id>", "task id (task_…)")
      .action((id: string, options: DbOptions) => run(options, {}, (client) => command(client, io, id)));
  };
  taskCommand("get", "a task's whole row: payload, progress, result, error, timestamps", getCommand);
  taskCommand("explain", "why a task is where it is, in one paragraph", explainCommand);
  taskCommand("cancel", "cancel a queued task, or ask a running one to stop", cancelCommand);

  withDb(program.command("retry"))
    .description("requeue a failed or canceled task, or every one matching --status failed|canceled [--queue] [--name]")
    .argument("[id]", "task id (task_…); omit it to retry in bulk by filter")
    .addOption(statusOption(RETRYABLE_STATUSES, "bulk: retry every task with this status"))
    .option("--queue <queue>", "bulk: only this queue")
    .option("--name <name>", "bulk: only tasks with this name")
    .option("--reset-attempt", "count attempts from 0 again")
    .action((id: string | undefined, options: FilterOptions & { resetAttempt?: boolean }) => {
      const filter = filterOf(options);
      if (id !== undefined) {
        if (Object.keys(filter).length > 0) {
          throw new UsageError(`retry takes a task id or a filter, not both: cairnq retry ${id}, or cairnq retry --status failed [--queue q] [--name n]`);
        }
        return run(options, {}, (client) => retryOneCommand(client, io, id, options.resetAttempt === true));
      }
      if (filter.status === undefined) {
        throw new UsageError(
          "retry needs a task id or --status: cairnq retry task_… , or cairnq retry --status failed [--queue q] [--name n] to requeue every failed task",
        );
      }
      const status = filter.status as Exclude<TerminalStatus, "succeeded">;
      return run(options, {}, (client) => retryManyCommand(client, io, { ...filter, status }, options.resetAttempt === true));
    });

  withDb(program.command("purge"))
    .description("delete finished tasks completed more than --older-than ago")
    .requiredOption("--older-than <duration>", "a duration: 30s, 15m, 12h, 7d, 1h30m (0s deletes every finished task)")
    .addOption(statusOption(TERMINAL_STATUSES, "only tasks with this terminal status"))
    .option("--queue <queue>", "only this queue")
    .option("--name <name>", "only tasks with this name")
    .action((options: FilterOptions & { olderThan: string }) => {
      const olderThanMs = parseDuration(options.olderThan, "--older-than");
      // Checked here so the message names the flag the user typed, not the client's olderThanMs.
      if (olderThanMs > MAX_DELAY_MS) {
        throw new UsageError(`--older-than is at most 36500d (MAX_DELAY_MS, ${MAX_DELAY_MS}ms: 100 years), got ${JSON.stringify(options.olderThan)}`);
      }
      const filter = filterOf(options) as { status?: TerminalStatus; queue?: string; name?: string };
      return run(options, {}, (client) => purgeCommand(client, io, { ...filter, olderThanMs }));
    });

  withDb(program.command("metrics"))
    .description("Prometheus text: cairnq_tasks{queue,status}, cairnq_oldest_queued_age_seconds{queue} (as GET <dashboard>/metrics); --json: { contentType, text }")
    .action((options: DbOptions) => run(options, {}, (client) => metricsCommand(client, io)));

  withDb(program.command("migrate"))
    .description("create the database or bring its schema up to date (protocol v1)")
    .action((options: DbOptions) => run(options, { create: true }, (client, target) => migrateCommand(client, io, target.description)));

  withDb(program.command("dashboard"))
    .description("serve the web dashboard (default http://127.0.0.1:4000/) until Ctrl-C")
    .option("--port <port>", "port to listen on (0 picks a free one)", port, 4000)
    .option("--host <host>", "address to listen on; keep 127.0.0.1 unless a proxy with authentication is in front", "127.0.0.1")
    .option("--read-only", "no retry or cancel buttons; mutations are refused")
    .option("--allowed-host <name>", "a Host name (optionally name:port) to answer; repeat for each name the dashboard is reached by; others get 421", allowedHost, [])
    .action(async (options: DbOptions & { port: number; host: string; readOnly?: boolean; allowedHost: string[] }) => {
      const target = resolveDatabase(options.db, options.schema, io.env);
      await requireInstalled(target);
      // Loaded here so that only this command loads the dashboard (which reads its page's files when imported).
      const { serveDashboard } = await import("./dashboard-command.js");
      const client = openClient(target, { create: false, listen: true });
      await serveDashboard(client, io, {
        port: options.port,
        host: options.host,
        readOnly: options.readOnly === true,
        description: target.description,
        allowedHosts: options.allowedHost,
      });
    });

  try {
    if (argv.length === 0) {
      program.outputHelp({ error: true });
      return EXIT.usage;
    }
    await program.parseAsync([...argv], { from: "user" });
    return EXIT.ok;
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version "fail" with exit code 0; everything else commander rejects is bad usage
      // (commander has printed its message to stderr already).
      if (err.exitCode === 0) return EXIT.ok;
      if (asJson) io.out(json({ error: { code: "usage", message: err.message.replace(/^error: /, "") } }));
      return EXIT.usage;
    }
    // InvalidArgument: the store refused an option's value (an empty --queue, say); its message names it.
    if (err instanceof UsageError || err instanceof InvalidArgument) {
      if (asJson) io.out(json({ error: { code: "usage", message: err.message } }));
      io.err(`error: ${err.message}\n`);
      return EXIT.usage;
    }
    const failure = describeFailure(err);
    if (asJson) io.out(json({ error: failure }));
    io.err(`error: ${failure.message}\n`);
    return EXIT.failed;
  }
}

function describeFailure(err: unknown): { code: string; message: string } {
  if (err instanceof OperationFailed) return { code: err.code, message: err.message };
  if (err instanceof Error) return { code: err.name, message: err.message };
  return { code: "Error", message: String(err) };
}
