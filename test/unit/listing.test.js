// The directory listing parser, checked against the original package's listFiles parsing
// (strict decode, split on "\n", parseFindEntry) extended with stat's %F type words.
import assert from "node:assert/strict";
import path from "node:path";
import { before, describe, test } from "node:test";

import { decodeUtf8 } from "../../lib/errors.js";
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
function parseFindEntry(line, workdir) {
  const [absolutePath, rawType, rawSize] = line.split("\t");
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
function originalListing(bytes, workdir) {
  const output = decodeUtf8(bytes);
  return output
    .split("\n")
    .filter((line) => line.length > 0)
    .map((line) => parseFindEntry(line, workdir));
}

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

function both(input, workdir = "/workspace") {
  const bytes = typeof input === "string" ? Buffer.from(input) : input;
  return [outcome(() => native.parseListing(bytes, workdir)), outcome(() => originalListing(bytes, workdir))];
}

before(() => {
  // path.posix.relative resolves a relative listed path against process.cwd(); the C
  // port resolves it against "/".
  process.chdir("/");
});

describe("parseListing", () => {
  test("GNU find -printf '%p\\t%y\\t%s\\n' output", () => {
    const output =
      "/workspace/a.txt\tf\t12\n/workspace/dir\td\t4096\n/workspace/link\tl\t7\n/workspace/fifo\tp\t0\n" +
      "/workspace/sock\ts\t0\n/workspace/empty\tf\t0\n";
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

  test("busybox stat -c '%n\\t%F\\t%s' output", () => {
    const output =
      "/workspace/a.txt\tregular file\t12\n/workspace/empty\tregular empty file\t0\n" +
      "/workspace/dir\tdirectory\t4096\n/workspace/link\tsymbolic link\t7\n/workspace/sock\tsocket\t0\n" +
      "/workspace/fifo\tfifo\t0\n/workspace/dev\tcharacter special file\t0\n";
    const [got, want] = both(output);
    assert.deepEqual(got, want);
    assert.deepEqual(got.value, [
      { path: "a.txt", type: "file", size: 12 },
      { path: "empty", type: "file", size: 0 },
      { path: "dir", type: "directory" },
      { path: "link", type: "symlink" },
      { path: "sock", type: "other" },
      { path: "fifo", type: "other" },
      { path: "dev", type: "other" },
    ]);
  });

  const table = [
    ["empty output", ""],
    ["only newlines", "\n\n\n"],
    ["empty lines between entries", "\n/workspace/a\tf\t1\n\n\n/workspace/b\td\t2\n\n"],
    ["no final newline", "/workspace/a\tf\t1"],
    ["missing size", "/workspace/a\tf\n"],
    ["missing type and size", "/workspace/a\n"],
    ["missing fields after good lines", "/workspace/a\tf\t1\n/workspace/b\n"],
    ["a line of only CR", "\r\n"],
    ["a line of only tabs", "\t\t\n"],
    ["extra fields are ignored", "/workspace/a\tf\t12\textra\tmore\n"],
    ["CRLF line ends: the CR is whitespace in the size", "/workspace/a\tf\t12\r\n/workspace/b\td\t1\r\n"],
    ["empty size is 0", "/workspace/a\tf\t\n"],
    ["whitespace size is 0", "/workspace/a\tf\t  \n"],
    ["size with spaces", "/workspace/a\tf\t 42 \n"],
    ["size with a non-breaking space", "/workspace/a\tf\t\u00a042\u3000\n"],
    ["hex size", "/workspace/a\tf\t0x1F\n"],
    ["exponent size", "/workspace/a\tf\t1e3\n"],
    ["fractional size", "/workspace/a\tf\t1.5\n"],
    ["integral fraction", "/workspace/a\tf\t12.000\n"],
    ["negative size", "/workspace/a\tf\t-1\n"],
    ["largest safe size", "/workspace/a\tf\t9007199254740991\n"],
    ["unsafe size", "/workspace/a\tf\t9007199254740992\n"],
    ["size rounding down to safe", "/workspace/a\tf\t9007199254740991.4\n"],
    ["word size", "/workspace/a\tf\tabc\n"],
    ["Infinity size", "/workspace/a\tf\tInfinity\n"],
    ["size of a directory is dropped", "/workspace/d\td\t4096\n"],
    ["size of a symlink is dropped", "/workspace/l\tsymbolic link\t9\n"],
    ["nested path", "/workspace/a/b/c.txt\tf\t1\n"],
    ["non-ASCII names", "/workspace/é😀 x\tf\t3\n/workspace/日本\td\t0\n"],
    ["backslash in a name becomes a slash", "/workspace/a\\b\tf\t1\n"],
    ["dot segments in the path", "/workspace/./a/../b\tf\t1\n"],
    ["trailing slash", "/workspace/dir/\td\t0\n"],
    ["path equal to the workdir", "/workspace\td\t4096\n"],
    ["path equal to the workdir with a slash", "/workspace/\td\t4096\n"],
    ["path equal to the workdir after good lines", "/workspace/a\tf\t1\n/workspace\td\t0\n"],
    ["path outside the workdir", "/etc/passwd\tf\t1\n"],
    ["path of a sibling with the same prefix", "/workspaces/a\tf\t1\n"],
    ["relative path", "a\tf\t1\n"],
    ["empty path", "\tf\t1\n"],
    ["NUL in a path", "/workspace/a\0b\tf\t1\n"],
    ["NUL in a size", "/workspace/a\tf\t1\0\n"],
    ["type words are exact", "/workspace/a\tF\t1\n/workspace/b\tregular  file\t1\n/workspace/c\tf \t1\n"],
    ["leading BOM is dropped by the strict decoder", "\uFEFF/workspace/a\tf\t1\n"],
    ["a BOM later is kept", "/workspace/a\tf\t1\n\uFEFF/workspace/b\tf\t1\n"],
  ];
  for (const [name, output] of table) {
    test(name, () => {
      const [got, want] = both(output);
      assert.deepEqual(got, want);
    });
  }

  test("other workdirs", () => {
    const output = "/workspace/a\tf\t1\n/home/user/x\td\t0\n/\td\t0\n/home/user/\td\t0\n";
    for (const workdir of ["/workspace/", "/home/user", "/", "/home//user/."]) {
      for (const line of output.split("\n")) {
        const [got, want] = both(line, workdir);
        assert.deepEqual(got, want, `${JSON.stringify(line)} in ${workdir}`);
      }
    }
  });

  test("errors carry the original's class, code and message", () => {
    assert.throws(() => native.parseListing(Buffer.from("/workspace/a\tf\n"), "/workspace"), (error) => {
      assert.ok(error instanceof DockerSandboxError);
      assert.equal(error.code, "docker_command_failed");
      assert.equal(error.message, "Docker returned invalid file metadata.");
      return true;
    });
    assert.throws(() => native.parseListing(Buffer.from("/workspace\td\t0\n"), "/workspace"), (error) => {
      assert.ok(error instanceof DockerSandboxError);
      assert.equal(error.code, "invalid_path");
      assert.equal(error.message, "Sandbox path cannot be empty.");
      return true;
    });
  });

  test("invalid UTF-8 is the strict decoder's TypeError", () => {
    const invalid = [
      Uint8Array.of(0xff),
      Buffer.concat([Buffer.from("/workspace/a\tf\t1\n/workspace/"), Uint8Array.of(0xc3), Buffer.from("\tf\t1\n")]),
      Buffer.concat([Buffer.from("/workspace/a\tf\t1\n"), Uint8Array.of(0xed, 0xa0, 0x80)]),
      Buffer.concat([Buffer.from("/workspace/a\tf\t1"), Uint8Array.of(0xe2, 0x82)]),
    ];
    for (const bytes of invalid) {
      const [got, want] = both(bytes);
      assert.deepEqual(got, want);
      assert.throws(() => native.parseListing(bytes, "/workspace"), {
        name: "TypeError",
        code: "ERR_ENCODING_INVALID_ENCODED_DATA",
        message: "The encoded data was not valid for encoding utf-8",
      });
    }
  });

  test("size -0 is kept (as 0; the original keeps -0)", () => {
    const [entry] = native.parseListing(Buffer.from("/workspace/a\tf\t-0\n"), "/workspace");
    assert.equal(entry.size, 0);
  });

  test("randomized: 20000 generated listings", () => {
    const next = rng(2718);
    const pick = (items) => items[Math.floor(next() * items.length)];
    const names = ["a", "b.txt", "é", "😀", ".hidden", "..", ".", "a b", "x\\y", "d/e", "", "a\0"];
    const prefixes = ["/workspace/", "/workspace", "/workspaces/", "/", "/etc/", "", "rel/", "/workspace/./", "//workspace/"];
    const types = ["f", "d", "l", "p", "s", "", "F", "regular file", "regular empty file", "directory", "symbolic link", "socket"];
    const sizes = ["0", "12", " 7 ", "", "x", "1e2", "0x1f", "0b11", "0o17", "9007199254740993", "1.0", "1.5", "-3", "\r", "+5", ".5e1"];
    for (let i = 0; i < 20000; i++) {
      const lines = [];
      const count = Math.floor(next() * 5);
      for (let j = 0; j < count; j++) {
        const fields = [pick(prefixes) + pick(names), pick(types), pick(sizes)];
        const kept = next() < 0.05 ? Math.floor(next() * 3) : next() < 0.05 ? 4 : 3;
        if (kept === 4) fields.push("extra");
        lines.push(fields.slice(0, kept).join("\t"));
      }
      let output = lines.join(next() < 0.2 ? "\n\n" : "\n");
      if (next() < 0.5) output += "\n";
      const workdir = pick(["/workspace", "/workspace/", "/"]);
      const [got, want] = both(output, workdir);
      assert.deepEqual(got, want, `${JSON.stringify(output)} in ${workdir}`);
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
