/**
 * What survives JSON, at the type level: payloads, results, progress and
 * error details are stored as JSON text (§2.2), so a `Date` comes back as a
 * string, a `Map` as `{}`, and a function or a symbol not at all. A task
 * type that promises one of those would compile and then lie.
 */

/** Countdown for the recursion: deeper than this is assumed fine (and keeps recursive types cheap). */
type Countdown = [never, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9];

/**
 * `never` when values of type `T` read back from JSON as the same type;
 * otherwise a message naming the first offending path, e.g.
 * `"payload.when is a Date, which JSON turns into a string: send an ISO string or epoch ms"`.
 * `unknown` and `any` are not checked (nothing is promised).
 *
 * @example
 * ```ts
 * type Ok = JsonProblem<{ to: string; tags?: string[] }>; // never
 * type Bad = JsonProblem<{ at: Date }, "payload">; // "payload.at is a Date, …"
 * ```
 */
export type JsonProblem<T, Path extends string = "value", Depth extends number = 10> = [Depth] extends [never]
  ? never
  : 0 extends 1 & T
    ? never
    : unknown extends T
      ? never
      : T extends string | number | boolean | null | undefined
        ? never
        : T extends bigint
          ? `${Path} is a bigint, which JSON cannot encode: send it as a string`
          : T extends symbol
            ? `${Path} is a symbol, which JSON drops`
            : T extends (...args: never[]) => unknown
              ? `${Path} is a function, which JSON drops`
              : T extends Date
                ? `${Path} is a Date, which JSON turns into a string: send an ISO string or epoch ms`
                : T extends ReadonlyMap<unknown, unknown> | ReadonlySet<unknown> | WeakMap<object, unknown> | WeakSet<object>
                  ? `${Path} is a Map or Set, which JSON turns into {}: send an array or a plain object`
                  : T extends readonly (infer E)[]
                    ? JsonProblem<E, `${Path}[number]`, Countdown[Depth]>
                    : T extends object
                      ? { [K in keyof T]-?: K extends string ? JsonProblem<T[K], `${Path}.${K}`, Countdown[Depth]> : never }[keyof T]
                      : never;
