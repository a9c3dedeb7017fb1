/**
 * Loading a database driver the application installs itself.
 *
 * The stores list their driver (`better-sqlite3`, `pg`) as an optional peer
 * dependency rather than a dependency, so `npm install cairnq pg` never
 * downloads or compiles the SQLite addon and the app's own `pg` is the one
 * the store uses. The price is that the driver may be absent: this loader
 * turns that into an error that says which package to install, instead of
 * Node's bare "Cannot find module".
 */
import { createRequire } from "node:module";
import { CairnQError } from "@cairnq/protocol";

/** What {@link loadDriver} needs to find the driver and to explain its absence. */
export interface DriverSpec {
  /** The driver's npm name, e.g. `"better-sqlite3"`. */
  module: string;
  /** The store package that needs it, e.g. `"@cairnq/store-sqlite"`. */
  requiredBy: string;
  /** What the driver is for, in the message, e.g. `"SQLite"`. */
  backend: string;
  /** `import.meta.url` of the calling module: the driver resolves from the store's own location, as an import would. */
  from: string;
}

/**
 * Requires `spec.module` as seen from `spec.from`, or throws a fatal
 * {@link CairnQError} that says how to install it.
 *
 * Two failures are told apart because their fixes differ: the package is
 * not installed at all (install it), or it is installed but does not load —
 * for a native addon usually a build for another Node version (rebuild it).
 *
 * @example
 * ```ts
 * const Database = loadDriver<typeof import("better-sqlite3")>({
 *   module: "better-sqlite3", requiredBy: "@cairnq/store-sqlite", backend: "SQLite", from: import.meta.url,
 * });
 * ```
 */
export function loadDriver<T>(spec: DriverSpec): T {
  const require = createRequire(spec.from);
  try {
    require.resolve(spec.module);
  } catch (err) {
    throw new CairnQError(
      `${spec.requiredBy} needs the '${spec.module}' driver to open a ${spec.backend} database, and it is not installed: ` +
        `CairnQ leaves the driver to the application so an install pulls in only the database it uses. ` +
        `Install it next to cairnq: npm install ${spec.module}`,
      { cause: err, fatal: true },
    );
  }
  try {
    return require(spec.module) as T;
  } catch (err) {
    throw new CairnQError(
      `${spec.requiredBy} found the '${spec.module}' driver but could not load it (${(err as Error).message}); ` +
        `reinstall or rebuild it for this Node ${process.version}: npm rebuild ${spec.module}`,
      { cause: err, fatal: true },
    );
  }
}
