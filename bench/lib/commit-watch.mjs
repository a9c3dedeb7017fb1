// The raw cross-process call floor's way of noticing another process's commits: the least a process on
// this host can do without a server to push, the way the store does it. Each side writes one byte to the
// database's wake file (`<file>-wake`) after a commit the other waits for (`wakeSignal`); the other watches
// that file (inotify on Linux) and reads `PRAGMA data_version` on a connection of its own on the next turn
// after an event; a check that finds nothing new looks once more 1 ms later. No filtering, no mode
// switches, no timeouts: every commit calls `onCommit`. (Until the store wrote a wake file, both watched
// the database's directory, which woke the other side for every WAL write of a commit.)
//
// Under Bun, whose `fs.watch` of one file drops events (of a run of writes to it by another process it
// reported about half: the raw floor's first Bun runs hung on a lost signal within a few calls), both sides
// watch the wake file through its directory, as the store does there (LOSSY_WATCH in
// packages/store-sqlite/src/sqlite-commit-detector.ts), whose watch reported every signal; the directory's
// other events (the WAL's writes) are ignored. A check every 10 ms backs it up, so a signal lost after all
// delays its call (the p99 shows it) rather than hanging the floor.
import fs from "node:fs";
import path from "node:path";

const LOSSY_WATCH = process.versions.bun !== undefined;
const LOSSY_BACKSTOP_MS = 10;

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
  const onEvent = () => {
    immediate ??= setImmediate(check);
  };
  let watcher;
  let backstop = null;
  if (LOSSY_WATCH) {
    const wake = `${path.basename(file)}-wake`;
    watcher = fs.watch(path.dirname(file), { persistent: false }, (_event, name) => {
      if (name === null || String(name) === wake) onEvent();
    });
    backstop = setInterval(onEvent, LOSSY_BACKSTOP_MS);
    backstop.unref();
  } else {
    watcher = fs.watch(`${file}-wake`, { persistent: false }, onEvent);
  }
  return () => {
    watcher.close();
    if (backstop !== null) clearInterval(backstop);
    if (immediate !== null) clearImmediate(immediate);
    if (timer !== null) clearTimeout(timer);
  };
}
