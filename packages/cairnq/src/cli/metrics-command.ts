/**
 * `cairnq metrics`: prints the Prometheus text the dashboard serves at
 * `GET <mount>/metrics` — for a cron job writing a node-exporter textfile,
 * or a look from a shell.
 */
import type { CairnQ } from "@cairnq/client";
import type { CommandOutput } from "./commands.js";

/** `cairnq metrics`: one aggregate read of the queues, as Prometheus text (`--json`: the text in a document). */
export async function metricsCommand(client: CairnQ): Promise<CommandOutput> {
  // Loaded here so that only this command (and `dashboard`) loads the dashboard package.
  const { prometheusText } = await import("@cairnq/dashboard");
  const scrape = await prometheusText(client.store);
  return { json: { contentType: scrape.contentType, text: scrape.text }, text: scrape.text.trimEnd() };
}
