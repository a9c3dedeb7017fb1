/** Bad usage of the `cairnq` command: exit code 2, with what to type instead. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}

/** The operation ran and could not do what was asked (not found, wrong status, database error): exit code 1. */
export class OperationFailed extends Error {
  override readonly name = "OperationFailed";

  constructor(
    message: string,
    /** A stable word for scripts (`not_found`, `not_retryable`, …). */
    readonly code: string,
  ) {
    super(message);
  }
}
