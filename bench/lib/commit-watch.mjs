// The raw cross-process call floor's way of noticing another process's commits: the least a process on
// this host can do without a server to push. It watches the database's directory (inotify on Linux) and
// reads `PRAGMA data_version` on a connection of its own on the next turn after an event; a check that
// finds nothing new looks once more 1 ms later, since a commit's last event can come before the commit is
// visible. No filtering, no mode switches, no timeouts: every commit calls `onCommit`.
import fs from "node:fs";
import path from "node:path";

/**
 * Calls `onCommit()` after each commit to `file` by any connection but `db`'s own, as seen from `db`
 * (a connection that does not write, or whose own commits the caller ignores). Returns `close()`.
 */
export function watchCommits(file, db, onCommit) {
  const dataVersion = db.prepare("PRAGMA data_version");
  let version = dataVersion.get().data_version;
  let immediate = null;
  let timer = null;
  const names = new Set([path.basename(file), `${path.basename(file)}-wal`]);
  const check = () => {
    immediate = null;
    const next = dataVersion.get().data_version;
    if (next !== version) {
      version = next;
      onCommit();
    } else if (timer === null) {
      timer = setTimeout(() => {
        timer = null;
        if (immediate === null) check();
      }, 1);
    }
  };
  const watcher = fs.watch(path.dirname(file), { persistent: false }, (_event, name) => {
    if (name !== null && !names.has(name.toString())) return;
    immediate ??= setImmediate(check);
  });
  return () => {
    watcher.close();
    if (immediate !== null) clearImmediate(immediate);
    if (timer !== null) clearTimeout(timer);
  };
}
