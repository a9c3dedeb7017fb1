import type { Params } from "@cairnq/protocol/adapter";
import type { QueryResult } from "kysely";
import type { StatementCompiler, StatementTemplate } from "./compiler.js";
import type { StoreDialect } from "./dialect.js";
import type { AnyKysely, QueryRunner, Row } from "./executor.js";

/**
 * How the store's operation modules run a compiled template: a read, an
 * autocommit write (both through the dialect's executor, the statement
 * materialized when it runs), or a statement inside an open transaction.
 * One per store, shared by every module.
 */
export class StoreStatements {
  /**
   * @param db - The store's Kysely instance.
   * @param dialect - The store's dialect.
   * @param compiler - The compiled-statement cache of that dialect.
   */
  constructor(
    readonly db: AnyKysely,
    readonly dialect: StoreDialect,
    readonly compiler: StatementCompiler,
  ) {}

  /** `template` with `params` as one read-only statement. */
  read(template: StatementTemplate, params: Params): Promise<QueryResult<Row>> {
    const statement = this.compiler.statement(template, params);
    return this.dialect.executor.read(this.db, () => statement.query(params));
  }

  /** `template` with `params` as one autocommit write. */
  write(template: StatementTemplate, params: Params): Promise<QueryResult<Row>> {
    const statement = this.compiler.statement(template, params);
    return this.dialect.executor.write(this.db, () => statement.query(params));
  }

  /** `template` with `params` on the open transaction `tx`. */
  exec(tx: QueryRunner, template: StatementTemplate, params: Params): Promise<QueryResult<Row>> {
    return tx.executeQuery(this.compiler.statement(template, params).query(params));
  }
}
