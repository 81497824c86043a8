// Tree transfers, the JavaScript side of src/runtime/tree_front.h: iteration and host files only.
//
//  - importTree: entries and their chunks are pulled from the caller's (sync or async)
//    iterable, or from a walk of a host directory (one directory at a time, each entry
//    opened beneath its directory and checked against its lstat; links and special files
//    refused, or skipped on request, never followed), and
//    handed to the native side one by one; a push that answers "wait" is followed by the
//    native "drain" event before the next. The native side judges every entry (paths,
//    quotas, byteLength), builds the archive and moves it.
//  - exportTree: the native side's events ("entry", "data", "end") are handed to the
//    caller's consume(entry) one entry at a time, a file's bytes as an async iterable;
//    native.control pauses and resumes the transfer when more than STREAM_HIGH bytes wait
//    here. A host directory destination is such a consumer, writing under a temporary
//    sibling that one rename publishes once everything succeeded.
// Whatever ends a transfer early (a failure on either side, the caller's abort, the
// consumer throwing) stops the other side too: the native operation is cancelled, the
// caller's iterators are closed with return(), a temporary directory is removed.
import { constants } from "node:fs";
import { chmod, lstat, mkdir, mkdtemp, open, opendir, rename, rm } from "node:fs/promises";
import path from "node:path";
import { native, runNative } from "./native.js";
import { DockerSandboxError } from "./errors.js";
import { isRecord } from "./util.js";
import { eventQueue } from "./flow.js";

const GO = 0;
const WAIT = 1;
const STREAM_HIGH = 4 * 1024 * 1024;
const STREAM_LOW = 1024 * 1024;
const ENTRY_COST = 64;
const READ_CHUNK = 256 * 1024;
const SMALL_FILE = 256 * 1024;
const MAX_CHUNK = 1024 * 1024;
const WRITE_BEHIND = 16;
const PROGRESS_BYTES = 8 * 1024 * 1024;

function assertTransferOptions(options) {
  if (!isRecord(options)) throw new TypeError("options must be an object.");
  if (options.onProgress !== undefined && typeof options.onProgress !== "function")
    throw new TypeError("onProgress must be a function.");
}

function getIterator(source) {
  if (source != null && typeof source[Symbol.asyncIterator] === "function") return source[Symbol.asyncIterator]();
  if (source != null && typeof source[Symbol.iterator] === "function") return source[Symbol.iterator]();
  return undefined;
}

// Closes an iterator the transfer stopped reading. A pending next() of an async generator
// makes return() wait for it: not awaited here, so a stuck source cannot hold the caller.
function closeIterator(iterator) {
  if (iterator === undefined || typeof iterator.return !== "function") return;
  try {
    Promise.resolve(iterator.return()).catch(() => undefined);
  } catch {}
}

function progress(onProgress, counts) {
  if (onProgress === undefined) return;
  try {
    onProgress(Object.freeze(counts));
  } catch {}
}

// ---- import ------------------------------------------------------------------------------

function describeEntry(entry) {
  if (!isRecord(entry)) throw new TypeError("Each import entry must be an object.");
  if (entry.kind === "directory") return { isDirectory: true, path: entry.path, mode: entry.mode };
  if (entry.kind !== "file") throw new TypeError('An import entry\'s kind must be "file" or "directory".');
  if (entry.bytes !== undefined) {
    if (!(entry.bytes instanceof Uint8Array)) throw new TypeError(`An import entry's bytes must be a Uint8Array: ${entry.path}`);
    const byteLength = entry.byteLength ?? entry.bytes.byteLength;
    return { isDirectory: false, path: entry.path, mode: entry.mode, byteLength, bytes: entry.bytes };
  }
  if (typeof entry.open !== "function") throw new TypeError(`A file entry needs bytes or open(): ${entry.path}`);
  return { isDirectory: false, path: entry.path, mode: entry.mode, byteLength: entry.byteLength, open: entry.open };
}

// Totals when the source is an array (it is in memory already): for onProgress.
function totalsOf(source) {
  if (!Array.isArray(source)) return {};
  let totalFiles = 0;
  let totalBytes = 0;
  for (const e of source) {
    if (!isRecord(e) || e.kind !== "file") continue;
    totalFiles++;
    const n = e.bytes instanceof Uint8Array ? (e.byteLength ?? e.bytes.byteLength) : e.byteLength;
    if (Number.isSafeInteger(n)) totalBytes += n;
  }
  return { totalFiles, totalBytes };
}

// A host directory, walked one directory at a time. Links and special files are refused
// (or counted in stats.skipped), never followed. Every directory and file is opened
// beneath the directory it was found in, never again by its path from the root: through
// /proc/self/fd/<the parent's fd>/<name> (openat's lookup: the parent is the inode held
// open, whatever was renamed or swapped on the way since), with O_NOFOLLOW (a link swapped
// in fails) and O_NONBLOCK (a fifo swapped in cannot hold a thread), and the opened
// descriptor must be what lstat saw: same device, inode and type. A directory is held open
// while it is listed, while its subdirectories wait to be opened through it and while its
// files wait to be read (a reference each), so at most about one per level of the walk is
// open; whatever is left when the import ends is closed then. The entries of a directory
// are looked at (lstat) LSTAT_BATCH at a time, concurrently.
const LSTAT_BATCH = 64;
const PROC_FD = "/proc/self/fd";
const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
const FILE_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

class HostDir {
  constructor(fh, handles) {
    this.fh = fh;
    this.handles = handles;
    this.refs = 1;
    this.closed = false;
    handles.add(this);
  }
  at(name) {
    return `${PROC_FD}/${this.fh.fd}/${name}`;
  }
  ref() {
    this.refs++;
    return this;
  }
  unref() {
    if (--this.refs === 0) this.close();
  }
  close() {
    if (this.closed) return;
    this.closed = true;
    this.handles.delete(this);
    this.fh.close().catch(() => undefined);
  }
}

function changed(abs, relPath, isDirectory) {
  return new DockerSandboxError(`Host ${isDirectory ? "directory" : "file"} changed while it was read: ${abs}`, "invalid_entry", { path: relPath });
}

// Opens `name` in `dir`, checked against what lstat said of it (st).
async function openBeneath(dir, name, st, abs, relPath) {
  const isDirectory = st.isDirectory();
  if (dir.closed) throw changed(abs, relPath, isDirectory);
  let fh;
  try {
    fh = await open(dir.at(name), isDirectory ? DIR_FLAGS : FILE_FLAGS);
  } catch (error) {
    // A link (ELOOP) or a non-directory (ENOTDIR) where lstat saw something else.
    if (error?.code === "ELOOP" || error?.code === "ENOTDIR") throw changed(abs, relPath, isDirectory);
    throw error;
  }
  try {
    const now = await fh.stat();
    if ((isDirectory ? !now.isDirectory() : !now.isFile()) || now.ino !== st.ino || now.dev !== st.dev)
      throw changed(abs, relPath, isDirectory);
  } catch (error) {
    await fh.close().catch(() => undefined);
    throw error;
  }
  return fh;
}

async function openRoot(root, handles) {
  const top = await lstat(root);
  if (top.isSymbolicLink()) throw new DockerSandboxError(`Host path is a symbolic link: ${root}`, "invalid_entry", { path: root });
  if (!top.isDirectory()) throw new DockerSandboxError(`Host path is not a directory: ${root}`, "invalid_path", { path: root });
  let fh;
  try {
    fh = await open(root, DIR_FLAGS);
  } catch (error) {
    if (error?.code === "ELOOP" || error?.code === "ENOTDIR") throw changed(root, "", true);
    throw error;
  }
  const dir = new HostDir(fh, handles);
  const now = await fh.stat();
  if (!now.isDirectory() || now.ino !== top.ino || now.dev !== top.dev) {
    dir.close();
    throw changed(root, "", true);
  }
  const viaProc = await lstat(`${PROC_FD}/${fh.fd}/.`).catch(() => undefined);
  if (viaProc === undefined || viaProc.ino !== top.ino || viaProc.dev !== top.dev) {
    dir.close();
    throw new DockerSandboxError(
      `importTree from a host directory opens each entry beneath its directory through ${PROC_FD}, which is not usable here (is /proc mounted?): ${root}`,
      "invalid_state",
      { path: root },
    );
  }
  return dir;
}

async function* walkHost(root, skip, stats, handles) {
  // [directory (opened, its reference), relative path] or [parent (a reference), name, lstat, relative path]
  const pending = [[await openRoot(root, handles), ""]];
  while (pending.length > 0) {
    const item = pending.pop();
    let dir;
    let rel;
    if (item.length === 2) {
      [dir, rel] = item;
    } else {
      const [parent, name, st, relPath] = item;
      rel = relPath;
      try {
        dir = new HostDir(await openBeneath(parent, name, st, path.join(root, relPath), relPath), handles);
      } finally {
        parent.unref();
      }
    }
    try {
      const listing = await opendir(`${PROC_FD}/${dir.fh.fd}`);
      const subdirs = [];
      let batch = [];
      const lookAt = async function* (names) {
        const stats_ = await Promise.all(names.map((name) => lstat(dir.at(name))));
        for (let i = 0; i < names.length; i++) {
          const relPath = rel === "" ? names[i] : `${rel}/${names[i]}`;
          const st = stats_[i];
          const abs = path.join(root, relPath);
          // Sandbox paths take "\\" for "/" (writeFile's rules): such a name has no faithful copy.
          if (names[i].includes("\\")) {
            if (skip) {
              stats.skipped++;
              continue;
            }
            throw new DockerSandboxError(`Host name holds a backslash, a path separator in the sandbox: ${abs}`, "invalid_path", { path: relPath });
          }
          if (st.isDirectory()) {
            subdirs.push([dir.ref(), names[i], st, relPath]);
            yield { kind: "directory", path: relPath, mode: st.mode & 0o777 };
          } else if (st.isFile()) {
            yield hostFile(dir.ref(), names[i], abs, relPath, st);
          } else if (skip) {
            stats.skipped++;
          } else {
            const what = st.isSymbolicLink() ? "a symbolic link" : "not a regular file or directory";
            throw new DockerSandboxError(`Host path is ${what}: ${abs}`, "invalid_entry", { path: relPath });
          }
        }
      };
      // A walk stopped midway leaves references behind: runImport closes what is open.
      for await (const dirent of listing) {
        batch.push(dirent.name);
        if (batch.length === LSTAT_BATCH) {
          yield* lookAt(batch);
          batch = [];
        }
      }
      yield* lookAt(batch);
      for (let i = subdirs.length - 1; i >= 0; i--) pending.push(subdirs[i]);
    } finally {
      dir.unref();
    }
  }
}

// A host file entry, holding a reference on its directory until the file is opened. A
// small one can be read ahead (prefetch), while earlier entries are still being sent; a
// larger one is read as it is sent.
function hostFile(dir, name, abs, relPath, st) {
  let early;
  let released = false;
  const opened = async () => {
    try {
      return await openBeneath(dir, name, st, abs, relPath);
    } finally {
      if (!released) {
        released = true;
        dir.unref();
      }
    }
  };
  return {
    kind: "file",
    path: relPath,
    mode: st.mode & 0o777,
    byteLength: st.size,
    prefetch: st.size <= SMALL_FILE ? () => {
      early ??= readSmallFile(opened, st.size);
      early.catch(() => undefined); // reported when the entry is sent
      return st.size;
    } : undefined,
    open: () => (early !== undefined ? (async function* () { yield await early; })() : readHostFile(opened)),
  };
}

// At most size + 1 bytes: one more than lstat said is enough for the native side to refuse
// the entry (its byteLength), and a file growing meanwhile is not read to its end.
async function readSmallFile(opened, size) {
  const fh = await opened();
  try {
    const buffer = Buffer.allocUnsafe(size + 1);
    let got = 0;
    while (got < buffer.length) {
      const { bytesRead } = await fh.read(buffer, got, buffer.length - got, null);
      if (bytesRead === 0) break;
      got += bytesRead;
    }
    return buffer.subarray(0, got);
  } finally {
    await fh.close();
  }
}

// Pulls up to READ_AHEAD entries (and READ_AHEAD_BYTES of small files' contents) ahead of
// the one being sent, starting their reads: the host's disk and the engine work at once.
const READ_AHEAD = 32;
const READ_AHEAD_BYTES = 8 * 1024 * 1024;

async function* readAhead(source) {
  const iterator = source[Symbol.asyncIterator]();
  const queue = [];
  let bytes = 0;
  let done = false;
  try {
    for (;;) {
      while (!done && queue.length < READ_AHEAD && bytes < READ_AHEAD_BYTES) {
        const step = await iterator.next();
        if (step.done) {
          done = true;
          break;
        }
        const entry = step.value;
        const n = entry.prefetch?.() ?? 0;
        bytes += n;
        queue.push([entry, n]);
      }
      const next = queue.shift();
      if (next === undefined) return;
      bytes -= next[1];
      yield next[0];
    }
  } finally {
    if (!done) await iterator.return?.();
  }
}

async function* readHostFile(opened) {
  const fh = await opened();
  try {
    const buffer = Buffer.allocUnsafe(READ_CHUNK);
    for (;;) {
      const { bytesRead } = await fh.read(buffer, 0, buffer.length, null);
      if (bytesRead === 0) return;
      // Handed to native (which copies it) before the next read.
      yield buffer.subarray(0, bytesRead);
    }
  } finally {
    await fh.close();
  }
}

export function prepareImport(sandbox, source, options) {
  assertTransferOptions(options);
  if (typeof source !== "string" && getIterator(source) === undefined)
    throw new TypeError("source must be a host directory path or an iterable of entries.");
  if (options.specialFiles !== undefined && options.specialFiles !== "refuse" && options.specialFiles !== "skip")
    throw new TypeError('specialFiles must be "refuse" or "skip".');
  return native.prepareImportTree(sandbox, options);
}

export async function runImport({ token, channel }, source, options, signal) {
  const stats = { skipped: 0 };
  const handles = new Set(); // the host directories a walk holds open
  const entries = typeof source === "string" ? readAhead(walkHost(source, options.specialFiles === "skip", stats, handles)) : source;
  const totals = totalsOf(source);
  const onProgress = options.onProgress;
  let wake;
  let settled = false;
  const ready = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  const waitDrain = () => (settled ? Promise.resolve() : new Promise((resolve) => (wake = resolve)));
  const done = runNative(token, signal, (type) => {
    if (type === "drain") ready();
  });
  const finished = done.finally(() => {
    settled = true;
    ready();
  });
  let iterator;
  let chunks;
  const report = () => {
    const c = native.treeImportCounts(channel);
    if (c !== null) progress(onProgress, { files: c[0], directories: c[1], bytes: c[2], ...totals });
  };
  const push = async (state) => {
    if (state === WAIT) await waitDrain();
    return !settled && state >= GO;
  };
  const pump = async () => {
    await waitDrain(); // the transport is ready
    if (settled) return;
    iterator = getIterator(entries);
    let sinceReport = 0;
    for (;;) {
      const step = await iterator.next();
      if (settled) return;
      if (step.done) {
        iterator = undefined;
        if (native.treeImportEnd(channel) >= GO) report();
        return;
      }
      const e = describeEntry(step.value);
      if (!(await push(native.treeImportEntry(channel, e.isDirectory, e.path, e.mode, e.byteLength)))) return;
      if (!e.isDirectory) {
        if (e.bytes !== undefined) {
          for (let off = 0; off < e.bytes.byteLength; off += MAX_CHUNK) {
            const piece = e.bytes.subarray(off, Math.min(off + MAX_CHUNK, e.bytes.byteLength));
            if (!(await push(native.treeImportData(channel, piece)))) return;
          }
        } else {
          chunks = getIterator(await e.open());
          if (chunks === undefined) throw new TypeError(`open() must return an iterable of Uint8Array chunks: ${e.path}`);
          for (;;) {
            const c = await chunks.next();
            if (settled) return;
            if (c.done) break;
            if (!(await push(native.treeImportData(channel, c.value)))) return;
            sinceReport += c.value?.byteLength ?? 0;
            if (sinceReport >= PROGRESS_BYTES) {
              sinceReport = 0;
              report();
            }
          }
          chunks = undefined;
        }
      }
      report();
    }
  };
  // A failure of the source (or of an entry's shape) stops the native side with it.
  const pumping = pump().catch((error) => native.cancel(token, error));
  try {
    const summary = await finished;
    await pumping;
    return Object.freeze({ ...summary, skipped: summary.skipped + stats.skipped });
  } finally {
    closeIterator(chunks);
    closeIterator(iterator);
    // Entries read ahead and never sent still hold their directories.
    for (const dir of [...handles]) dir.close();
  }
}

// ---- export ------------------------------------------------------------------------------

// The native events of one export, pulled in order; native.control pauses the transfer
// while more than STREAM_HIGH bytes wait here.
function eventStream(token, signal) {
  // A file's bytes count, and each entry (its path and ENTRY_COST), as in the native
  // queue: a flood of directories pauses the transfer as bytes do.
  const cost = ([type, value]) => (type === "data" ? value.byteLength : type === "entry" ? ENTRY_COST + value.path.length : 0);
  const queue = eventQueue(token, { high: STREAM_HIGH, low: STREAM_LOW, cost });
  let finished = false;
  let failure;
  let result;
  const onEvent = (type, value) => queue.push([type, value]);
  const done = runNative(token, signal, onEvent).then(
    (r) => {
      result = r;
      finished = true;
      queue.poke();
    },
    (e) => {
      failure = e;
      finished = true;
      queue.poke();
    },
  );
  return {
    done,
    get result() {
      return result;
    },
    async next() {
      for (;;) {
        if (failure !== undefined) throw failure;
        const ev = queue.shift();
        if (ev !== undefined) return ev;
        if (finished) return null;
        await queue.wait();
      }
    },
  };
}

// One file's bytes, from the stream, until its "end": single use, in order.
function fileBytes(stream) {
  let used = false;
  let ended = false;
  const read = async () => {
    if (ended) return null;
    const ev = await stream.next();
    if (ev === null) throw new DockerSandboxError("The export ended inside a file.", "docker_command_failed");
    if (ev[0] === "end") {
      ended = true;
      return null;
    }
    if (ev[0] !== "data") throw new DockerSandboxError("The export's events are out of order.", "docker_command_failed");
    return ev[1];
  };
  return {
    [Symbol.asyncIterator]() {
      if (used) throw new TypeError("An exported file's bytes can be read once.");
      used = true;
      return {
        async next() {
          const chunk = await read();
          return chunk === null ? { done: true, value: undefined } : { done: false, value: chunk };
        },
        async return() {
          return { done: true, value: undefined };
        },
        [Symbol.asyncIterator]() {
          return this;
        },
      };
    },
    // What the consumer did not read is skipped.
    async drain() {
      while ((await read()) !== null);
    },
  };
}

// A host directory that must not exist: entries go under a temporary sibling (files
// opened with O_EXCL | O_NOFOLLOW, so nothing is ever written through a link or over
// another entry), published by one rename at the end.
//
// Modes are what tar gives a user who is not root: the sandbox's permission bits less the
// process umask, never setuid, setgid or sticky (the native side keeps only 0o777), so a
// sandbox cannot make a host file or directory group- or world-writable past the umask.
// A directory whose mode keeps the owner's rwx is made with its mode at once; one without
// (0o555, 0o000) would stop its own subtree from being written, so it is made 0o700 and
// given its mode once the entries leave its subtree (or at publish); an entry that comes
// back into it later reopens it. What is remembered here is bounded by the depth, not by
// the number of entries: the chain of such directories around the current entry, and the
// last parent directory made.
async function hostDestination(dest) {
  const abs = path.resolve(dest);
  try {
    await lstat(abs);
    throw new DockerSandboxError(`Export destination already exists: ${abs}`, "invalid_path", { path: abs });
  } catch (error) {
    if (error?.code !== "ENOENT") throw error;
  }
  const tmp = await mkdtemp(path.join(path.dirname(abs), `.${path.basename(abs)}.anvia-export-`));
  const umask = process.umask();
  const finalMode = (mode) => mode & 0o777 & ~umask;
  const restrictive = (mode) => (mode & 0o700) !== 0o700;
  const inside = (rel, dir) => rel === dir || rel.startsWith(`${dir}/`);
  const parentOf = (rel) => (path.posix.dirname(rel) === "." ? "" : path.posix.dirname(rel));
  const held = []; // [rel, final mode] of restrictive directories kept 0o700, outermost first
  let closedAny = false; // a restrictive directory was given its mode: an entry may come back into it
  let lastParent = "";
  const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
  // Small files are written in the background, WRITE_BEHIND at a time, while the next
  // entries arrive; the first failure is thrown at the next entry or at publish().
  const writing = new Set();
  let failure;
  const settle = async () => {
    while (writing.size > 0) await Promise.race(writing);
    if (failure !== undefined) throw failure;
  };
  // Gives its mode to each held directory `rel` is not in (the writes into it first).
  const release = async (rel) => {
    while (held.length > 0 && (rel === undefined || !inside(rel, held[held.length - 1][0]))) {
      await settle();
      const [dir, mode] = held.pop();
      await chmod(path.join(tmp, dir), mode);
      closedAny = true;
      if (lastParent !== undefined && inside(lastParent, dir)) lastParent = undefined; // not writable now
    }
  };
  // A directory of the copy `rel` goes into, writable: missing ones are made (0o700, as
  // implicit parents always were), a restrictive one given its mode earlier is reopened.
  const ensureParent = async (rel) => {
    await release(rel);
    if (rel === "" || rel === lastParent) return;
    if (closedAny) {
      const parts = rel.split("/");
      for (let i = 1; i <= parts.length; i++) {
        const p = parts.slice(0, i).join("/");
        if (held.some(([d]) => d === p)) continue;
        let st;
        try {
          st = await lstat(path.join(tmp, p));
        } catch (error) {
          if (error?.code === "ENOENT") break;
          throw error;
        }
        if (st.isDirectory() && restrictive(st.mode)) {
          await chmod(path.join(tmp, p), 0o700);
          held.push([p, st.mode & 0o777]);
        }
      }
    }
    await mkdir(path.join(tmp, rel), { recursive: true, mode: 0o700 });
    lastParent = rel;
  };
  const makeDir = async (rel, mode) => {
    const target = path.join(tmp, rel);
    const wanted = restrictive(mode) ? 0o700 : mode;
    try {
      await mkdir(target, { mode: wanted });
    } catch (error) {
      if (error?.code !== "EEXIST") throw error;
      // Made earlier as a parent: it takes the entry's mode now.
      if (!(await lstat(target)).isDirectory()) throw error;
      await chmod(target, wanted);
    }
    if (restrictive(mode)) held.push([rel, mode]);
  };
  const writeSmall = async (target, data, mode) => {
    const fh = await open(target, flags, mode);
    try {
      await fh.writeFile(data);
    } finally {
      await fh.close();
    }
  };
  return {
    abs,
    tmp,
    async consume(entry) {
      if (failure !== undefined) throw failure;
      await ensureParent(parentOf(entry.path));
      const target = path.join(tmp, entry.path);
      const mode = finalMode(entry.mode);
      if (entry.kind === "directory") {
        await makeDir(entry.path, mode);
        return;
      }
      if (entry.byteLength <= SMALL_FILE) {
        const parts = [];
        for await (const chunk of entry.bytes) parts.push(chunk);
        const data = parts.length === 1 ? parts[0] : Buffer.concat(parts);
        const p = writeSmall(target, data, mode).then(
          () => writing.delete(p),
          (error) => {
            writing.delete(p);
            failure ??= error;
          },
        );
        writing.add(p);
        if (writing.size >= WRITE_BEHIND) await Promise.race(writing);
        return;
      }
      const fh = await open(target, flags, mode);
      try {
        for await (const chunk of entry.bytes) await fh.write(chunk);
      } finally {
        await fh.close();
      }
    },
    async publish() {
      await settle();
      await release(undefined);
      try {
        await lstat(abs);
        throw new DockerSandboxError(`Export destination already exists: ${abs}`, "invalid_path", { path: abs });
      } catch (error) {
        if (error?.code !== "ENOENT") throw error;
      }
      await rename(tmp, abs);
    },
    async discard() {
      await settle().catch(() => undefined);
      // A directory given a mode without the owner's rwx cannot be emptied: reopened first.
      await rm(tmp, { recursive: true, force: true }).catch(async () => {
        await reopenAll(tmp);
        await rm(tmp, { recursive: true, force: true });
      }).catch(() => undefined);
    },
  };
}

// Gives the owner rwx on every directory under dir (one that lost it cannot be removed).
async function reopenAll(dir) {
  await chmod(dir, 0o700).catch(() => undefined);
  const handle = await opendir(dir).catch(() => undefined);
  if (handle === undefined) return;
  for await (const d of handle) if (d.isDirectory()) await reopenAll(path.join(dir, d.name));
}

export function prepareExport(sandbox, selection, destination, options) {
  assertTransferOptions(options);
  if (typeof destination !== "string" && typeof destination !== "function")
    throw new TypeError("destination must be a host directory path or a consume(entry) function.");
  if (typeof destination === "string" && destination.length === 0) throw new TypeError("destination must not be empty.");
  return native.prepareExportTree(sandbox, selection, options);
}

export async function runExport(token, selection, destination, options, signal) {
  const host = typeof destination === "string" ? await hostDestination(destination) : undefined;
  const consume = host ? host.consume : destination;
  const onProgress = options.onProgress;
  const totals = selection.kind === "files" ? { totalFiles: selection.paths.length } : {};
  const stream = eventStream(token, signal);
  const counts = { files: 0, directories: 0, bytes: 0 };
  let ok = false;
  try {
    for (;;) {
      const ev = await stream.next();
      if (ev === null) break;
      if (ev[0] !== "entry") throw new DockerSandboxError("The export's events are out of order.", "docker_command_failed");
      const meta = ev[1];
      if (meta.kind === "directory") {
        await consume(Object.freeze({ kind: "directory", path: meta.path, mode: meta.mode, byteLength: 0 }));
        counts.directories++;
      } else {
        const bytes = fileBytes(stream);
        let got = 0;
        const counted = {
          [Symbol.asyncIterator]() {
            const it = bytes[Symbol.asyncIterator]();
            return {
              async next() {
                const r = await it.next();
                if (!r.done) got += r.value.byteLength;
                return r;
              },
              return: () => it.return(),
              [Symbol.asyncIterator]() {
                return this;
              },
            };
          },
        };
        await consume(Object.freeze({ kind: "file", path: meta.path, mode: meta.mode, byteLength: meta.byteLength, bytes: counted }));
        await bytes.drain();
        counts.files++;
        counts.bytes += got;
      }
      progress(onProgress, { ...counts, ...totals });
      // The caller's abort counts even when the native side is already done.
      signal?.throwIfAborted();
    }
    await stream.done;
    signal?.throwIfAborted();
    if (host) await host.publish();
    ok = true;
    return Object.freeze({ ...stream.result });
  } catch (error) {
    // The consumer (or the host directory) failed: the native side stops too.
    native.cancel(token, error);
    await stream.done;
    throw error;
  } finally {
    if (host && !ok) await host.discard();
  }
}
