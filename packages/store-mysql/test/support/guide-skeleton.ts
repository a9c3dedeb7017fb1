// The skeleton dialect of docs/writing-a-store.md ("A skeleton to start from"), verbatim below this
// comment: type-checked with the package and built by test/writing-a-store-guide.test.ts.
import type { ParamType } from "@cairnq/protocol/adapter";
import type { AnyKysely, Migration } from "@cairnq/store-kysely";
import { BaseSqlSyntax, BaseStoreDialect, KyselyStore, MigratingSchemaManager, ProcessClock } from "@cairnq/store-kysely";

class MySyntax extends BaseSqlSyntax {
  placeholder(index: number, _type: ParamType): string {
    return `?${index}`; // …your driver's numbered or positional form
  }
  bindValue(value: unknown, type: ParamType): unknown {
    return type === "textList" ? JSON.stringify(value) : value; // …booleans, lists, JSON as your driver binds them
  }
  inList(expr: string, listPlaceholder: string): string {
    return `${expr} IN (SELECT value FROM json_each(${listPlaceholder}))`; // …a bound list expanded in SQL
  }
}

const MIGRATIONS: readonly Migration[] = []; // …§3.6's migrations, with your types
const syntax = new MySyntax();

class MyDialect extends BaseStoreDialect {
  readonly name = "mydb";
  readonly syntax = syntax;
  readonly schema = new MigratingSchemaManager({ syntax, clock: new ProcessClock(), migrations: MIGRATIONS, ledgerDdl: "CREATE TABLE IF NOT EXISTS cairnq_migrations (…)" });
}

export class MyStore extends KyselyStore {
  constructor(db: AnyKysely) {
    super(db, new MyDialect());
  }
}
