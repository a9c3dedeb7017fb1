/**
 * `cairnq metrics`: prints the Prometheus text the dashboard serves at
 * `GET <mount>/metrics` — for a cron job writing a node-exporter textfile,
 * or a look from a shell.
 */
import type { CairnQ } from "@cairnq/client";
import type { CommandOutput } from "./commands.js";
import type { CliIo } from "./output.js";
import { printable } from "./output.js";

/**
 * `cairnq metrics`: one aggregate read of the queues, as Prometheus text (`--json`: the text in a document).
 * Label values are stored queue names, which the exposition format carries raw but for `\`, `"` and line
 * breaks: piped (a textfile, a scraper) the text is printed as it is, byte for byte; on a terminal its
 * control and bidi characters are written out as the other commands write them, so a queue name cannot set
 * the window title or clear the screen.
 */
export async function metricsCommand(client: CairnQ, io: CliIo): Promise<CommandOutput> {
  // Loaded here so that only this command (and `dashboard`) loads the dashboard package.
  const { prometheusText } = await import("@cairnq/dashboard");
  const scrape = await prometheusText(client.store);
  const text = scrape.text.trimEnd();
  // `lines`: the text's own line breaks and the format's backslash escapes stay as they are.
  return { json: { contentType: scrape.contentType, text: scrape.text }, text: io.tty ? printable(text, "lines") : text };
}
