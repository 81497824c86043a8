// The directory listing parser: NUL-separated records (no name can break or fake the
// listing), each name decoded on its own, then the original package's parseFindEntry,
// extended with stat's %F type words.
import assert from "node:assert/strict";
import path from "node:path";
import { before, describe, test } from "node:test";

import native, { DockerSandboxError } from "../helpers/native.js";

// The original (seed: dist/index.js).
function normalizeSandboxPath(input, options = {}) {
  if (input.length === 0) throw new DockerSandboxError("Sandbox path cannot be empty.", "invalid_path");
  if (input.includes("\0")) throw new DockerSandboxError("Sandbox path cannot contain null bytes.", "invalid_path");
  const normalized = path.posix.normalize(input.replaceAll("\\", "/"));
  if (path.posix.isAbsolute(normalized)) {
    throw new DockerSandboxError(`Sandbox path must be relative: ${input}`, "invalid_path");
  }
  if (normalized === ".." || normalized.startsWith("../")) {
    throw new DockerSandboxError(`Sandbox path cannot leave the workspace: ${input}`, "invalid_path");
  }
  if (normalized === "." && options.allowRoot !== true) {
    throw new DockerSandboxError(
      "Sandbox path must refer to a file or directory inside the workspace.",
      "invalid_path"
    );
  }
  return normalized;
}
// The original's parseFindEntry, taking the fields the line held.
function parseFindEntry([absolutePath, rawType, rawSize], workdir) {
  if (absolutePath === void 0 || rawType === void 0 || rawSize === void 0) {
    throw new DockerSandboxError("Docker returned invalid file metadata.", "docker_command_failed");
  }
  const relativePath = path.posix.relative(workdir, absolutePath);
  const size = Number(rawSize);
  const type = mapFindType(rawType);
  let entry = { path: normalizeSandboxPath(relativePath), type };
  if (type === "file" && Number.isSafeInteger(size) && size >= 0) {
    entry = { ...entry, size };
  }
  return entry;
}
// mapFindType, plus the words `stat -c %F` prints on images without GNU find.
function mapFindType(value) {
  if (value === "f" || value === "regular file" || value === "regular empty file") return "file";
  if (value === "d" || value === "directory") return "directory";
  if (value === "l" || value === "symbolic link") return "symlink";
  return "other";
}
// The original decoded the whole output strictly and split it into lines; one bad name
// broke the listing and a name with a newline or tab faked entries. The listing is now
// NUL-separated records, "<type>\0<size>\0<path>\0", each name decoded on its own with
// ill-formed UTF-8 replaced (TextDecoder without fatal, BOM kept); the rest is the
// original's parseFindEntry.
const lossy = new TextDecoder("utf-8", { ignoreBOM: true });
function referenceListing(bytes, workdir) {
  const buf = Buffer.from(bytes);
  const fields = [];
  let start = 0;
  for (let i = 0; i < buf.length; i++) {
    if (buf[i] === 0) {
      fields.push(buf.subarray(start, i));
      start = i + 1;
    }
  }
  if (start !== buf.length || fields.length % 3 !== 0) {
    throw new DockerSandboxError("Docker returned invalid file metadata.", "docker_command_failed");
  }
  const entries = [];
  for (let i = 0; i < fields.length; i += 3) {
    const [type, size, path] = fields.slice(i, i + 3).map((f) => lossy.decode(f));
    entries.push(parseFindEntry([path, type, size], workdir));
  }
  return entries;
}
const record = (path, type, size) => `${type}\0${size}\0${path}\0`;

function outcome(fn) {
  try {
    return { value: fn() };
  } catch (error) {
    return {
      threw: error.constructor.name,
      sandboxError: error instanceof DockerSandboxError,
      message: error.message,
      code: error.code,
    };
  }
}

function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Messages reach JavaScript with their control characters escaped (issue 23, item 9: a
// name from the sandbox, "new\nline", must not read as two lines); the original's
// message otherwise.
function escapeControls(text) {
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) =>
    c === "\n" ? "\\n" : c === "\r" ? "\\r" : c === "\t" ? "\\t" : `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

function both(input, workdir = "/workspace") {
  const bytes = typeof input === "string" ? Buffer.from(input) : input;
  const want = outcome(() => referenceListing(bytes, workdir));
  if (want.message !== undefined) want.message = escapeControls(want.message);
  return [outcome(() => native.parseListing(bytes, workdir)), want];
}

before(() => {
  // path.posix.relative resolves a relative listed path against process.cwd(); the C
  // port resolves it against "/".
  process.chdir("/");
});

describe("parseListing", () => {
  test("GNU find -printf '%y\\0%s\\0%p\\0' output", () => {
    const output =
      record("/workspace/a.txt", "f", 12) + record("/workspace/dir", "d", 4096) + record("/workspace/link", "l", 7) +
      record("/workspace/fifo", "p", 0) + record("/workspace/sock", "s", 0) + record("/workspace/empty", "f", 0);
    const [got, want] = both(output);
    assert.deepEqual(got, want);
    assert.deepEqual(got.value, [
      { path: "a.txt", type: "file", size: 12 },
      { path: "dir", type: "directory" },
      { path: "link", type: "symlink" },
      { path: "fifo", type: "other" },
      { path: "sock", type: "other" },
      { path: "empty", type: "file", size: 0 },
    ]);
  });

  test("the shell loop's output (images without GNU find)", () => {
    const output =
      record("/workspace/a.txt", "f", 12) + record("/workspace/dir", "d", "") + record("/workspace/link", "l", "") +
      record("/workspace/sock", "o", "");
    const [got, want] = both(output);
    assert.deepEqual(got, want);
    assert.deepEqual(got.value, [
      { path: "a.txt", type: "file", size: 12 },
      { path: "dir", type: "directory" },
      { path: "link", type: "symlink" },
      { path: "sock", type: "other" },
    ]);
  });

  test("names with a newline, a tab or a fake record inside are one entry each", () => {
    const output =
      record("/workspace/new\nline", "f", 1) + record("/workspace/a\tb", "f", 2) +
      record("/workspace/x\n/workspace/fake\tf\t9", "f", 3);
    const [got, want] = both(output);
    assert.deepEqual(got, want);
    assert.deepEqual(got.value.map((e) => e.path), ["new\nline", "a\tb", "x\n/workspace/fake\tf\t9"]);
  });

  test("a name that is not UTF-8 is listed with U+FFFD and does not break its neighbours", () => {
    const output = Buffer.concat([
      Buffer.from(record("/workspace/a", "f", 1)),
      Buffer.from("f\x001\x00/workspace/"),
      Uint8Array.of(0xff, 0xc3, 0x41, 0xed, 0xa0, 0x80, 0xe2, 0x82),
      Buffer.from("\x00"),
      Buffer.from(record("/workspace/b", "d", "")),
    ]);
    const [got, want] = both(output);
    assert.deepEqual(got, want);
    assert.deepEqual(got.value, [
      { path: "a", type: "file", size: 1 },
      { path: "\ufffd\ufffdA\ufffd\ufffd\ufffd\ufffd", type: "file", size: 1 },
      { path: "b", type: "directory" },
    ]);
  });

  const table = [
    ["empty output", ""],
    ["a record without its last NUL", "f\x001\x00/workspace/a"],
    ["a cut record", "f\x001\x00"],
    ["one field", "f\x00"],
    ["four fields", "f\x001\x00/workspace/a\x00x\x00"],
    ["empty size is 0", record("/workspace/a", "f", "")],
    ["whitespace size is 0", record("/workspace/a", "f", "  ")],
    ["size with spaces", record("/workspace/a", "f", " 42 ")],
    ["size with a non-breaking space", record("/workspace/a", "f", "\u00a042\u3000")],
    ["hex size", record("/workspace/a", "f", "0x1F")],
    ["exponent size", record("/workspace/a", "f", "1e3")],
    ["fractional size", record("/workspace/a", "f", "1.5")],
    ["negative size", record("/workspace/a", "f", "-1")],
    ["largest safe size", record("/workspace/a", "f", "9007199254740991")],
    ["unsafe size", record("/workspace/a", "f", "9007199254740992")],
    ["word size", record("/workspace/a", "f", "abc")],
    ["size of a directory is dropped", record("/workspace/d", "d", "4096")],
    ["size of a symlink is dropped", record("/workspace/l", "symbolic link", "9")],
    ["nested path", record("/workspace/a/b/c.txt", "f", 1)],
    ["non-ASCII names", record("/workspace/é😀 x", "f", 3) + record("/workspace/日本", "d", 0)],
    ["backslash in a name becomes a slash", record("/workspace/a\\b", "f", 1)],
    ["dot segments in the path", record("/workspace/./a/../b", "f", 1)],
    ["trailing slash", record("/workspace/dir/", "d", 0)],
    ["path equal to the workdir", record("/workspace", "d", 4096)],
    ["path outside the workdir", record("/etc/passwd", "f", 1)],
    ["path of a sibling with the same prefix", record("/workspaces/a", "f", 1)],
    ["relative path", record("a", "f", 1)],
    ["empty path", record("", "f", 1)],
    ["type words are exact", record("/workspace/a", "F", 1) + record("/workspace/b", "regular  file", 1)],
    ["a BOM in a name is kept", record("\uFEFF/workspace/a", "f", 1) + record("/workspace/\uFEFFb", "f", 1)],
  ];
  for (const [name, output] of table) {
    test(name, () => {
      const [got, want] = both(output);
      assert.deepEqual(got, want);
    });
  }

  test("other workdirs", () => {
    const records = [record("/workspace/a", "f", 1), record("/home/user/x", "d", 0), record("/", "d", 0)];
    for (const workdir of ["/workspace/", "/home/user", "/", "/home//user/."]) {
      for (const r of records) {
        const [got, want] = both(r, workdir);
        assert.deepEqual(got, want, `${JSON.stringify(r)} in ${workdir}`);
      }
    }
  });

  test("errors carry the class, code and message", () => {
    assert.throws(() => native.parseListing(Buffer.from("f\x001\x00"), "/workspace"), (error) => {
      assert.ok(error instanceof DockerSandboxError);
      assert.equal(error.code, "docker_command_failed");
      assert.equal(error.message, "Docker returned invalid file metadata.");
      return true;
    });
    assert.throws(() => native.parseListing(Buffer.from(record("/workspace", "d", 0)), "/workspace"), (error) => {
      assert.ok(error instanceof DockerSandboxError);
      assert.equal(error.code, "invalid_path");
      assert.equal(error.message, "Sandbox path cannot be empty.");
      return true;
    });
  });

  test("size -0 is kept (as 0; the original keeps -0)", () => {
    const [entry] = native.parseListing(Buffer.from(record("/workspace/a", "f", "-0")), "/workspace");
    assert.equal(entry.size, 0);
  });

  test("randomized: 20000 generated listings", () => {
    const next = rng(2718);
    const pick = (items) => items[Math.floor(next() * items.length)];
    const names = ["a", "b.txt", "é", "😀", ".hidden", "..", ".", "a b", "x\\y", "d/e", "", "new\nline", "t\tab", "\udcff"];
    const prefixes = ["/workspace/", "/workspace", "/workspaces/", "/", "/etc/", "", "rel/", "/workspace/./", "//workspace/"];
    const types = ["f", "d", "l", "p", "s", "o", "", "F", "regular file", "directory", "symbolic link", "socket"];
    const sizes = ["0", "12", " 7 ", "", "x", "1e2", "0x1f", "0b11", "0o17", "9007199254740993", "1.0", "1.5", "-3", "\r", "+5", ".5e1"];
    for (let i = 0; i < 20000; i++) {
      const parts = [];
      const count = Math.floor(next() * 5);
      for (let j = 0; j < count; j++) parts.push(Buffer.from(record(pick(prefixes) + pick(names), pick(types), pick(sizes))));
      if (next() < 0.05) parts.push(Uint8Array.of(0x66, 0, 0xff, 0)); // a cut record
      if (next() < 0.1) parts.push(Buffer.concat([Buffer.from("f\x001\x00/workspace/"), Uint8Array.of(0x80 + Math.floor(next() * 0x7f)), Buffer.from("\x00")]));
      const workdir = pick(["/workspace", "/workspace/", "/"]);
      const bytes = Buffer.concat(parts);
      const [got, want] = both(bytes, workdir);
      assert.deepEqual(got, want, `${JSON.stringify(bytes.toString("latin1"))} in ${workdir}`);
    }
  });
});

describe("jsNumberSize follows Number() and Number.isSafeInteger", () => {
  function expected(raw) {
    const n = Number(raw);
    if (!(Number.isSafeInteger(n) && n >= 0)) return undefined;
    return n === 0 ? 0 : n; // -0 is reported as 0
  }
  const fixed = [
    "", " ", "\t\n\v\f\r", "0", "00012", "12", " 12 ", "\u00a012\ufeff", "\u2028 1 \u2029", "\u1680\u2000\u200a\u202f\u205f\u30003",
    "\u200b3", "1_000", "+12", "-12", "-0", "+0", "0.0", "-0.0", "1.", ".5", ".", "+.", "1e", "1e+", "1e3", "1E3", "1e-3",
    "1.5e1", "15e-1", "1e21", "1e-400", "-1e-400", "12.000000000000000000001", "9007199254740991", "9007199254740992",
    "9007199254740991.4", "9007199254740991.5", "9007199254740990.5", "0x", "0x1F", "0X1f", "0x1fffffffffffff",
    "0x20000000000000", "0xffffffffffffffffffff", "-0x10", "+0x10", "0b101", "0B2", "0o17", "0O8", "0o", "Infinity",
    "-Infinity", "+Infinity", "infinity", "NaN", "1 2", "12abc", "١٢", "１２", "0.1e1", "000000000000000000000000000000000001",
    "1" + "0".repeat(400), "0." + "0".repeat(400) + "1", "1".repeat(70),
  ];
  test("fixed strings", () => {
    for (const raw of fixed) assert.equal(native.jsNumberSize(raw), expected(raw), JSON.stringify(raw));
  });

  test("randomized: 50000 strings over a numeric alphabet", () => {
    const next = rng(31415);
    const alphabet = ["0", "1", "9", "5", ".", "e", "E", "+", "-", "x", "o", "b", "f", "F", " ", "\t", "\r", "\u00a0", "I", "n"];
    for (let i = 0; i < 50000; i++) {
      const length = Math.floor(next() * 10);
      let raw = "";
      for (let j = 0; j < length; j++) raw += alphabet[Math.floor(next() * alphabet.length)];
      assert.equal(native.jsNumberSize(raw), expected(raw), JSON.stringify(raw));
    }
  });
});
