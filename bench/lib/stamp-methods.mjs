// Wraps store methods for the bench's diagnostics: `stampMethods` stamps store calls on the shared clock for
// the call timelines (bench/call-timeline.mjs on SQLite, bench/call-timeline-pg.mjs on Postgres), each wrapped
// method pushing [name, start, end] into `log`; `aroundMethod` is the wrapping itself, for the preloads that
// count claims (lib/claim-count.mjs, lib/claim-pacing.mjs); `sqliteStatementPrototype` is better-sqlite3's
// statement prototype, whose runs the SQL traces and counts wrap.
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);

/** Milliseconds on a clock every process of this host shares (performance.timeOrigin + now). */
export const sharedNow = () => performance.timeOrigin + performance.now();

/**
 * Replaces `name` on `StoreClass.prototype` with `around(original, thisArg, args)`, where `original` is the method
 * as found on the prototype chain.
 *
 * @example aroundMethod(SQLiteStore, "claim", (claim, store, args) => claim.apply(store, args));
 */
export function aroundMethod(StoreClass, name, around) {
  let proto = StoreClass.prototype;
  let fn;
  while (proto !== null && (fn = Object.getOwnPropertyDescriptor(proto, name)?.value) === undefined) proto = Object.getPrototypeOf(proto);
  if (fn === undefined) throw new Error(`${StoreClass.name} has no ${name}`);
  StoreClass.prototype[name] = function wrapped(...args) {
    return around(fn, this, args);
  };
}

/**
 * Wraps `names` on `StoreClass`'s prototype chain so every call is stamped into `log`.
 *
 * @example stampMethods(SQLiteStore, ["claim", "complete"], log);
 */
export function stampMethods(StoreClass, names, log) {
  for (const name of names) {
    aroundMethod(StoreClass, name, async (fn, store, args) => {
      const started = sharedNow();
      try {
        return await fn.apply(store, args);
      } finally {
        log.push([name, started, sharedNow()]);
      }
    });
  }
}

/** better-sqlite3's statement prototype (`all`, `run`, `get`, `iterate`), from a statement of a throwaway in-memory database. */
export function sqliteStatementPrototype() {
  const Database = require("better-sqlite3");
  const probe = new Database(":memory:");
  try {
    return Object.getPrototypeOf(probe.prepare("SELECT 1"));
  } finally {
    probe.close();
  }
}
