// The raw cross-process call floor's way of noticing another process's commits: the least a process on
// this host can do without a server to push, the way the store does it. Each side writes one byte to the
// database's wake file (`<file>-wake`) after a commit the other waits for (`wakeSignal`); the other watches
// that file (inotify on Linux) and reads `PRAGMA data_version` on a connection of its own on the next turn
// after an event; a check that finds nothing new looks once more 1 ms later. No filtering, no mode
// switches, no timeouts: every commit calls `onCommit`. (Until the store wrote a wake file, both watched
// the database's directory, which woke the other side for every WAL write of a commit.)
import fs from "node:fs";

/** The wake file's writer: call the returned function after a commit; `close()` it when done. */
export function wakeSignal(file) {
  const fd = fs.openSync(`${file}-wake`, fs.constants.O_RDWR | fs.constants.O_CREAT, 0o644);
  const byte = Buffer.from([0x31]);
  const signal = () => fs.writeSync(fd, byte, 0, 1, 0);
  signal.close = () => fs.closeSync(fd);
  return signal;
}

/**
 * Calls `onCommit()` after each commit to `file` by any connection but `db`'s own, as seen from `db`
 * (a connection that does not write, or whose own commits the caller ignores). Returns `close()`.
 */
export function watchCommits(file, db, onCommit) {
  const dataVersion = db.prepare("PRAGMA data_version");
  let version = dataVersion.get().data_version;
  let immediate = null;
  let timer = null;
  // Created here if no writer has yet, so that the watch has a file to watch.
  fs.closeSync(fs.openSync(`${file}-wake`, fs.constants.O_RDWR | fs.constants.O_CREAT, 0o644));
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
  const watcher = fs.watch(`${file}-wake`, { persistent: false }, () => {
    immediate ??= setImmediate(check);
  });
  return () => {
    watcher.close();
    if (immediate !== null) clearImmediate(immediate);
    if (timer !== null) clearTimeout(timer);
  };
}
