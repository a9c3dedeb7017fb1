/**
 * Child processes for the multi-process tests: fork a fixture script (which
 * imports the BUILT `cairnq`), collect its IPC messages and stderr, wait for
 * a message or for its exit, and make sure none outlives its test.
 */
import { fork } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** A message a fixture sends with `tell(...)`: always a `type` and its `pid`. */
export interface FixtureMessage {
  type: string;
  pid: number;
  [field: string]: unknown;
}

/** How a child ended. */
export interface ChildExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export const FIXTURES = fileURLToPath(new URL("../fixtures/", import.meta.url));
const BUILT_ENTRY = fileURLToPath(new URL("../../dist/index.js", import.meta.url));

/**
 * Fixtures run the built package: without a build they would fail in a way
 * that hides the cause, so say what is missing instead.
 */
export function assertBuilt(): void {
  if (!existsSync(BUILT_ENTRY)) {
    throw new Error(
      `${BUILT_ENTRY} is missing: the multi-process tests run fixture processes against the built "cairnq". ` +
        "Run `pnpm exec turbo run build --filter=cairnq... --ui=stream` from the repository root (the root `pnpm test` builds first).",
    );
  }
}

/** One forked fixture process. */
export class Child {
  readonly messages: FixtureMessage[] = [];
  readonly exited: Promise<ChildExit>;
  private stderrText = "";
  private stdoutText = "";
  private exit: ChildExit | null = null;
  private readonly listeners = new Set<() => void>();

  constructor(
    readonly label: string,
    readonly proc: ChildProcess,
  ) {
    proc.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
      this.stderrText += chunk;
    });
    proc.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
      this.stdoutText += chunk;
    });
    proc.on("message", (message: FixtureMessage) => {
      this.messages.push(message);
      this.notify();
    });
    this.exited = new Promise((resolve) => {
      proc.once("exit", (code, signal) => {
        this.exit = { code, signal };
        this.notify();
        resolve(this.exit);
      });
    });
  }

  get pid(): number {
    if (this.proc.pid === undefined) throw new Error(`${this.label}: the process did not start`);
    return this.proc.pid;
  }

  get alive(): boolean {
    return this.exit === null;
  }

  get stderr(): string {
    return this.stderrText;
  }

  get stdout(): string {
    return this.stdoutText;
  }

  /** The messages of one type, in arrival order. */
  of(type: string): FixtureMessage[] {
    return this.messages.filter((message) => message.type === type);
  }

  /**
   * Resolves with `probe`'s first non-undefined answer, asked now and after
   * every message; rejects if the process exits first or `timeoutMs` passes
   * (a guard against a hung test, not a measurement).
   */
  async waitUntil<T>(what: string, probe: (messages: readonly FixtureMessage[]) => T | undefined, timeoutMs = 30_000): Promise<T> {
    return new Promise((resolve, reject) => {
      const check = (): void => {
        const answer = probe(this.messages);
        if (answer !== undefined) finish(() => resolve(answer));
        else if (this.exit) finish(() => reject(new Error(`${this.label} exited (${describeExit(this.exit)}) before ${what}${this.tail()}`)));
      };
      const timer = setTimeout(() => finish(() => reject(new Error(`${this.label}: no ${what} within ${timeoutMs}ms${this.tail()}`))), timeoutMs);
      const finish = (settle: () => void): void => {
        clearTimeout(timer);
        this.listeners.delete(check);
        settle();
      };
      this.listeners.add(check);
      check();
    });
  }

  /** Waits for the first message of `type` (received already or to come). */
  async next(type: string, timeoutMs?: number): Promise<FixtureMessage> {
    return this.waitUntil(`a '${type}' message`, (messages) => messages.find((message) => message.type === type), timeoutMs);
  }

  /** Resolves with the exit, or rejects after `timeoutMs` (the process is left to `Children.reap`). */
  async exitWithin(timeoutMs: number): Promise<ChildExit> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${this.label} (pid ${this.pid}) did not exit within ${timeoutMs}ms${this.tail()}`)), timeoutMs);
    });
    try {
      return await Promise.race([this.exited, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** The end of stderr, for error messages. */
  tail(): string {
    const text = this.stderrText.trim();
    return text ? `\n--- ${this.label} stderr ---\n${text.slice(-2000)}` : "";
  }

  private notify(): void {
    for (const listener of [...this.listeners]) listener();
  }
}

export function describeExit(exit: ChildExit | null): string {
  if (!exit) return "still running";
  return exit.signal ? `signal ${exit.signal}` : `code ${exit.code}`;
}

/**
 * The processes a test started. `reap()` (call it in `afterEach`) SIGKILLs
 * any still running, waits until each has exited and fails if one would not.
 */
export class Children {
  private readonly all: Child[] = [];

  /** Forks `fixtures/<script>` with `args`, an IPC channel and piped output. */
  spawn(label: string, script: string, args: string[]): Child {
    assertBuilt();
    const child = fork(`${FIXTURES}${script}`, args, {
      cwd: FIXTURES,
      // The test runner's own flags (loaders, inspector) are no business of a fixture.
      execArgv: [],
      stdio: ["ignore", "pipe", "pipe", "ipc"],
    });
    const wrapped = new Child(label, child);
    this.all.push(wrapped);
    return wrapped;
  }

  /** SIGTERM, then the exit: a worker fixture drains and closes through `serve()`. */
  async stop(child: Child, timeoutMs = 20_000): Promise<ChildExit> {
    if (child.alive) child.proc.kill("SIGTERM");
    return child.exitWithin(timeoutMs);
  }

  async reap(): Promise<void> {
    const running = this.all.filter((child) => child.alive);
    for (const child of running) child.proc.kill("SIGKILL");
    const stuck: string[] = [];
    await Promise.all(
      running.map(async (child) => {
        try {
          await child.exitWithin(10_000);
        } catch {
          stuck.push(`${child.label} (pid ${child.pid})`);
        }
      }),
    );
    this.all.length = 0;
    if (stuck.length > 0) throw new Error(`processes survived SIGKILL: ${stuck.join(", ")}`);
  }
}
