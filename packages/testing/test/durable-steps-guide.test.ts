/**
 * The worked example of docs/durable-steps.md, run: the block between the
 * markers below is the guide's code verbatim (the first test checks that),
 * and the second test runs it on a test queue — a crash after the charge, a
 * confirmation sent from outside, a day's sleep and a fan-out of emails, in
 * milliseconds — on the in-memory store and on SQLite.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { Worker } from "@cairnq/worker";
import { createTestQueue } from "@cairnq/testing";

const GUIDE = readFileSync(new URL("../../../docs/durable-steps.md", import.meta.url), "utf8");
const SELF = readFileSync(new URL(import.meta.url), "utf8");

/** What the example's handler calls outside CairnQ: a payment API that honours idempotency keys, and a mailer. */
function fakeWorld() {
  const charges = new Map<string, { amount: number }>();
  const sent: string[] = [];
  let crashOnce = true;
  return {
    charges,
    sent,
    payments: {
      async charge(orderId: string, amount: number, options: { idempotencyKey: string }) {
        // The same key twice is one charge, as payment APIs promise.
        if (!charges.has(options.idempotencyKey)) charges.set(options.idempotencyKey, { amount });
        return { chargeId: `ch_${orderId}`, amount };
      },
    },
    mailer: {
      async send(to: string, template: string) {
        sent.push(`${template} → ${to}`);
      },
    },
    /** The first time only: the process "crashes" right after the charge was recorded. */
    maybeCrash() {
      if (crashOnce) {
        crashOnce = false;
        throw new Error("the worker process died here");
      }
    },
  };
}

function register(worker: Worker, world: ReturnType<typeof fakeWorld>): void {
  const { payments, mailer } = world;
  // guide:begin
  worker.task("order.fulfil", async (ctx, order: { id: string; amount: number; email: string }) => {
    // Runs once per order: a resumed or retried handler gets the recorded charge back.
    const charge = await ctx.step("charge", ({ idempotencyKey }) =>
      payments.charge(order.id, order.amount, { idempotencyKey }),
    );
    world.maybeCrash();

    // Parks until the warehouse calls `cairnq.send(taskId, "shipped", { tracking })`, at most 3 days.
    const shipped = await ctx.waitFor<{ tracking: string }>("shipped", { timeoutMs: 3 * 86_400_000 });
    if (shipped === null) return { charge, status: "never shipped" };

    // A day later, ask for a review; two emails as child tasks, awaited together.
    await ctx.sleep("review delay", 86_400_000);
    const emails = [
      await ctx.spawn("review email", "email.send", { to: order.email, template: "review" }),
      await ctx.spawn("receipt email", "email.send", { to: order.email, template: "receipt" }),
    ];
    const sent = await ctx.join("emails", emails);
    return { charge, tracking: shipped.tracking, emails: sent.map((row) => row?.status) };
  });

  worker.task("email.send", async (ctx, { to, template }: { to: string; template: string }) => {
    await ctx.step("send", () => mailer.send(to, template));
  });
  // guide:end
}

it("the guide's example is this test's code", () => {
  const marker = "<!-- example: packages/testing/test/durable-steps-guide.test.ts -->\n```ts\n";
  const start = GUIDE.indexOf(marker);
  expect(start).toBeGreaterThanOrEqual(0);
  const body = GUIDE.slice(start + marker.length);
  const block = body.slice(0, body.indexOf("```\n"));
  const begin = SELF.indexOf("// guide:begin\n");
  const end = SELF.indexOf("  // guide:end");
  const own = SELF.slice(begin + "// guide:begin\n".length, end)
    .split("\n")
    .map((line) => line.replace(/^ {2}/, ""))
    .join("\n");
  expect(block).toBe(own);
});

describe.each(["memory", "sqlite"] as const)("the guide's example on the %s store", (store) => {
  it("charges once across a crash, waits for the warehouse, sleeps a day, sends two emails, in milliseconds", async () => {
    const queue = await createTestQueue({ store });
    try {
      const world = fakeWorld();
      register(queue.worker({ retryBackoffMs: 1000 }), world);
      const task = await queue.client.submit("order.fulfil", { id: "o-1", amount: 4200, email: "ana@example.com" });
      await queue.drain();
      // The first attempt died after the charge; the retry replays it and parks on the wait.
      await queue.advance(1000);
      expect(await queue.client.get(task.id)).toMatchObject({ status: "queued", attempt: 1 });
      expect((await queue.client.send(task.id, "shipped", { tracking: "TRK-9" })).woke).toBe(true);
      await queue.drain();
      await queue.advance(86_400_000);
      await queue.drain();
      const row = await queue.client.get(task.id);
      expect(row).toMatchObject({ status: "succeeded", result: { charge: { chargeId: "ch_o-1", amount: 4200 }, tracking: "TRK-9", emails: ["succeeded", "succeeded"] } });
      expect(world.charges.size).toBe(1);
      expect(world.sent.sort()).toEqual(["receipt → ana@example.com", "review → ana@example.com"]);
      expect((await queue.client.steps(task.id)).map((s) => `${s.name}:${s.kind}:${s.status}`)).toEqual([
        "charge:step:done",
        "shipped:wait:done",
        "review delay:sleep:done",
        "review email:spawn:done",
        "receipt email:spawn:done",
        "emails:join:done",
      ]);
    } finally {
      await queue.close();
    }
  });
});
