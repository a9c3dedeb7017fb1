/**
 * Reads Prometheus text exposition (format 0.0.4) back into samples, so a
 * test asserts on values rather than on the text's layout: each sample
 * keyed `name{label="value",…}` with labels sorted, plus the `# TYPE` of
 * each family. Strict: a line it cannot read fails the test.
 */

/** Samples by `name{sorted labels}`, and each family's type. */
export interface PrometheusSamples {
  readonly samples: Map<string, number>;
  readonly types: Map<string, string>;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?\s*/gy;

/** Parses `text`; throws on a line that is neither a comment nor a sample. */
export function parsePrometheus(text: string): PrometheusSamples {
  const samples = new Map<string, number>();
  const types = new Map<string, string>();
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    if (line.startsWith("#")) {
      const type = /^# TYPE (\S+) (\S+)$/.exec(line);
      if (type !== null) types.set(type[1] as string, type[2] as string);
      continue;
    }
    const match = SAMPLE.exec(line);
    if (match === null) throw new Error(`not a Prometheus sample line: ${JSON.stringify(line)}`);
    const [, name, labelText = "", value] = match as unknown as [string, string, string | undefined, string];
    const labels: [string, string][] = [];
    LABEL.lastIndex = 0;
    while (LABEL.lastIndex < labelText.length) {
      const label = LABEL.exec(labelText);
      if (label === null) throw new Error(`unreadable labels in ${JSON.stringify(line)}`);
      labels.push([label[1] as string, (label[2] as string).replace(/\\(.)/g, (_, c: string) => (c === "n" ? "\n" : c))]);
    }
    labels.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const key = labels.length === 0 ? name : `${name}{${labels.map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(",")}}`;
    samples.set(key, Number(value));
  }
  return { samples, types };
}
