// The tar codec (src/tar.c) through native.tarBuild / tarPeek / tarReadFile: archives we
// build are checked byte by byte and by the system's own tar programs; archives made by
// GNU tar, bsdtar (when installed) and by hand exercise every refusal of a download.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync, lstatSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";

import { DockerSandboxError, native } from "../helpers/native.js";

const enc = new TextEncoder();
const work = mkdtempSync(join(tmpdir(), "anvia-tar-test-"));
after(() => rmSync(work, { recursive: true, force: true }));

let dirCount = 0;
function freshDir() {
  const dir = join(work, `d${dirCount++}`);
  mkdirSync(dir);
  return dir;
}

function run(cmd, args, options = {}) {
  const r = spawnSync(cmd, args, { encoding: "buffer", ...options });
  if (r.error) throw r.error;
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")} failed: ${r.stderr}`);
  return { stdout: r.stdout.toString(), stderr: r.stderr.toString(), bytes: r.stdout };
}


// GNU tar: builds an archive of `names` inside `dir` and returns its bytes.
function gnuTar(dir, args) {
  return new Uint8Array(run("tar", ["-cf", "-", ...args], { cwd: dir }).bytes);
}
function bsdTar(dir, args) {
  return new Uint8Array(run("bsdtar", ["-cf", "-", ...args], { cwd: dir }).bytes);
}
function listWith(program, bytes, extra = []) {
  const file = join(work, `list-${dirCount++}.tar`);
  writeFileSync(file, bytes);
  return run(program, ["-tvf", file, ...extra]);
}

// ---- raw header helpers -----------------------------------------------------------------

function field(h, off, len) {
  let end = off;
  while (end < off + len && h[end] !== 0) end++;
  return Buffer.from(h.subarray(off, end)).toString("latin1");
}
function octal(h, off, len) {
  if (h[off] & 0x80) {
    let v = BigInt(h[off] & 0x7f);
    for (let i = 1; i < len; i++) v = (v << 8n) | BigInt(h[off + i]);
    return Number(v);
  }
  const s = field(h, off, len).trim();
  return s === "" ? 0 : parseInt(s, 8);
}
// Walks the raw blocks: every header, pax and GNU long-name headers included.
function rawHeaders(bytes) {
  const out = [];
  let off = 0;
  while (off + 512 <= bytes.length) {
    const h = bytes.subarray(off, off + 512);
    if (h.every((b) => b === 0)) break;
    const size = octal(h, 124, 12);
    out.push({
      offset: off,
      name: field(h, 0, 100),
      mode: octal(h, 100, 8),
      uid: octal(h, 108, 8),
      gid: octal(h, 116, 8),
      size,
      mtime: octal(h, 136, 12),
      type: String.fromCharCode(h[156] || 0x30),
      magic: Buffer.from(h.subarray(257, 265)).toString("latin1"),
      uname: field(h, 265, 32),
      gname: field(h, 297, 32),
      prefix: field(h, 345, 155),
      body: Buffer.from(bytes.subarray(off + 512, off + 512 + size)).toString("utf8"),
    });
    off += 512 + Math.ceil(size / 512) * 512;
  }
  return out;
}
// Where the first real header ends (after pax / GNU long-name headers).
function firstHeaderEnd(bytes) {
  for (const h of rawHeaders(bytes)) {
    if (!"xgLKX".includes(h.type)) return h.offset + 512;
  }
  return -1;
}

function header({ name, size = 0, type = "0", mode = 0o644, uid = 0, gid = 0, mtime = 0, sizeField, linkname = "" }) {
  const h = new Uint8Array(512);
  const put = (off, s) => h.set(Buffer.from(s, "latin1"), off);
  const oct = (v, width) => v.toString(8).padStart(width - 1, "0");
  put(0, name);
  put(100, oct(mode, 8));
  put(108, oct(uid, 8));
  put(116, oct(gid, 8));
  if (sizeField) h.set(sizeField, 124);
  else put(124, oct(size, 12));
  put(136, oct(mtime, 12));
  put(156, type);
  put(157, linkname);
  put(257, "ustar\u000000");
  h.fill(0x20, 148, 156);
  const sum = h.reduce((a, b) => a + b, 0);
  put(148, `${sum.toString(8).padStart(6, "0")}\u0000 `);
  return h;
}
function pad(data) {
  const out = new Uint8Array(Math.ceil(data.length / 512) * 512);
  out.set(data);
  return out;
}
function paxHeader(records) {
  let body = "";
  for (const [k, v] of Object.entries(records)) {
    const rest = ` ${k}=${v}\n`;
    let len = rest.length + 1;
    while (String(len).length + Buffer.byteLength(rest) !== len) len = String(len).length + Buffer.byteLength(rest);
    body += `${len}${rest}`;
  }
  const data = enc.encode(body);
  return concat([header({ name: "PaxHeader/x", size: data.length, type: "x" }), pad(data)]);
}
function concat(parts) {
  return new Uint8Array(Buffer.concat(parts.map((p) => Buffer.from(p))));
}
const END = new Uint8Array(1024);

function assertSandboxError(fn, code, message) {
  assert.throws(fn, (error) => {
    assert.ok(error instanceof DockerSandboxError, `expected a DockerSandboxError, got ${error}`);
    assert.equal(error.code, code);
    if (message instanceof RegExp) assert.match(error.message, message);
    else if (message !== undefined) assert.equal(error.message, message);
    return true;
  });
}

const file = (path, data, extra = {}) => ({
  path,
  isDir: false,
  data: typeof data === "string" ? enc.encode(data) : data,
  mode: 0o644,
  uid: 1000,
  gid: 1000,
  mtime: 1700000000,
  ...extra,
});
const dir = (path, extra = {}) => ({ path, isDir: true, mode: 0o755, uid: 1000, gid: 1000, mtime: 1700000000, ...extra });

// ---- tarBuild ---------------------------------------------------------------------------

describe("tarBuild", () => {
  test("writes POSIX ustar headers with explicit owner, mode, mtime and empty user/group names", () => {
    const bytes = native.tarBuild([
      dir("workspace", { uid: 1000, gid: 1001, mode: 0o750 }),
      file("workspace/a.txt", "hello", { uid: 4242, gid: 4343, mode: 0o600, mtime: 1234567890 }),
    ]);
    assert.ok(bytes instanceof Uint8Array);
    assert.equal(bytes.length % 512, 0);
    const headers = rawHeaders(bytes);
    assert.equal(headers.length, 2);
    const [d, f] = headers;
    assert.deepEqual(
      { name: d.name, type: d.type, mode: d.mode, uid: d.uid, gid: d.gid, size: d.size },
      { name: "workspace/", type: "5", mode: 0o750, uid: 1000, gid: 1001, size: 0 },
    );
    assert.deepEqual(
      { name: f.name, type: f.type, mode: f.mode, uid: f.uid, gid: f.gid, size: f.size, mtime: f.mtime },
      { name: "workspace/a.txt", type: "0", mode: 0o600, uid: 4242, gid: 4343, size: 5, mtime: 1234567890 },
    );
    for (const h of headers) {
      assert.equal(h.magic, "ustar\u000000");
      assert.equal(h.uname, "");
      assert.equal(h.gname, "");
    }
    assert.equal(f.body, "hello");
  });

  test("GNU tar lists what we built: owners, modes, types, contents", () => {
    const bytes = native.tarBuild([
      dir("workspace", { uid: 1000, gid: 1000, mode: 0o755 }),
      dir("workspace/sub", { uid: 0, gid: 0, mode: 0o700 }),
      file("workspace/sub/run.sh", "#!/bin/sh\n", { mode: 0o755, uid: 1, gid: 2 }),
      file("workspace/empty", new Uint8Array(0), { mode: 0o444, uid: 65534, gid: 65534 }),
    ]);
    const { stdout, stderr } = listWith("tar", bytes, ["--numeric-owner"]);
    assert.equal(stderr, "");
    const lines = stdout.trim().split("\n").map((l) => l.split(/\s+/));
    assert.deepEqual(
      lines.map((l) => [l[0], l[1], l[2], l.at(-1)]),
      [
        ["drwxr-xr-x", "1000/1000", "0", "workspace/"],
        ["drwx------", "0/0", "0", "workspace/sub/"],
        ["-rwxr-xr-x", "1/2", "10", "workspace/sub/run.sh"],
        ["-r--r--r--", "65534/65534", "0", "workspace/empty"],
      ],
    );
    // Without --numeric-owner GNU tar would print names if the archive carried any.
    assert.match(listWith("tar", bytes).stdout, /1000\/1000/);
  });

  test("bsdtar lists what we built", () => {
    const bytes = native.tarBuild([dir("w", { uid: 7, gid: 8 }), file("w/x", "abc", { uid: 9, gid: 10 })]);
    const { stdout } = listWith("bsdtar", bytes);
    const lines = stdout.trim().split("\n").map((l) => l.split(/\s+/));
    assert.deepEqual(
      lines.map((l) => [l[0], l[2], l[3], l[4], l.at(-1)]),
      [
        ["drwxr-xr-x", "7", "8", "0", "w/"],
        ["-rw-r--r--", "9", "10", "3", "w/x"],
      ],
    );
  });

  test("extracting as root applies the owners and modes of the headers", () => {
    const bytes = native.tarBuild([
      dir("workspace", { uid: 1234, gid: 2345, mode: 0o770 }),
      file("workspace/f", "data", { uid: 3456, gid: 4567, mode: 0o640 }),
    ]);
    const target = freshDir();
    run("tar", ["-xpf", "-", "--same-owner", "-C", target], { input: bytes });
    const d = statSync(join(target, "workspace"));
    const f = statSync(join(target, "workspace/f"));
    assert.deepEqual([d.uid, d.gid, d.mode & 0o7777, d.isDirectory()], [1234, 2345, 0o770, true]);
    assert.deepEqual([f.uid, f.gid, f.mode & 0o7777, f.isFile()], [3456, 4567, 0o640, true]);
    assert.equal(readFileSync(join(target, "workspace/f"), "utf8"), "data");
  });

  test("paths longer than 100 bytes, that ustar cannot split, go through pax", () => {
    const longComponent = "c".repeat(150);
    const deep = `${"d".repeat(90)}/${"e".repeat(90)}/${"f".repeat(90)}/file.txt`;
    const names = [`workspace/${longComponent}`, deep, `${"x".repeat(99)}`, `${"y".repeat(100)}`, `${"z".repeat(101)}`];
    const bytes = native.tarBuild(names.map((n) => file(n, n)));
    const { stdout, stderr } = listWith("tar", bytes, ["--numeric-owner"]);
    assert.equal(stderr, "");
    assert.deepEqual(stdout.trim().split("\n").map((l) => l.split(/\s+/).at(-1)), names);
    assert.ok(rawHeaders(bytes).some((h) => h.type === "x" && h.body.includes(`path=workspace/${longComponent}`)));
    for (const n of names) {
      const single = native.tarBuild([file(n, `content of ${n}`)]);
      assert.equal(Buffer.from(native.tarReadFile(single, n, 1 << 20, `/${n}`)).toString(), `content of ${n}`);
      assert.equal(native.tarPeek(single).name, n.slice(0, 255));
    }
  });

  test("a directory path longer than 100 bytes", () => {
    const name = "a".repeat(120);
    const bytes = native.tarBuild([dir(name)]);
    assert.equal(listWith("tar", bytes).stdout.trim().split(/\s+/).at(-1), `${name}/`);
    assert.deepEqual(native.tarPeek(bytes), { name: `${name}/`, kind: "directory", size: 0 });
  });

  test("ids up to 2^32-1 and large mtimes survive (pax records where ustar has no room)", () => {
    const bytes = native.tarBuild([file("big-ids", "x", { uid: 4294967294, gid: 4294967295, mtime: 8589934592 })]);
    const { stdout } = listWith("tar", bytes, ["--numeric-owner"]);
    assert.match(stdout, /4294967294\/4294967295/);
    const pax = rawHeaders(bytes).find((h) => h.type === "x");
    assert.match(pax.body, /uid=4294967294/);
    assert.match(pax.body, /gid=4294967295/);
    assert.match(pax.body, /mtime=8589934592/);
  });

  test("non-ASCII names are written as UTF-8 that GNU tar reads without warnings", () => {
    const name = "données/été ñ 日本.txt";
    const bytes = native.tarBuild([file(name, "x")]);
    const { stdout, stderr } = listWith("tar", bytes);
    assert.equal(stderr, "");
    assert.equal(stdout.trim().split(/\s+/).slice(5).join(" "), name);
    const single = native.tarBuild([file("ñ.txt", "eñe")]);
    assert.equal(Buffer.from(native.tarReadFile(single, "ñ.txt", 100, "/workspace/ñ.txt")).toString(), "eñe");
    assert.equal(native.tarPeek(bytes).name, name);
  });

  test("every byte value and larger files round trip", () => {
    const all = new Uint8Array(256 * 64).map((_, i) => i & 0xff);
    const big = new Uint8Array(3 * 1024 * 1024 + 17).map((_, i) => (i * 31) & 0xff);
    for (const data of [all, big, new Uint8Array(0), new Uint8Array(511), new Uint8Array(512), new Uint8Array(513)]) {
      const bytes = native.tarBuild([file("f.bin", data)]);
      assert.deepEqual(native.tarReadFile(bytes, "f.bin", data.length, "/f.bin"), data);
    }
    // Through GNU tar too.
    const target = freshDir();
    run("tar", ["-xf", "-", "-C", target], { input: native.tarBuild([file("f.bin", big)]) });
    assert.deepEqual(new Uint8Array(readFileSync(join(target, "f.bin"))), big);
  });

  test("an empty list is an empty archive", () => {
    const bytes = native.tarBuild([]);
    assert.ok(bytes.length >= 1024);
    assert.ok(bytes.every((b) => b === 0));
  });

  test("refuses paths that are not relative", () => {
    for (const path of ["/abs", "../x", "a/../b", "..", ""]) {
      assertSandboxError(() => native.tarBuild([file(path, "x")]), "invalid_path", `Archive entry path must be relative: ${path}`);
    }
  });

  test("argument checks", () => {
    assert.throws(() => native.tarBuild("x"), TypeError);
    assert.throws(() => native.tarBuild([{ path: 1 }]), TypeError);
    assert.throws(() => native.tarBuild([{ ...file("a", "b"), uid: -1 }]), TypeError);
    assert.throws(() => native.tarBuild([{ ...file("a", "b"), data: "text" }]), TypeError);
  });
});

// ---- tarReadFile ------------------------------------------------------------------------

describe("tarReadFile", () => {
  const display = "/workspace/a.txt";
  const base = freshDir();
  writeFileSync(join(base, "a.txt"), "alpha\n");
  writeFileSync(join(base, "b.txt"), "beta\n");
  writeFileSync(join(base, "big.txt"), "B".repeat(2000));
  mkdirSync(join(base, "sub"));
  symlinkSync("a.txt", join(base, "link"));
  writeFileSync(join(work, "outside.txt"), "outside\n");
  mkdirSync(join(base, "inner"));

  test("reads the one file of a GNU tar archive (ustar, gnu and posix formats)", () => {
    for (const format of ["ustar", "gnu", "posix", "oldgnu"]) {
      const bytes = gnuTar(base, [`--format=${format}`, "a.txt"]);
      assert.equal(Buffer.from(native.tarReadFile(bytes, "a.txt", 100, display)).toString(), "alpha\n", format);
    }
  });

  test("reads the one file of a bsdtar archive", () => {
    for (const format of ["ustar", "pax", "gnutar", "paxr"]) {
      const bytes = bsdTar(base, ["--format", format, "a.txt"]);
      assert.equal(Buffer.from(native.tarReadFile(bytes, "a.txt", 100, display)).toString(), "alpha\n", format);
    }
  });

  test("a size exactly at the limit is read, one byte over is file_too_large", () => {
    const bytes = gnuTar(base, ["big.txt"]);
    assert.equal(native.tarReadFile(bytes, "big.txt", 2000, "/w/big.txt").length, 2000);
    assertSandboxError(
      () => native.tarReadFile(bytes, "big.txt", 1999, "/w/big.txt"),
      "file_too_large",
      "Sandbox file exceeds maxFileBytes (2000 > 1999): /w/big.txt",
    );
    assertSandboxError(() => native.tarReadFile(bytes, "big.txt", 0, "/w/big.txt"), "file_too_large");
  });

  test("a ../ name is refused", () => {
    const bytes = gnuTar(join(base, "inner"), ["-P", "../a.txt"]);
    assert.equal(rawHeaders(bytes)[0].name, "../a.txt");
    assertSandboxError(
      () => native.tarReadFile(bytes, "a.txt", 100, display),
      "docker_command_failed",
      `Docker engine returned a malformed archive for ${display}: unsafe entry name "../a.txt"`,
    );
    const nested = concat([header({ name: "x/../a.txt", size: 1 }), pad(enc.encode("x")), END]);
    assertSandboxError(() => native.tarReadFile(nested, "a.txt", 100, display), "docker_command_failed", /unsafe entry name/);
  });

  test("an absolute name is refused", () => {
    const abs = join(work, "outside.txt");
    const bytes = gnuTar(base, ["-P", abs]);
    assert.equal(rawHeaders(bytes)[0].name, abs);
    assertSandboxError(
      () => native.tarReadFile(bytes, "outside.txt", 100, display),
      "docker_command_failed",
      `Docker engine returned a malformed archive for ${display}: unsafe entry name "${abs}"`,
    );
  });

  test("bsdtar's absolute and ../ names are refused", () => {
    const abs = bsdTar(base, ["-P", join(work, "outside.txt")]);
    assertSandboxError(() => native.tarReadFile(abs, "outside.txt", 100, display), "docker_command_failed", /unsafe entry name/);
    const up = bsdTar(join(base, "inner"), ["-P", "../a.txt"]);
    assertSandboxError(() => native.tarReadFile(up, "a.txt", 100, display), "docker_command_failed", /unsafe entry name/);
  });

  test("a symlink, a directory, a hard link or a fifo is not a regular file", () => {
    const link = gnuTar(base, ["link"]);
    assertSandboxError(
      () => native.tarReadFile(link, "link", 100, "/workspace/link"),
      "invalid_path",
      "Sandbox path is not a regular file: /workspace/link",
    );
    const sub = gnuTar(base, ["sub"]);
    assertSandboxError(
      () => native.tarReadFile(sub, "sub", 100, "/workspace/sub"),
      "invalid_path",
      "Sandbox path is not a regular file: /workspace/sub",
    );
    const hard = concat([header({ name: "h", type: "1", linkname: "a.txt" }), END]);
    assertSandboxError(() => native.tarReadFile(hard, "h", 100, "/h"), "invalid_path");
    const fifo = concat([header({ name: "p", type: "6" }), END]);
    assertSandboxError(() => native.tarReadFile(fifo, "p", 100, "/p"), "invalid_path");
    const chr = concat([header({ name: "c", type: "3" }), END]);
    assertSandboxError(() => native.tarReadFile(chr, "c", 100, "/c"), "invalid_path");
  });

  test("a second entry is refused", () => {
    const bytes = gnuTar(base, ["a.txt", "b.txt"]);
    assertSandboxError(
      () => native.tarReadFile(bytes, "a.txt", 100, display),
      "docker_command_failed",
      `Docker engine returned a malformed archive for ${display}: more than one entry`,
    );
    const withDir = gnuTar(base, ["a.txt", "sub"]);
    assertSandboxError(() => native.tarReadFile(withDir, "a.txt", 100, display), "docker_command_failed", /more than one entry/);
  });

  test("a name other than the expected one is refused", () => {
    const bytes = gnuTar(base, ["b.txt"]);
    assertSandboxError(
      () => native.tarReadFile(bytes, "a.txt", 100, display),
      "docker_command_failed",
      `Docker engine returned a malformed archive for ${display}: unexpected entry "b.txt"`,
    );
    const dotted = gnuTar(base, ["./a.txt"]);
    assertSandboxError(() => native.tarReadFile(dotted, "a.txt", 100, display), "docker_command_failed", /unexpected entry/);
  });

  test("data shorter than the header says, at every cut", () => {
    const bytes = gnuTar(base, ["big.txt"]);
    for (let cut = 1; cut < 512 + 2000; cut += 37) {
      assertSandboxError(
        () => native.tarReadFile(bytes.subarray(0, cut), "big.txt", 1 << 20, "/w/big.txt"),
        "docker_command_failed",
        /^Docker engine returned a malformed archive for \/w\/big\.txt: /,
      );
    }
    assertSandboxError(
      () => native.tarReadFile(bytes.subarray(0, 1000), "big.txt", 1 << 20, "/w/big.txt"),
      "docker_command_failed",
      "Docker engine returned a malformed archive for /w/big.txt: Truncated tar archive",
    );
  });

  test("an archive that ends right after the file's padding (no end blocks) is read", () => {
    const bytes = gnuTar(base, ["a.txt"]);
    assert.equal(Buffer.from(native.tarReadFile(bytes.subarray(0, 1024), "a.txt", 100, display)).toString(), "alpha\n");
  });

  test("the tar bomb: a header announcing 1 GiB in a small buffer is refused before any allocation", () => {
    const bomb = concat([header({ name: "bomb", size: 1 << 30 }), new Uint8Array(512)]);
    const before = process.memoryUsage().rss;
    assertSandboxError(
      () => native.tarReadFile(bomb, "bomb", 10 * 1024 * 1024, "/workspace/bomb"),
      "file_too_large",
      "Sandbox file exceeds maxFileBytes (1073741824 > 10485760): /workspace/bomb",
    );
    // Even with a limit above the announced size, only the bytes present are stored.
    assertSandboxError(
      () => native.tarReadFile(bomb, "bomb", 2 ** 40, "/workspace/bomb"),
      "docker_command_failed",
      /Truncated tar archive/,
    );
    assert.ok(process.memoryUsage().rss - before < 256 * 1024 * 1024);
  });

  test("sizes announced through pax records and base-256 fields are checked too", () => {
    const viaPax = concat([paxHeader({ size: "8589934592" }), header({ name: "huge", size: 1 }), pad(enc.encode("x")), END]);
    assertSandboxError(
      () => native.tarReadFile(viaPax, "huge", 1000, "/huge"),
      "file_too_large",
      "Sandbox file exceeds maxFileBytes (8589934592 > 1000): /huge",
    );
    const sizeField = new Uint8Array(12);
    sizeField[0] = 0x80;
    sizeField[6] = 0x01; // 2^40
    const base256 = concat([header({ name: "huge", sizeField }), END]);
    assert.deepEqual(native.tarPeek(base256), { name: "huge", kind: "file", size: 2 ** 40 });
    assertSandboxError(
      () => native.tarReadFile(base256, "huge", 1000, "/huge"),
      "file_too_large",
      "Sandbox file exceeds maxFileBytes (1099511627776 > 1000): /huge",
    );
  });

  test("pax and GNU long-name headers are bounded (libarchive refuses more than 1 MiB)", () => {
    for (const [type, size] of [["x", 2 ** 31], ["x", 2 ** 20 + 1], ["g", 2 ** 31], ["L", 2 ** 31], ["K", 2 ** 33]]) {
      const bytes = concat([header({ name: "PaxHeader/x", type, size }), new Uint8Array(4096)]);
      const before = process.memoryUsage().rss;
      assertSandboxError(
        () => native.tarReadFile(bytes, "x", 100, "/x"),
        "docker_command_failed",
        "Docker engine returned a malformed archive for /x: Special header too large",
      );
      assertSandboxError(() => native.tarPeek(bytes), "docker_command_failed", /Special header too large/);
      assert.ok(process.memoryUsage().rss - before < 64 * 1024 * 1024);
    }
    const cut = concat([header({ name: "PaxHeader/x", type: "x", size: 2 ** 20 }), new Uint8Array(4096)]);
    assert.equal(native.tarPeek(cut), null);
    assertSandboxError(
      () => native.tarReadFile(cut, "x", 100, "/x"),
      "docker_command_failed",
      "Docker engine returned a malformed archive for /x: Truncated tar archive",
    );
  });

  test("garbage bytes are a malformed archive", () => {
    let seed = 12345;
    const random = (n) =>
      new Uint8Array(n).map(() => {
        seed = (seed * 1103515245 + 12345) & 0x7fffffff;
        return seed >> 16;
      });
    for (const n of [1, 100, 511, 512, 1024, 10000]) {
      assertSandboxError(
        () => native.tarReadFile(random(n), "a.txt", 100, display),
        "docker_command_failed",
        /^Docker engine returned a malformed archive for \/workspace\/a\.txt: /,
      );
    }
    assertSandboxError(
      () => native.tarReadFile(enc.encode("{\"message\":\"No such container\"}\n"), "a.txt", 100, display),
      "docker_command_failed",
    );
    const badSum = header({ name: "a.txt", size: 1 });
    badSum[148] = 0x37;
    assertSandboxError(() => native.tarReadFile(concat([badSum, pad(enc.encode("x")), END]), "a.txt", 100, display), "docker_command_failed");
  });

  test("an empty archive is malformed", () => {
    for (const bytes of [new Uint8Array(0), END, new Uint8Array(10240)]) {
      assertSandboxError(
        () => native.tarReadFile(bytes, "a.txt", 100, display),
        "docker_command_failed",
        /^Docker engine returned a malformed archive for \/workspace\/a\.txt: /,
      );
    }
  });

  test("gzip is not unpacked: only plain tar is read", () => {
    const gz = new Uint8Array(run("tar", ["-czf", "-", "a.txt"], { cwd: base }).bytes);
    assertSandboxError(() => native.tarReadFile(gz, "a.txt", 100, display), "docker_command_failed");
  });

  test("argument checks", () => {
    assert.throws(() => native.tarReadFile("x", "a", 1, "/a"), TypeError);
    assert.throws(() => native.tarReadFile(new Uint8Array(0), "a", -1, "/a"), TypeError);
  });
});

// ---- tarPeek ----------------------------------------------------------------------------

describe("tarPeek", () => {
  const base = freshDir();
  writeFileSync(join(base, "a.txt"), "alpha\n".repeat(300));
  mkdirSync(join(base, "sub"));
  symlinkSync("a.txt", join(base, "link"));
  const longName = `${"l".repeat(120)}.txt`;
  writeFileSync(join(base, longName), "long");

  // Every prefix: null until the first real header is complete, then that header.
  function assertEveryPrefix(bytes, expected) {
    const end = firstHeaderEnd(bytes);
    assert.ok(end > 0);
    for (let i = 0; i <= bytes.length; i++) {
      const got = native.tarPeek(bytes.subarray(0, i));
      if (i < end) assert.equal(got, null, `prefix ${i} of ${bytes.length} (header complete at ${end})`);
      else assert.deepEqual(got, expected, `prefix ${i}`);
    }
  }

  test("a GNU tar ustar archive", () => {
    assertEveryPrefix(gnuTar(base, ["--format=ustar", "a.txt"]), { name: "a.txt", kind: "file", size: 1800 });
  });

  test("a GNU tar posix archive: the pax header before the real one", () => {
    const bytes = gnuTar(base, ["--format=posix", "a.txt"]);
    assert.equal(rawHeaders(bytes)[0].type, "x");
    assert.equal(firstHeaderEnd(bytes), 1536);
    assertEveryPrefix(bytes, { name: "a.txt", kind: "file", size: 1800 });
  });

  test("a GNU long name header before the real one", () => {
    const bytes = gnuTar(base, ["--format=gnu", longName]);
    assert.equal(rawHeaders(bytes)[0].type, "L");
    assertEveryPrefix(bytes, { name: longName, kind: "file", size: 4 });
  });

  test("a pax long name built by us", () => {
    const name = `${"p".repeat(200)}/${"q".repeat(150)}`;
    const bytes = native.tarBuild([file(name, "zz")]);
    assertEveryPrefix(bytes, { name: name.slice(0, 255), kind: "file", size: 2 });
  });

  test("a pax global header, then a pax header, then the entry", () => {
    const bytes = concat([
      paxHeader({ comment: "c".repeat(700) }).map((b, i) => (i === 156 ? 0x67 : b)),
      paxHeader({ path: "from-pax.txt", size: "3" }),
      header({ name: "ustar-name", size: 1 }),
      pad(enc.encode("abc")),
      END,
    ]);
    // The type byte changed: fix the checksum of the first header.
    const h = bytes.subarray(0, 512);
    h.fill(0x20, 148, 156);
    h.set(Buffer.from(`${h.reduce((a, b) => a + b, 0).toString(8).padStart(6, "0")}\u0000 `, "latin1"), 148);
    assert.equal(rawHeaders(bytes)[0].type, "g");
    assertEveryPrefix(bytes, { name: "from-pax.txt", kind: "file", size: 3 });
    assert.equal(Buffer.from(native.tarReadFile(bytes, "from-pax.txt", 10, "/x")).toString(), "abc");
  });

  test("bsdtar archives", () => {
    for (const format of ["ustar", "pax", "gnutar"]) {
      assertEveryPrefix(bsdTar(base, ["--format", format, "a.txt"]), { name: "a.txt", kind: "file", size: 1800 });
      // (ustar has no room for a 124-byte name without a slash: bsdtar skips the entry.)
      if (format !== "ustar") {
        assertEveryPrefix(bsdTar(base, ["--format", format, longName]), { name: longName, kind: "file", size: 4 });
      }
    }
  });

  test("kinds: directory, symlink, hard link, fifo", () => {
    assertEveryPrefix(gnuTar(base, ["--no-recursion", "sub"]), { name: "sub/", kind: "directory", size: 0 });
    assertEveryPrefix(gnuTar(base, ["link"]), { name: "link", kind: "symlink", size: 0 });
    assert.deepEqual(native.tarPeek(concat([header({ name: "h", type: "1", linkname: "a" }), END])), {
      name: "h",
      kind: "other",
      size: 0,
    });
    assert.deepEqual(native.tarPeek(concat([header({ name: "p", type: "6" }), END])), { name: "p", kind: "other", size: 0 });
    assert.equal(lstatSync(join(base, "link")).isSymbolicLink(), true);
  });

  test("an old v7 header (no ustar magic) peeks as libarchive reads it", () => {
    const v7 = header({ name: "hello.txt", size: 2 });
    v7.set(new TextEncoder().encode("XXXXXX"), 257);
    let sum = 0;
    v7.fill(0x20, 148, 156);
    for (const b of v7.subarray(0, 512)) sum += b;
    v7.set(new TextEncoder().encode(sum.toString(8).padStart(6, "0") + "\0 "), 148);
    for (let i = 0; i < 512; i += 64) assert.equal(native.tarPeek(v7.subarray(0, i)), null);
    const whole = concat([v7, new Uint8Array(512), END]);
    whole.set(new TextEncoder().encode("hi"), 512);
    assert.deepEqual(native.tarPeek(whole), { name: "hello.txt", kind: "file", size: 2 });
    assert.equal(new TextDecoder().decode(native.tarReadFile(whole, "hello.txt", 100, "hello.txt")), "hi");
  });

  test("names longer than 255 bytes are truncated in the peek", () => {
    const name = "n".repeat(400);
    const bytes = native.tarBuild([file(name, "x")]);
    assert.equal(native.tarPeek(bytes).name, "n".repeat(255));
  });

  test("garbage is refused once a whole header block is in (libarchive is the judge)", () => {
    const junk = new Uint8Array(2048).fill(0x41);
    for (let i = 0; i < 512; i += 10) assert.equal(native.tarPeek(junk.subarray(0, i)), null);
    for (const n of [512, 1024, 2048]) {
      assertSandboxError(() => native.tarPeek(junk.subarray(0, n)), "docker_command_failed", /^Docker engine returned a malformed archive: /);
    }
    const badSum = header({ name: "a.txt", size: 1 });
    badSum[148] = 0x37;
    assertSandboxError(() => native.tarPeek(badSum), "docker_command_failed");
  });

  test("an empty archive is refused once its end marker is complete", () => {
    assertSandboxError(
      () => native.tarPeek(END),
      "docker_command_failed",
      "Docker engine returned a malformed archive: the archive is empty",
    );
    // One zero block alone could still be followed by anything: not a verdict yet.
    assert.equal(native.tarPeek(END.subarray(0, 512)), null);
  });
});
