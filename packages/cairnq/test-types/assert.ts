/**
 * Type assertions for the files of this directory, which are compiled (never
 * run) by test/integration/types.test.ts with TypeScript 5.9 and 7 against the BUILT
 * declarations of `cairnq`: what an application sees.
 */

/** `true` when `A` and `B` are the same type (not merely assignable). */
export type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

/** Compiles only when `T` is `true`: `expectType<Equal<typeof x, Task<P, R>>>()`. */
export function expectType<T extends true>(): T | void {}

/** A value of type `T` for type tests (never called). */
export declare function value<T>(): T;
