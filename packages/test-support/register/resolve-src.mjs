import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");

/** `@cairnq/<name>[/adapter|/sdk]` → its TypeScript source; the kit lives outside `packages/`. */
export async function resolve(specifier, context, next) {
  const match = /^@cairnq\/([a-z-]+)(?:\/(adapter|sdk))?$/.exec(specifier);
  if (match === null) return next(specifier, context);
  const dir = match[1] === "conformance" ? path.join(root, "conformance") : path.join(root, "packages", match[1]);
  return next(pathToFileURL(path.join(dir, `src/${match[2] ?? "index"}.ts`)).href, context);
}
