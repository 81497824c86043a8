// Strict UTF-8 validation and the text file page, checked against the platform's
// TextDecoder and against the original package's createTextFilePage.
import assert from "node:assert/strict";
import { describe, test } from "node:test";

import native from "../helpers/native.js";

// The original (seed: src/text-file.ts), with contentStartLine equal to startLine.
function createTextFilePage(text, options) {
  const relativeStart = Math.max(0, options.startLine - 1);
  const lines = splitLines(text).slice(relativeStart, relativeStart + options.lineCount + 1);
  const hasMoreLines = lines.length > options.lineCount;
  const selectedLines = lines.slice(0, options.lineCount);
  const selectedContent = selectedLines.join("");
  const selectedBytes = Buffer.from(selectedContent);
  if (selectedBytes.byteLength > options.maxBytes) {
    const content = new TextDecoder().decode(selectedBytes.subarray(0, options.maxBytes), { stream: true });
    const lineBreaks = content.match(/\n/g)?.length ?? 0;
    const endedAtLineBoundary = content.endsWith("\n");
    return {
      content,
      startLine: options.startLine,
      endLine: content.length === 0 ? null : options.startLine + lineBreaks - (endedAtLineBoundary ? 1 : 0),
      nextStartLine: endedAtLineBoundary ? options.startLine + lineBreaks : null,
      truncated: true,
      truncatedBy: "bytes",
    };
  }
  return {
    content: selectedContent,
    startLine: options.startLine,
    endLine: selectedLines.length === 0 ? null : options.startLine + selectedLines.length - 1,
    nextStartLine: hasMoreLines ? options.startLine + selectedLines.length : null,
    truncated: hasMoreLines,
    truncatedBy: hasMoreLines ? "lines" : null,
  };
}
function splitLines(text) {
  return text.match(/[^\n]*\n|[^\n]+$/g) ?? [];
}

// readTextFilePage as the original runs it: strict decode (drops one BOM), then page.
function originalPage(bytes, startLine, lineCount, maxBytes) {
  const text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  return createTextFilePage(text, { startLine, lineCount, maxBytes });
}
// The native path: validate, strip the BOM, page the bytes.
function nativePage(bytes, startLine, lineCount, maxBytes) {
  assert.ok(native.utf8Valid(bytes));
  const bom = native.utf8BomLength(bytes);
  return native.textPage(bytes.subarray(bom), startLine, lineCount, maxBytes);
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

const MAX_SAFE = Number.MAX_SAFE_INTEGER;

describe("textPage matches createTextFilePage", () => {
  // [name, text, startLine, lineCount, maxBytes]
  const cases = [
    ["empty text", "", 1, 500, 65536],
    ["empty text, later start", "", 3, 1, 1],
    ["one line without newline", "hello", 1, 500, 65536],
    ["no trailing newline, last line selected", "a\nb\nc", 3, 1, 100],
    ["trailing newline", "a\nb\n", 1, 500, 100],
    ["only newlines", "\n\n\n", 2, 1, 100],
    ["startLine beyond the end", "a\nb\n", 3, 5, 100],
    ["startLine far beyond the end", "a\nb\n", 1000, 5, 100],
    ["lineCount exactly at the end", "a\nb\nc\n", 1, 3, 100],
    ["lineCount exactly at the end, no final newline", "a\nb\nc", 1, 3, 100],
    ["lineCount one short of the end", "a\nb\nc\n", 1, 2, 100],
    ["middle page", "1\n2\n3\n4\n5\n", 2, 2, 100],
    ["maxBytes exactly the selection", "ab\ncd\n", 1, 2, 6],
    ["maxBytes one below the selection", "ab\ncd\n", 1, 2, 5],
    ["maxBytes ending exactly at a newline", "ab\ncd\nef\n", 1, 3, 3],
    ["maxBytes ending exactly at the second newline", "ab\ncd\nef\n", 1, 3, 6],
    ["maxBytes ending just after a newline", "ab\ncd\nef\n", 2, 2, 4],
    ["maxBytes of one byte", "abc\n", 1, 1, 1],
    ["maxBytes inside a 2-byte character", "aé\n", 1, 1, 2],
    ["maxBytes after a 2-byte character", "aé\n", 1, 1, 3],
    ["maxBytes inside a 3-byte character (1 of 3)", "a€b", 1, 1, 2],
    ["maxBytes inside a 3-byte character (2 of 3)", "a€b", 1, 1, 3],
    ["maxBytes after a 3-byte character", "a€b", 1, 1, 4],
    ["maxBytes inside a 4-byte character (1 of 4)", "x😀y", 1, 1, 2],
    ["maxBytes inside a 4-byte character (2 of 4)", "x😀y", 1, 1, 3],
    ["maxBytes inside a 4-byte character (3 of 4)", "x😀y", 1, 1, 4],
    ["maxBytes after a 4-byte character", "x😀y", 1, 1, 5],
    ["maxBytes inside the first character", "😀\n", 1, 1, 3],
    ["multibyte cut after a newline", "é\n😀\n", 1, 2, 5],
    ["CRLF lines", "a\r\nb\r\nc\r\n", 2, 1, 100],
    ["CRLF cut between CR and LF", "a\r\nb\r\n", 1, 2, 2],
    ["CR alone is not a line break", "a\rb\rc", 1, 1, 100],
    ["U+2028 is not a line break", "a\u2028b\nc", 1, 1, 100],
    ["BOM inside the text, lines branch", "a\n\uFEFFb\n", 2, 1, 100],
    ["BOM starting the page, bytes branch (dropped)", "a\n\uFEFFbcd\n", 2, 1, 5],
    ["BOM starting the page, cut inside it", "a\n\uFEFFbcd\n", 2, 1, 2],
    ["BOM starting the page, cut right after it", "a\n\uFEFFbcd\n", 2, 1, 3],
    ["two BOMs starting the page", "x\n\uFEFF\uFEFFb\n", 2, 1, 4],
    ["huge startLine", "a\nb\n", MAX_SAFE, 1, 100],
    ["huge lineCount", "a\nb\nc", 1, MAX_SAFE, 100],
    ["huge everything", "a\nb\nc", MAX_SAFE, MAX_SAFE, MAX_SAFE],
    ["huge maxBytes, second line", "a\nb\nc", 2, MAX_SAFE, MAX_SAFE],
    ["huge lineCount, tiny maxBytes", "abc\ndef\n", 1, MAX_SAFE, 1],
    ["NUL bytes are text", "a\0b\n\0\n", 1, 2, 100],
  ];
  for (const [name, text, startLine, lineCount, maxBytes] of cases) {
    test(name, () => {
      const options = { startLine, lineCount, maxBytes };
      assert.deepEqual(native.textPage(Buffer.from(text), startLine, lineCount, maxBytes), createTextFilePage(text, options));
    });
  }

  test("a leading BOM in the file is removed before paging (as the strict decoder does)", () => {
    for (const text of ["\uFEFFa\nb\n", "\uFEFF", "\uFEFF\uFEFFx\n", "\uFEFF😀\n"]) {
      const bytes = Buffer.from(text);
      assert.equal(native.utf8BomLength(bytes), 3);
      for (let maxBytes = 1; maxBytes <= 8; maxBytes++) {
        assert.deepEqual(nativePage(bytes, 1, 2, maxBytes), originalPage(bytes, 1, 2, maxBytes));
      }
    }
    assert.equal(native.utf8BomLength(Buffer.from("\uFEFF").subarray(0, 2)), 0);
    assert.equal(native.utf8BomLength(Buffer.from("abc")), 0);
    assert.equal(native.utf8BomLength(new Uint8Array(0)), 0);
  });

  test("randomized: 40000 pages of random texts", () => {
    const pieces = ["a", "b", "c", "\n", "\n", "\n", "\r\n", "\r", "é", "€", "😀", "\uFEFF", " ", "\0", "\u2028"];
    const next = rng(12345);
    const pick = (max) => 1 + Math.floor(next() * max);
    for (let i = 0; i < 40000; i++) {
      let text = "";
      const length = Math.floor(next() * 30);
      for (let j = 0; j < length; j++) text += pieces[Math.floor(next() * pieces.length)];
      const startLine = next() < 0.05 ? MAX_SAFE - Math.floor(next() * 3) : pick(8);
      const lineCount = next() < 0.05 ? MAX_SAFE : pick(8);
      const maxBytes = next() < 0.05 ? MAX_SAFE : pick(40);
      const options = { startLine, lineCount, maxBytes };
      assert.deepEqual(
        native.textPage(Buffer.from(text), startLine, lineCount, maxBytes),
        createTextFilePage(text, options),
        JSON.stringify({ text, ...options })
      );
    }
  });

  // Linear, not timed: a quadratic pass over 200000 lines would not end within the test's
  // timeout on any machine (the time taken is a diagnostic; the bench measures speed).
  test("big inputs stay linear: 200000 lines (3 MB), and huge counts", { timeout: 120_000 }, (t) => {
    const text = "line of text é\n".repeat(200000) + "tail";
    const bytes = Buffer.from(text);
    const cases = [
      [1, 500, 65536],
      [199990, 500, 65536],
      [200001, 1, 65536],
      [200002, 1, 65536],
      [1, MAX_SAFE, MAX_SAFE],
      [100000, MAX_SAFE, 1000],
      [MAX_SAFE, MAX_SAFE, MAX_SAFE],
    ];
    const started = performance.now();
    const pages = cases.map(([s, c, m]) => native.textPage(bytes, s, c, m));
    const elapsed = performance.now() - started;
    cases.forEach(([startLine, lineCount, maxBytes], i) => {
      assert.deepEqual(pages[i], createTextFilePage(text, { startLine, lineCount, maxBytes }));
    });
    t.diagnostic(`paging took ${elapsed.toFixed(1)} ms`);
  });

  test("arguments are validated", () => {
    assert.throws(() => native.textPage("text", 1, 1, 1), TypeError);
    assert.throws(() => native.textPage(Buffer.from("a"), 0, 1, 1), RangeError);
    assert.throws(() => native.textPage(Buffer.from("a"), 1, 1.5, 1), RangeError);
    assert.throws(() => native.textPage(Buffer.from("a"), 1, 1, 2 ** 53), RangeError);
  });
});

describe("utf8Valid accepts exactly what TextDecoder({ fatal: true }) accepts", () => {
  const decoder = new TextDecoder("utf-8", { fatal: true });
  function decodes(bytes) {
    try {
      decoder.decode(bytes);
      return true;
    } catch {
      return false;
    }
  }

  test("fixed sequences", () => {
    const cases = [
      [[], true],
      [[0x00], true],
      [[0x7f], true],
      [[0x80], false],
      [[0xbf], false],
      [[0xc0, 0x80], false], // overlong NUL
      [[0xc1, 0xbf], false], // overlong
      [[0xc2, 0x80], true],
      [[0xdf, 0xbf], true],
      [[0xc2], false], // truncated
      [[0xe0, 0x80, 0x80], false], // overlong
      [[0xe0, 0x9f, 0xbf], false], // overlong
      [[0xe0, 0xa0, 0x80], true],
      [[0xed, 0x9f, 0xbf], true], // U+D7FF
      [[0xed, 0xa0, 0x80], false], // U+D800
      [[0xed, 0xbf, 0xbf], false], // U+DFFF
      [[0xee, 0x80, 0x80], true], // U+E000
      [[0xef, 0xbf, 0xbf], true], // U+FFFF
      [[0xef, 0xbb, 0xbf], true], // BOM
      [[0xe2, 0x82], false], // truncated
      [[0xf0, 0x8f, 0xbf, 0xbf], false], // overlong
      [[0xf0, 0x90, 0x80, 0x80], true], // U+10000
      [[0xf4, 0x8f, 0xbf, 0xbf], true], // U+10FFFF
      [[0xf4, 0x90, 0x80, 0x80], false], // U+110000
      [[0xf5, 0x80, 0x80, 0x80], false],
      [[0xff], false],
      [[0xfe], false],
      [[0xf0, 0x9f, 0x98], false], // truncated
      [[0xf0, 0x9f, 0x98, 0x41], false],
      [[0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x80], false], // after the ASCII fast path
      [[0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0xc3, 0xa9], true],
    ];
    for (const [bytes, expected] of cases) {
      const array = Uint8Array.from(bytes);
      assert.equal(decodes(array), expected, `decoder on ${bytes}`);
      assert.equal(native.utf8Valid(array), expected, `utf8Valid on ${bytes}`);
    }
  });

  test("every sequence of one and two bytes", () => {
    const array = new Uint8Array(2);
    for (let a = 0; a < 256; a++) {
      assert.equal(native.utf8Valid(Uint8Array.of(a)), decodes(Uint8Array.of(a)), `${a}`);
      for (let b = 0; b < 256; b++) {
        array[0] = a;
        array[1] = b;
        assert.equal(native.utf8Valid(array), decodes(array), `${a} ${b}`);
      }
    }
  });

  test("every lead byte >= 0xC0 with every continuation-range second byte and boundary others", () => {
    const boundary = [0x00, 0x41, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc2, 0xe0, 0xff];
    const seconds = [0x00, 0x41, 0x7f, 0xc2, 0xe0, 0xf0, 0xff];
    for (let b = 0x80; b <= 0xc1; b++) seconds.push(b);
    const check = (array) => {
      if (native.utf8Valid(array) !== decodes(array)) assert.fail(`utf8Valid disagrees on ${array}`);
    };
    for (let a = 0xc0; a < 256; a++) {
      for (const b of seconds) {
        for (const c of boundary) {
          check(Uint8Array.of(a, b, c));
          if (a >= 0xf0) for (const d of [0x41, 0x80, 0xbf, 0xc0]) check(Uint8Array.of(a, b, c, d));
        }
      }
    }
  });

  test("randomized: 100000 byte arrays biased towards tricky sequences", () => {
    const next = rng(777);
    const tricky = [
      [0xc0], [0xc1], [0xc2], [0xdf], [0xe0], [0xed], [0xef], [0xf0], [0xf4], [0xf5], [0xff], [0x80], [0x8f], [0x90],
      [0x9f], [0xa0], [0xbf], [0x41], [0x0a], [0x00], [0xe2, 0x82, 0xac], [0xf0, 0x9f, 0x98, 0x80], [0xed, 0xa0, 0x80],
      [0xef, 0xbb, 0xbf], [0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41], [0xc3, 0xa9],
    ];
    let valid = 0;
    for (let i = 0; i < 100000; i++) {
      const bytes = [];
      const pieces = Math.floor(next() * 10);
      for (let j = 0; j < pieces; j++) {
        if (next() < 0.15) bytes.push(Math.floor(next() * 256));
        else bytes.push(...tricky[Math.floor(next() * tricky.length)]);
      }
      const array = Uint8Array.from(bytes);
      const expected = decodes(array);
      if (expected) valid++;
      assert.equal(native.utf8Valid(array), expected, `${bytes}`);
    }
    assert.ok(valid > 1000, "the corpus holds valid texts too");
  });

  test("a view into a larger buffer is judged on its own bytes", () => {
    const buffer = Uint8Array.of(0xff, 0x41, 0xc3, 0xa9, 0xff);
    assert.equal(native.utf8Valid(buffer.subarray(1, 4)), true);
    assert.equal(native.utf8Valid(buffer.subarray(1, 3)), false);
  });
});
