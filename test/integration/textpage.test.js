// runtime.readTextFilePage on a real engine: files written with writeFile, read back as
// pages, and compared with page objects pinned from the original package's
// createTextFilePage (decode the whole file strictly, drop one leading BOM, then page).
import test, { after, before } from "node:test";
import assert from "node:assert/strict";
import { DockerSandboxClient, DockerSandboxError } from "../../lib/index.js";
import { baseOptions } from "../helpers/docker.js";

const client = new DockerSandboxClient();
const MAX_SAFE = Number.MAX_SAFE_INTEGER;

let sandbox;
before(async () => {
  sandbox = await client.createSandbox(baseOptions());
});
after(async () => {
  await sandbox?.destroy();
});

const page = (content, startLine, endLine, nextStartLine, truncatedBy) => ({
  content,
  startLine,
  endLine,
  nextStartLine,
  truncated: truncatedBy !== null,
  truncatedBy,
});

// "line 1\n" ... "line N\n", for from..to inclusive.
const numbered = (from, to) => Array.from({ length: to - from + 1 }, (_, i) => `line ${from + i}\n`).join("");

const FILES = {
  "pages/small.txt": "ab\ncd\nef\n",
  "pages/empty.txt": "",
  "pages/nonl.txt": "a\nb\nc",
  "pages/multi.txt": "aé\na€b\nx😀y\n", // lines of 4, 6 and 7 bytes: 2-, 3- and 4-byte characters
  "pages/emoji.txt": "😀\n",
  "pages/cut-after-newline.txt": "é\n😀\n",
  "pages/bom.txt": "\uFEFFfirst\nsecond\n",
  "pages/bom2.txt": "\uFEFF\uFEFFx\n",
  "pages/midbom.txt": "a\n\uFEFFbcd\n",
  "pages/crlf.txt": "a\r\nb\r\n",
  "pages/lines600.txt": numbered(1, 600),
  "pages/lines500.txt": numbered(1, 500),
  "pages/wide.txt": `${"x".repeat(199)}\n`.repeat(500), // 200-byte lines, 100 000 bytes
  "pages/wide256.txt": `${"y".repeat(255)}\n`.repeat(300), // 256-byte lines: 65 536 is a line boundary
};

// [file, options, expected page]
const CASES = [
  // Defaults: startLine 1, lineCount 500, maxBytes 65 536.
  ["pages/small.txt", {}, page("ab\ncd\nef\n", 1, 3, null, null)],
  ["pages/lines600.txt", {}, page(numbered(1, 500), 1, 500, 501, "lines")],
  ["pages/lines600.txt", { startLine: 501 }, page(numbered(501, 600), 501, 600, null, null)],
  ["pages/lines600.txt", { startLine: 500, lineCount: 1 }, page("line 500\n", 500, 500, 501, "lines")],
  ["pages/lines500.txt", {}, page(numbered(1, 500), 1, 500, null, null)],
  ["pages/wide.txt", {}, page(`${"x".repeat(199)}\n`.repeat(327) + "x".repeat(136), 1, 328, null, "bytes")],
  ["pages/wide256.txt", {}, page(`${"y".repeat(255)}\n`.repeat(256), 1, 256, 257, "bytes")],
  ["pages/wide256.txt", { startLine: 257 }, page(`${"y".repeat(255)}\n`.repeat(44), 257, 300, null, null)],
  // Lines truncation.
  ["pages/small.txt", { lineCount: 2 }, page("ab\ncd\n", 1, 2, 3, "lines")],
  ["pages/small.txt", { lineCount: 3 }, page("ab\ncd\nef\n", 1, 3, null, null)],
  ["pages/small.txt", { startLine: 2, lineCount: 1 }, page("cd\n", 2, 2, 3, "lines")],
  ["pages/small.txt", { startLine: 3 }, page("ef\n", 3, 3, null, null)],
  ["pages/small.txt", { lineCount: MAX_SAFE }, page("ab\ncd\nef\n", 1, 3, null, null)],
  // startLine past the end.
  ["pages/small.txt", { startLine: 4 }, page("", 4, null, null, null)],
  ["pages/small.txt", { startLine: 100 }, page("", 100, null, null, null)],
  ["pages/small.txt", { startLine: MAX_SAFE, lineCount: MAX_SAFE, maxBytes: MAX_SAFE }, page("", MAX_SAFE, null, null, null)],
  // Bytes truncation.
  ["pages/small.txt", { maxBytes: 1 }, page("a", 1, 1, null, "bytes")],
  ["pages/small.txt", { maxBytes: 3 }, page("ab\n", 1, 1, 2, "bytes")],
  ["pages/small.txt", { maxBytes: 4 }, page("ab\nc", 1, 2, null, "bytes")],
  ["pages/small.txt", { maxBytes: 8 }, page("ab\ncd\nef", 1, 3, null, "bytes")],
  ["pages/small.txt", { maxBytes: 9 }, page("ab\ncd\nef\n", 1, 3, null, null)],
  ["pages/small.txt", { startLine: 2, lineCount: 2, maxBytes: 4 }, page("cd\ne", 2, 3, null, "bytes")],
  ["pages/small.txt", { startLine: 2, maxBytes: 3 }, page("cd\n", 2, 2, 3, "bytes")],
  // Empty file.
  ["pages/empty.txt", {}, page("", 1, null, null, null)],
  ["pages/empty.txt", { startLine: 5, lineCount: 1, maxBytes: 1 }, page("", 5, null, null, null)],
  // No trailing newline.
  ["pages/nonl.txt", {}, page("a\nb\nc", 1, 3, null, null)],
  ["pages/nonl.txt", { startLine: 3 }, page("c", 3, 3, null, null)],
  ["pages/nonl.txt", { lineCount: 2 }, page("a\nb\n", 1, 2, 3, "lines")],
  ["pages/nonl.txt", { maxBytes: 5 }, page("a\nb\nc", 1, 3, null, null)],
  ["pages/nonl.txt", { maxBytes: 4 }, page("a\nb\n", 1, 2, 3, "bytes")],
  ["pages/nonl.txt", { startLine: 3, maxBytes: 1 }, page("c", 3, 3, null, null)],
  // Multibyte characters cut at maxBytes: an incomplete character is left out.
  ["pages/multi.txt", {}, page("aé\na€b\nx😀y\n", 1, 3, null, null)],
  ["pages/multi.txt", { lineCount: 1, maxBytes: 2 }, page("a", 1, 1, null, "bytes")],
  ["pages/multi.txt", { lineCount: 1, maxBytes: 3 }, page("aé", 1, 1, null, "bytes")],
  ["pages/multi.txt", { startLine: 2, lineCount: 1, maxBytes: 2 }, page("a", 2, 2, null, "bytes")],
  ["pages/multi.txt", { startLine: 2, lineCount: 1, maxBytes: 3 }, page("a", 2, 2, null, "bytes")],
  ["pages/multi.txt", { startLine: 2, lineCount: 1, maxBytes: 4 }, page("a€", 2, 2, null, "bytes")],
  ["pages/multi.txt", { startLine: 2, lineCount: 1, maxBytes: 5 }, page("a€b", 2, 2, null, "bytes")],
  ["pages/multi.txt", { startLine: 3, lineCount: 1, maxBytes: 2 }, page("x", 3, 3, null, "bytes")],
  ["pages/multi.txt", { startLine: 3, lineCount: 1, maxBytes: 3 }, page("x", 3, 3, null, "bytes")],
  ["pages/multi.txt", { startLine: 3, lineCount: 1, maxBytes: 4 }, page("x", 3, 3, null, "bytes")],
  ["pages/multi.txt", { startLine: 3, lineCount: 1, maxBytes: 5 }, page("x😀", 3, 3, null, "bytes")],
  ["pages/multi.txt", { maxBytes: 10 }, page("aé\na€b\n", 1, 2, 3, "bytes")],
  ["pages/emoji.txt", { maxBytes: 3 }, page("", 1, null, null, "bytes")],
  ["pages/emoji.txt", { maxBytes: 4 }, page("😀", 1, 1, null, "bytes")],
  ["pages/cut-after-newline.txt", { maxBytes: 5 }, page("é\n", 1, 1, 2, "bytes")],
  // A BOM at the start is dropped before paging (and does not count against maxBytes).
  ["pages/bom.txt", {}, page("first\nsecond\n", 1, 2, null, null)],
  ["pages/bom.txt", { maxBytes: 6 }, page("first\n", 1, 1, 2, "bytes")],
  ["pages/bom.txt", { startLine: 2, lineCount: 1 }, page("second\n", 2, 2, null, null)],
  ["pages/bom2.txt", {}, page("\uFEFFx\n", 1, 1, null, null)],
  // A BOM that starts a later page: kept whole, dropped when the page is cut by bytes.
  ["pages/midbom.txt", { startLine: 2, lineCount: 1, maxBytes: 100 }, page("\uFEFFbcd\n", 2, 2, null, null)],
  ["pages/midbom.txt", { startLine: 2, lineCount: 1, maxBytes: 5 }, page("bc", 2, 2, null, "bytes")],
  // CR is not a line break.
  ["pages/crlf.txt", { startLine: 2 }, page("b\r\n", 2, 2, null, null)],
  ["pages/crlf.txt", { maxBytes: 2 }, page("a\r", 1, 1, null, "bytes")],
  // undefined and null options take the defaults (the original's `??`).
  ["pages/lines600.txt", { startLine: undefined, lineCount: undefined, maxBytes: undefined }, page(numbered(1, 500), 1, 500, 501, "lines")],
  ["pages/lines600.txt", { startLine: null, lineCount: null, maxBytes: null }, page(numbered(1, 500), 1, 500, 501, "lines")],
  // The path is normalized like every other.
  ["./pages//x/../small.txt", { lineCount: 1 }, page("ab\n", 1, 1, 2, "lines")],
];

test("pages of real files match the original's paging, case by case", async () => {
  await Promise.all(Object.entries(FILES).map(([path, text]) => sandbox.runtime.writeFile({ path, data: Buffer.from(text, "utf8") })));
  const pages = await Promise.all(
    CASES.map(([path, options]) =>
      sandbox.runtime.readTextFilePage({ path, ...options }).then(
        (value) => ({ value }),
        (error) => ({ error }),
      ),
    ),
  );
  const failures = [];
  CASES.forEach(([path, options, expected], i) => {
    const { value, error } = pages[i];
    try {
      assert.equal(error, undefined, `rejected: ${error}`);
      assert.deepEqual(value, expected);
    } catch (failure) {
      failures.push(`${path} ${JSON.stringify(options)}: ${failure.message}`);
    }
  });
  assert.deepEqual(failures, []);
});

test("paging through a file with nextStartLine visits every line exactly once", async () => {
  const text = numbered(1, 37);
  await sandbox.runtime.writeFile({ path: "pages/walk.txt", data: Buffer.from(text) });
  let content = "";
  let startLine = 1;
  let pagesRead = 0;
  for (;;) {
    const current = await sandbox.runtime.readTextFilePage({ path: "pages/walk.txt", startLine, lineCount: 10 });
    assert.equal(current.startLine, startLine);
    content += current.content;
    pagesRead += 1;
    if (current.nextStartLine === null) break;
    assert.ok(current.nextStartLine > startLine);
    startLine = current.nextStartLine;
  }
  assert.equal(content, text);
  assert.equal(pagesRead, 4); // lines 1-10, 11-20, 21-30, 31-37
});

test("invalid UTF-8 anywhere in the file rejects with TextDecoder's TypeError", async () => {
  const files = {
    "pages/bad-start.txt": Buffer.from([0xff, 0x0a, 0x61, 0x0a]),
    // Only line 3 is bad; the original decodes the whole file before paging.
    "pages/bad-later.txt": Buffer.concat([Buffer.from("good\nfine\n"), Buffer.from([0xe2, 0x82, 0x0a])]),
    "pages/bad-end.txt": Buffer.from([0x61, 0x0a, 0xf0, 0x9f, 0x98]),
  };
  await Promise.all(Object.entries(files).map(([path, data]) => sandbox.runtime.writeFile({ path, data })));
  for (const path of Object.keys(files)) {
    await assert.rejects(sandbox.runtime.readTextFilePage({ path, startLine: 1, lineCount: 1 }), (error) => {
      assert.ok(error instanceof TypeError, `${path}: ${error}`);
      assert.equal(error.code, "ERR_ENCODING_INVALID_ENCODED_DATA");
      return true;
    });
  }
});

test("validation: RangeErrors with the original's messages, checked in its order, before any I/O", async () => {
  const rt = sandbox.runtime;
  const startLine = "startLine must be a positive safe integer.";
  const lineCount = "lineCount must be a positive safe integer.";
  const maxBytes = "maxBytes must be a positive safe integer.";
  const path = "pages/small.txt";
  const cases = [
    [undefined, TypeError, "options must be an object."],
    [[], TypeError, "options must be an object."],
    [{ path: "" }, DockerSandboxError, "Sandbox path cannot be empty."],
    [{ path: "../x", startLine: 0 }, DockerSandboxError, "Sandbox path cannot leave the workspace: ../x"],
    [{ path: ".", startLine: 0 }, DockerSandboxError, "Sandbox path must refer to a file or directory inside the workspace."],
    [{ path, startLine: 0 }, RangeError, startLine],
    [{ path, startLine: -1 }, RangeError, startLine],
    [{ path, startLine: 1.5 }, RangeError, startLine],
    [{ path, startLine: "1" }, RangeError, startLine],
    [{ path, startLine: Number.NaN }, RangeError, startLine],
    [{ path, startLine: Infinity }, RangeError, startLine],
    [{ path, startLine: 2 ** 53 }, RangeError, startLine],
    [{ path, startLine: 1n }, RangeError, startLine],
    [{ path, lineCount: 0 }, RangeError, lineCount],
    [{ path, lineCount: -3 }, RangeError, lineCount],
    [{ path, lineCount: 0.5 }, RangeError, lineCount],
    [{ path, maxBytes: 0 }, RangeError, maxBytes],
    [{ path, maxBytes: 2 ** 53 }, RangeError, maxBytes],
    [{ path, maxBytes: "65536" }, RangeError, maxBytes],
    [{ path, startLine: 0, lineCount: 0, maxBytes: 0 }, RangeError, startLine],
    [{ path, lineCount: 0, maxBytes: 0 }, RangeError, lineCount],
    // Checked before the file is looked at: a missing file gives the RangeError.
    [{ path: "pages/missing.txt", maxBytes: -1 }, RangeError, maxBytes],
  ];
  for (const [options, type, message] of cases) {
    let promise;
    assert.doesNotThrow(() => {
      promise = rt.readTextFilePage(options);
    });
    await assert.rejects(promise, (error) => {
      assert.ok(error instanceof type, `${JSON.stringify(options, (k, v) => (typeof v === "bigint" ? `${v}n` : v))}: ${error}`);
      assert.equal(error.message, message);
      if (type === DockerSandboxError) assert.equal(error.code, "invalid_path");
      return true;
    });
  }
  // A missing file with valid options fails at the read.
  await assert.rejects(rt.readTextFilePage({ path: "pages/missing.txt" }), { name: "DockerSandboxError", code: "docker_command_failed" });
  // An aborted signal rejects with its reason.
  const reason = new Error("no page");
  await assert.rejects(rt.readTextFilePage({ path: "pages/small.txt", abortSignal: AbortSignal.abort(reason) }), (e) => e === reason);
});
