// Stamps store calls on the shared clock for the call timelines (bench/call-timeline.mjs on SQLite,
// bench/call-timeline-pg.mjs on Postgres): each wrapped method pushes [name, start, end] into `log`.

/** Milliseconds on a clock every process of this host shares (performance.timeOrigin + now). */
export const sharedNow = () => performance.timeOrigin + performance.now();

/**
 * Wraps `names` on `StoreClass`'s prototype chain so every call is stamped into `log`.
 *
 * @example stampMethods(SQLiteStore, ["claim", "complete"], log);
 */
export function stampMethods(StoreClass, names, log) {
  for (const name of names) {
    let proto = StoreClass.prototype;
    let fn;
    while (proto !== null && (fn = Object.getOwnPropertyDescriptor(proto, name)?.value) === undefined) proto = Object.getPrototypeOf(proto);
    if (fn === undefined) throw new Error(`${StoreClass.name} has no ${name}`);
    StoreClass.prototype[name] = async function stamped(...args) {
      const started = sharedNow();
      try {
        return await fn.apply(this, args);
      } finally {
        log.push([name, started, sharedNow()]);
      }
    };
  }
}
