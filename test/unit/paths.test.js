// The C ports of path.posix and of the original package's sandbox path rules, checked
// byte for byte against Node's own path.posix and against the original JavaScript.
import assert from "node:assert/strict";
import path from "node:path";
import { before, describe, test } from "node:test";

import native, { DockerSandboxError } from "../helpers/native.js";

// The original package's functions (seed: dist/index.js), for comparison.
function normalizeSandboxPath(input, options = {}) {
  if (input.length === 0) {
    throw new DockerSandboxError("Sandbox path cannot be empty.", "invalid_path");
  }
  if (input.includes("\0")) {
    throw new DockerSandboxError("Sandbox path cannot contain null bytes.", "invalid_path");
  }
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
function containerPath(workdir, relativePath) {
  const normalized = normalizeSandboxPath(relativePath, { allowRoot: true });
  return normalized === "." ? path.posix.normalize(workdir) : path.posix.join(path.posix.normalize(workdir), normalized);
}
function parentSandboxPath(relativePath) {
  const parent = path.posix.dirname(normalizeSandboxPath(relativePath));
  return parent === "." ? "." : parent;
}

// Outcome of a call: its value, or the observable parts of what it threw.
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

// A reproducible generator (mulberry32), so a failure names its seed.
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

// Weighted towards the characters the algorithms care about.
const alphabet = ["a", "b", ".", ".", ".", "/", "/", "/", "\\", "\0", "é", "😀", "€", " "];
function randomPath(next, maxLength = 14) {
  const length = Math.floor(next() * (maxLength + 1));
  let s = next() < 0.3 ? "/" : "";
  for (let i = 0; i < length; i++) s += alphabet[Math.floor(next() * alphabet.length)];
  return s;
}

// Every string of length <= n over a small alphabet.
function allStrings(chars, n) {
  const out = [""];
  let layer = [""];
  for (let len = 1; len <= n; len++) {
    const nextLayer = [];
    for (const prefix of layer) for (const c of chars) nextLayer.push(prefix + c);
    out.push(...nextLayer);
    layer = nextLayer;
  }
  return out;
}

const edgeCases = [
  "", ".", "..", "...", "./", "../", ".//", "/", "//", "///", "/.", "/..", "/../", "/./", "a", "a/", "a//",
  "a/.", "a/..", "a/../", "a/../..", "a/../../", "./a", "../a", "../../a", "a/b/../../..", "a/./b", "a/.b", "a/..b",
  "a/b..", ".a", "..a", "...a", "a/...", "/a/b/c/../../../..", "//a//b//", "a\\b", "\\", "\\..\\x", "a\0b", "\0",
  "é/../..", "😀/x/..", "/workspace", "/workspace/", "/workspace/./a/", "x/y/z/", "./././", "../../", "/..a/..",
  "a/b/c/./../d/", ".../..", "a/...//..", " /..", "/ ", "..\\..",
];

before(() => {
  // posix.relative resolves a relative argument against process.cwd(); the C port
  // resolves it against "/". Both agree when the working directory is "/".
  process.chdir("/");
});

describe("posix path functions match Node's path.posix", () => {
  const exhaustive = allStrings(["a", ".", "/"], 6);
  const random = [];
  const next = rng(20240601);
  for (let i = 0; i < 20000; i++) random.push(randomPath(next));
  const corpus = [...edgeCases, ...exhaustive, ...random];

  test(`normalize, dirname, isAbsolute on ${corpus.length} strings`, () => {
    for (const p of corpus) {
      assert.equal(native.posixNormalize(p), path.posix.normalize(p), `normalize(${JSON.stringify(p)})`);
      assert.equal(native.posixDirname(p), path.posix.dirname(p), `dirname(${JSON.stringify(p)})`);
      assert.equal(native.posixIsAbsolute(p), path.posix.isAbsolute(p), `isAbsolute(${JSON.stringify(p)})`);
    }
  });

  test("join and relative on every pair of short strings", () => {
    const small = [...allStrings(["a", ".", "/"], 4), "é", "😀/..", "a\0", "/é/a", "/😀"];
    let pairs = 0;
    for (const a of small) {
      for (const b of small) {
        assert.equal(native.posixJoin(a, b), path.posix.join(a, b), `join(${JSON.stringify(a)}, ${JSON.stringify(b)})`);
        assert.equal(
          native.posixRelative(a, b),
          path.posix.relative(a, b),
          `relative(${JSON.stringify(a)}, ${JSON.stringify(b)})`
        );
        pairs++;
      }
    }
    assert.ok(pairs > 10000);
  });

  test("join and relative on 30000 random pairs", () => {
    const next2 = rng(7);
    for (let i = 0; i < 30000; i++) {
      const a = randomPath(next2);
      const b = next2() < 0.3 ? a + randomPath(next2, 6) : randomPath(next2);
      assert.equal(native.posixJoin(a, b), path.posix.join(a, b), `join(${JSON.stringify(a)}, ${JSON.stringify(b)})`);
      assert.equal(
        native.posixRelative(a, b),
        path.posix.relative(a, b),
        `relative(${JSON.stringify(a)}, ${JSON.stringify(b)})`
      );
    }
  });

  test("relative on absolute paths sharing prefixes", () => {
    const cases = [
      ["/workspace", "/workspace/a"], ["/workspace", "/workspace"], ["/workspace", "/workspace/"],
      ["/workspace", "/workspaces/a"], ["/workspace/a", "/workspace"], ["/", "/a"], ["/a", "/"], ["/", "/"],
      ["/a/b/c", "/a/b/d/e"], ["/a/é", "/a/è"], ["/a/😀x", "/a/😀y"], ["/a/😀", "/a/😁"], ["/a//b/", "/a/b/c"],
      ["/workspace", "/workspace/../etc"], ["/workspace", "/other\0/x"], ["/wo", "wo/x"], ["", "/x"], ["/x", ""],
    ];
    for (const [a, b] of cases) assert.equal(native.posixRelative(a, b), path.posix.relative(a, b), `${a} -> ${b}`);
  });

  test("long inputs", () => {
    const long = "a/".repeat(50000) + "../".repeat(49999);
    assert.equal(native.posixNormalize(long), path.posix.normalize(long));
    const dots = ".".repeat(100000) + "/" + "..".repeat(3);
    assert.equal(native.posixNormalize(dots), path.posix.normalize(dots));
    const deep = "/" + "x/".repeat(30000);
    assert.equal(native.posixRelative(deep, "/y"), path.posix.relative(deep, "/y"));
  });

  test("non-string arguments are a TypeError", () => {
    assert.throws(() => native.posixNormalize(1), TypeError);
    assert.throws(() => native.posixJoin("a"), TypeError);
  });
});

describe("normalizeSandboxPath matches the original", () => {
  const fixed = [
    ["a", "a"], ["./a/b/", "a/b/"], ["a\\b\\..\\c", "a/c"], ["./", "./"], ["a/../", "./"], ["é/😀", "é/😀"],
  ];
  test("fixed results", () => {
    for (const [input, expected] of fixed) assert.equal(native.normalizeSandboxPath(input, false), expected);
    assert.equal(native.normalizeSandboxPath(".", true), ".");
    assert.equal(native.normalizeSandboxPath("a/..", true), ".");
  });

  test("each error, with its class, code and message", () => {
    const errors = [
      ["", "Sandbox path cannot be empty."],
      ["a\0b", "Sandbox path cannot contain null bytes."],
      ["\0", "Sandbox path cannot contain null bytes."],
      ["/etc/passwd", "Sandbox path must be relative: /etc/passwd"],
      ["\\etc", "Sandbox path must be relative: \\etc"],
      ["..", "Sandbox path cannot leave the workspace: .."],
      ["a/../../b", "Sandbox path cannot leave the workspace: a/../../b"],
      ["..\\é", "Sandbox path cannot leave the workspace: ..\\é"],
      [".", "Sandbox path must refer to a file or directory inside the workspace."],
      ["a/..", "Sandbox path must refer to a file or directory inside the workspace."],
    ];
    for (const [input, message] of errors) {
      assert.throws(
        () => native.normalizeSandboxPath(input, false),
        (error) => {
          assert.ok(error instanceof DockerSandboxError);
          assert.equal(error.name, "DockerSandboxError");
          assert.equal(error.code, "invalid_path");
          assert.equal(error.message, message);
          return true;
        },
        JSON.stringify(input)
      );
    }
  });

  test("allowRoot counts only when it is true", () => {
    for (const allowRoot of [undefined, 1, "true", null]) {
      assert.throws(() => native.normalizeSandboxPath(".", allowRoot), DockerSandboxError);
    }
  });

  test("agrees with the original on the whole corpus, allowRoot on and off", () => {
    const next = rng(99);
    const corpus = [...edgeCases, ...allStrings(["a", ".", "/", "\\"], 5)];
    for (let i = 0; i < 20000; i++) corpus.push(randomPath(next));
    for (const input of corpus) {
      for (const allowRoot of [false, true]) {
        assert.deepEqual(
          outcome(() => native.normalizeSandboxPath(input, allowRoot)),
          outcome(() => normalizeSandboxPath(input, { allowRoot })),
          `${JSON.stringify(input)} allowRoot=${allowRoot}`
        );
      }
    }
  });
});

describe("containerPath and parentSandboxPath match the original", () => {
  test("fixed cases", () => {
    assert.equal(native.containerPath("/workspace", "."), "/workspace");
    assert.equal(native.containerPath("/workspace/", "."), "/workspace/");
    assert.equal(native.containerPath("/workspace", "a/b"), "/workspace/a/b");
    assert.equal(native.containerPath("/workspace//x/..", "a\\b/"), "/workspace/a/b/");
    assert.equal(native.parentSandboxPath("a/b/c"), "a/b");
    assert.equal(native.parentSandboxPath("a"), ".");
    assert.equal(native.parentSandboxPath("a/b/"), "a");
    assert.throws(() => native.containerPath("/workspace", "../x"), { code: "invalid_path" });
    assert.throws(() => native.containerPath("/workspace", "a\0"), {
      message: "Sandbox path cannot contain null bytes.",
    });
    assert.throws(() => native.parentSandboxPath("."), { code: "invalid_path" });
  });

  test("agree with the original on generated inputs", () => {
    const next = rng(4242);
    const workdirs = ["/workspace", "/workspace/", "/", "//w//x/../", "/home/é"];
    for (let i = 0; i < 10000; i++) {
      const rel = i < edgeCases.length ? edgeCases[i] : randomPath(next, 10);
      const workdir = workdirs[i % workdirs.length];
      assert.deepEqual(
        outcome(() => native.containerPath(workdir, rel)),
        outcome(() => containerPath(workdir, rel)),
        `containerPath(${JSON.stringify(workdir)}, ${JSON.stringify(rel)})`
      );
      assert.deepEqual(
        outcome(() => native.parentSandboxPath(rel)),
        outcome(() => parentSandboxPath(rel)),
        `parentSandboxPath(${JSON.stringify(rel)})`
      );
    }
  });
});
