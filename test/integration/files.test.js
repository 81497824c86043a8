// readFile/writeFile/readTextFile/writeTextFile/listFiles on a real engine: binary round
// trips, maxFileBytes on both sides, directories made on the way, overwrites, strict UTF-8,
// the path rules (checked before any I/O), symbolic links that would leave the workspace,
// listings on a GNU and a busybox-only image, and a sandbox running as a non-root user.
import test, { after, before } from "node:test";
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { DockerSandboxClient, DockerSandboxError } from "../../lib/index.js";
import { BUSYBOX_IMAGE, baseOptions, dockerExec } from "../helpers/docker.js";

const client = new DockerSandboxClient();
const sha256 = (bytes) => createHash("sha256").update(bytes).digest("hex");

// runtime.maxFileBytes is 4096 on the shared sandbox.
const MAX = 4096;
let sandbox;
let container;
before(async () => {
  sandbox = await client.createSandbox(baseOptions({ runtime: { maxFileBytes: MAX } }));
  container = `anvia-sandbox-${sandbox.id}`;
});
after(async () => {
  await sandbox?.destroy();
});

// Reads back through the engine without the library.
async function sh(script, name = container) {
  const out = await dockerExec(name, ["sh", "-c", script]);
  assert.equal(out.exitCode, 0, `${script}: ${out.stdout} ${out.stderr}`);
  return out.stdout;
}

async function fileSha(path, name = container) {
  return (await sh(`sha256sum '${path}' | cut -d' ' -f1`, name)).trim();
}

function rejectsWith(code, message) {
  return (error) => {
    assert.ok(error instanceof DockerSandboxError, String(error));
    assert.equal(error.code, code);
    if (message !== undefined) assert.equal(error.message, message);
    return true;
  };
}

test("binary round trips: all 256 byte values, 0 bytes, exactly maxFileBytes", async () => {
  const rt = sandbox.runtime;
  const all = Uint8Array.from({ length: 256 }, (_, i) => i);
  const exact = randomBytes(MAX);
  const cases = [
    ["bytes/all.bin", all],
    ["bytes/empty.bin", new Uint8Array(0)],
    ["bytes/exact.bin", exact],
    ["bytes/twice.bin", Uint8Array.from([...all, ...all].reverse())],
  ];
  await Promise.all(
    cases.map(async ([path, data]) => {
      await rt.writeFile({ path, data });
      const back = await rt.readFile({ path });
      assert.ok(back instanceof Uint8Array, path);
      assert.deepEqual(Buffer.from(back), Buffer.from(data), path);
    }),
  );
  // On disk, seen without the library.
  const listing = await sh(`cd /workspace && for f in ${cases.map(([path]) => path).join(" ")}; do echo "$f $(busybox stat -c %s $f) $(sha256sum < $f | cut -d' ' -f1)"; done`);
  assert.equal(listing, cases.map(([path, data]) => `${path} ${data.byteLength} ${sha256(data)}\n`).join(""));
  // A window on a larger buffer writes only the window's bytes.
  const big = randomBytes(1000);
  const view = new Uint8Array(big.buffer, big.byteOffset + 100, 300);
  await rt.writeFile({ path: "bytes/view.bin", data: view });
  assert.equal(await fileSha("/workspace/bytes/view.bin"), sha256(view));
  // The data is taken when writeFile is called: changing it afterwards changes nothing.
  const mutable = Uint8Array.from(all);
  const pending = rt.writeFile({ path: "bytes/snapshot.bin", data: mutable });
  mutable.fill(0);
  await pending;
  assert.equal(await fileSha("/workspace/bytes/snapshot.bin"), sha256(all));
  // A file written from inside the container reads back as written.
  await sh("printf '\\000\\377\\200abc' > /workspace/bytes/inside.bin");
  assert.deepEqual([...(await rt.readFile({ path: "bytes/inside.bin" }))], [0, 255, 128, 97, 98, 99]);
});

test("one byte over maxFileBytes is refused before any transfer", async () => {
  const rt = sandbox.runtime;
  await assert.rejects(
    rt.writeFile({ path: "./over/dir/../dir/big.bin", data: new Uint8Array(MAX + 1) }),
    rejectsWith("file_too_large", `Sandbox file exceeds maxFileBytes (4097 > 4096): over/dir/big.bin`),
  );
  // Bytes, not characters: 1365 three-byte characters and two ASCII ones.
  await assert.rejects(
    rt.writeTextFile({ path: "over-text.txt", text: `${"€".repeat(1365)}ab` }),
    rejectsWith("file_too_large", `Sandbox file exceeds maxFileBytes (4097 > 4096): over-text.txt`),
  );
  // Nothing arrived: not the file, not its directories.
  assert.equal(await sh("busybox ls -A /workspace | grep -c '^over' || true"), "0\n");
  // The size check comes after the path check, as in the original.
  await assert.rejects(rt.writeFile({ path: "../big.bin", data: new Uint8Array(MAX + 1) }), rejectsWith("invalid_path"));
  // Exactly the limit in text is fine.
  const text = `${"€".repeat(1365)}a`;
  await rt.writeTextFile({ path: "limit-text.txt", text });
  assert.equal(await rt.readTextFile({ path: "limit-text.txt" }), text);
});

test("reading a file over maxFileBytes written from inside the container is file_too_large", async () => {
  const rt = sandbox.runtime;
  await sh("mkdir -p /workspace/big && head -c 5000 /dev/urandom > /workspace/big/r.bin && head -c 4097 /dev/urandom > /workspace/big/one-over.bin && head -c 4096 /dev/urandom > /workspace/big/at-limit.bin");
  await assert.rejects(rt.readFile({ path: "big/r.bin" }), rejectsWith("file_too_large", "Sandbox file exceeds maxFileBytes (5000 > 4096): big/r.bin"));
  await assert.rejects(rt.readFile({ path: "./big//one-over.bin" }), rejectsWith("file_too_large", "Sandbox file exceeds maxFileBytes (4097 > 4096): big/one-over.bin"));
  await assert.rejects(rt.readTextFile({ path: "big/r.bin" }), rejectsWith("file_too_large"));
  await assert.rejects(rt.readTextFilePage({ path: "big/r.bin" }), rejectsWith("file_too_large"));
  const atLimit = await rt.readFile({ path: "big/at-limit.bin" });
  assert.equal(atLimit.byteLength, MAX);
  assert.equal(sha256(atLimit), await fileSha("/workspace/big/at-limit.bin"));
});

test("text with multibyte characters round trips as UTF-8; a BOM is dropped on read", async () => {
  const rt = sandbox.runtime;
  const text = "héllo wörld € 😀 中文 \u0000 tab\tcr\r\nend\n";
  await rt.writeTextFile({ path: "text/multi.txt", text });
  assert.equal(await rt.readTextFile({ path: "text/multi.txt" }), text);
  assert.deepEqual(Buffer.from(await rt.readFile({ path: "text/multi.txt" })), Buffer.from(text, "utf8"));
  assert.equal(await fileSha("/workspace/text/multi.txt"), sha256(Buffer.from(text, "utf8")));
  // A lone surrogate is written as TextEncoder writes it: U+FFFD.
  await rt.writeTextFile({ path: "text/lone.txt", text: "a\uD800b" });
  assert.deepEqual([...(await rt.readFile({ path: "text/lone.txt" }))], [0x61, 0xef, 0xbf, 0xbd, 0x62]);
  // The empty string is an empty file.
  await rt.writeTextFile({ path: "text/empty.txt", text: "" });
  assert.equal(await rt.readTextFile({ path: "text/empty.txt" }), "");
  assert.equal((await sh("busybox stat -c %s /workspace/text/empty.txt")).trim(), "0");
  // TextDecoder drops one leading BOM, no more.
  await rt.writeFile({ path: "text/bom.txt", data: Buffer.from("\uFEFF\uFEFFhi", "utf8") });
  assert.equal(await rt.readTextFile({ path: "text/bom.txt" }), "\uFEFFhi");
});

test("readTextFile of invalid UTF-8 rejects with TextDecoder's TypeError", async () => {
  const rt = sandbox.runtime;
  const invalid = [
    [0x61, 0xff, 0x62],
    [0xc3], // truncated 2-byte sequence at the end
    [0xed, 0xa0, 0x80], // an encoded surrogate
    [0xc0, 0xaf], // overlong
    [0xf4, 0x90, 0x80, 0x80], // beyond U+10FFFF
  ];
  for (const [i, bytes] of invalid.entries()) {
    await rt.writeFile({ path: `bad/${i}.txt`, data: Uint8Array.from(bytes) });
    await assert.rejects(rt.readTextFile({ path: `bad/${i}.txt` }), (error) => {
      assert.ok(error instanceof TypeError, `${bytes}: ${error}`);
      assert.equal(error.code, "ERR_ENCODING_INVALID_ENCODED_DATA");
      return true;
    });
    // The bytes themselves still read.
    assert.deepEqual([...(await rt.readFile({ path: `bad/${i}.txt` }))], bytes);
  }
});

test("deep new directories are created with their parents; overwrites replace the whole file", async () => {
  const rt = sandbox.runtime;
  await rt.writeTextFile({ path: "a/b/c/d/e.txt", text: "deep\n" });
  assert.equal(await sh("for d in a a/b a/b/c a/b/c/d; do test -d /workspace/$d && echo $d; done"), "a\na/b\na/b/c\na/b/c/d\n");
  assert.equal(await rt.readTextFile({ path: "a/b/c/d/e.txt" }), "deep\n");
  // A sibling under an existing directory, and a new branch off the middle.
  await rt.writeTextFile({ path: "a/b/c/d/f.txt", text: "f" });
  await rt.writeTextFile({ path: "a/b/x/y.txt", text: "y" });
  assert.equal(await sh("cd /workspace && find a -type f | sort"), "a/b/c/d/e.txt\na/b/c/d/f.txt\na/b/x/y.txt\n");
  // Backslashes are separators, as normalizeSandboxPath makes them.
  await rt.writeTextFile({ path: "win\\style\\path.txt", text: "w" });
  assert.equal(await sh("cat /workspace/win/style/path.txt"), "w");
  // Shorter content replaces longer content completely.
  await rt.writeTextFile({ path: "a/over.txt", text: "a much longer original content\n" });
  await rt.writeTextFile({ path: "a/over.txt", text: "short" });
  assert.equal(await rt.readTextFile({ path: "a/over.txt" }), "short");
  assert.equal((await sh("busybox stat -c %s /workspace/a/over.txt")).trim(), "5");
  await rt.writeFile({ path: "a/over.txt", data: new Uint8Array(0) });
  assert.equal((await sh("busybox stat -c %s /workspace/a/over.txt")).trim(), "0");
});

test("argument checks and errors of the file calls", async () => {
  const rt = sandbox.runtime;
  const cases = [
    [() => rt.readFile(undefined), TypeError, "options must be an object."],
    [() => rt.readFile("x"), TypeError, "options must be an object."],
    [() => rt.readTextFile(null), TypeError, "options must be an object."],
    [() => rt.writeFile(undefined), TypeError, "options must be an object."],
    [() => rt.writeFile({ path: "x", data: "text" }), TypeError, "data must be a Uint8Array."],
    [() => rt.writeFile({ path: "x", data: new ArrayBuffer(2) }), TypeError, "data must be a Uint8Array."],
    [() => rt.writeFile({ path: "x", data: [1, 2] }), TypeError, "data must be a Uint8Array."],
    [() => rt.writeTextFile({ path: "x", text: 5 }), TypeError, "text must be a string."],
    [() => rt.writeTextFile({ path: "x", text: new Uint8Array(1) }), TypeError, "text must be a string."],
    [() => rt.listFiles(null), TypeError, "options must be an object."],
    [() => rt.listFiles("a"), TypeError, "options must be an object."],
    [() => rt.readFile({}), TypeError, undefined],
  ];
  for (const [call, type, message] of cases) {
    let promise;
    assert.doesNotThrow(() => {
      promise = call();
    });
    await assert.rejects(promise, (error) => {
      assert.ok(error instanceof type, `${call}: ${error}`);
      if (message !== undefined) assert.equal(error.message, message, String(call));
      return true;
    });
  }
  assert.equal(await sh("busybox ls /workspace/x 2>/dev/null | wc -l"), "0\n");
  // A Buffer is a Uint8Array.
  await rt.writeFile({ path: "buffer.bin", data: Buffer.from("buf") });
  assert.equal(await rt.readTextFile({ path: "buffer.bin" }), "buf");
  // Missing files and non-files.
  await assert.rejects(rt.readFile({ path: "no-such-file.txt" }), rejectsWith("docker_command_failed"));
  await assert.rejects(rt.readFile({ path: "no-such-dir/file.txt" }), rejectsWith("docker_command_failed"));
  await sh("mkdir -p /workspace/just-a-dir");
  await assert.rejects(rt.readFile({ path: "just-a-dir" }), rejectsWith("invalid_path", "Sandbox path is not a regular file: just-a-dir"));
  // An aborted signal rejects with its reason and writes nothing.
  const reason = new Error("no write");
  await assert.rejects(rt.writeFile({ path: "aborted.bin", data: new Uint8Array(1), abortSignal: AbortSignal.abort(reason) }), (e) => e === reason);
  await assert.rejects(rt.readFile({ path: "buffer.bin", abortSignal: AbortSignal.abort(reason) }), (e) => e === reason);
  await assert.rejects(rt.listFiles({ abortSignal: AbortSignal.abort(reason) }), (e) => e === reason);
  assert.equal(await sh("test -e /workspace/aborted.bin && echo exists || echo absent"), "absent\n");
});

// normalizeSandboxPath keeps a trailing slash ("f.txt/" stays "f.txt/"), and the original
// handed it to `docker cp`, which refuses a non-directory source that ends in a slash and
// a destination that ends in one unless it is an existing directory (as POSIX refuses
// open("f.txt/")). So a trailing slash never reads or writes a regular file.
test("a trailing slash names a directory: no regular file is read or written through `name/`", async () => {
  const rt = sandbox.runtime;
  await rt.writeTextFile({ path: "slash/f.txt", text: "kept" });
  const refused = (error) => {
    assert.ok(error instanceof DockerSandboxError, String(error));
    assert.ok(["docker_command_failed", "invalid_path"].includes(error.code), `${error.code}: ${error.message}`);
    return true;
  };
  const outcomes = await Promise.allSettled([
    rt.readFile({ path: "slash/f.txt/" }),
    rt.readTextFile({ path: "slash/f.txt/" }),
    rt.readTextFilePage({ path: "slash/f.txt/" }),
    rt.writeTextFile({ path: "slash/f.txt/", text: "overwritten" }),
    rt.writeTextFile({ path: "slash/new/", text: "file named like a directory" }),
  ]);
  const labels = ["readFile f.txt/", "readTextFile f.txt/", "readTextFilePage f.txt/", "writeTextFile f.txt/", "writeTextFile new/"];
  const wrong = outcomes.flatMap((outcome, i) => {
    if (outcome.status === "fulfilled") return [`${labels[i]} succeeded`];
    try {
      refused(outcome.reason);
      return [];
    } catch (failure) {
      return [`${labels[i]}: ${failure.message}`];
    }
  });
  const state = await sh("cat /workspace/slash/f.txt; echo; busybox ls /workspace/slash");
  assert.deepEqual({ wrong, state }, { wrong: [], state: "kept\nf.txt\n" });
});

test("every path goes through normalizeSandboxPath before any I/O", async () => {
  const rt = sandbox.runtime;
  const byte = Uint8Array.of(120);
  const cwdMarker = "/tmp/cwd-escape-marker";
  const operations = {
    readFile: (path) => rt.readFile({ path }),
    readTextFile: (path) => rt.readTextFile({ path }),
    readTextFilePage: (path) => rt.readTextFilePage({ path }),
    writeFile: (path) => rt.writeFile({ path, data: byte }),
    writeTextFile: (path) => rt.writeTextFile({ path, text: "x" }),
    listFiles: (path) => rt.listFiles({ path }),
    "exec cwd": (cwd) => rt.exec({ command: "touch", args: [cwdMarker], cwd }),
    "execStream cwd": (cwd) => rt.execStream({ command: "touch", args: [cwdMarker], cwd }).next(),
  };
  const rootAllowed = new Set(["listFiles", "exec cwd", "execStream cwd"]);
  const leave = (input) => `Sandbox path cannot leave the workspace: ${input}`;
  const root = "Sandbox path must refer to a file or directory inside the workspace.";
  const cases = [
    ["", "Sandbox path cannot be empty."],
    ["x\0y", "Sandbox path cannot contain null bytes."],
    ["\0", "Sandbox path cannot contain null bytes."],
    ["/etc/passwd", "Sandbox path must be relative: /etc/passwd"],
    ["/workspace/x", "Sandbox path must be relative: /workspace/x"],
    ["\\etc\\passwd", "Sandbox path must be relative: \\etc\\passwd"],
    ["..", leave("..")],
    ["../x", leave("../x")],
    ["./../x", leave("./../x")],
    ["a/../../x", leave("a/../../x")],
    ["a/b/../../../etc/passwd", leave("a/b/../../../etc/passwd")],
    ["a\\..\\..\\x", leave("a\\..\\..\\x")],
    ["..\\etc\\passwd", leave("..\\etc\\passwd")],
    [".", root, "root"],
    ["./.", root, "root"],
    ["a/..", root, "root"],
    ["a/b/../..", root, "root"],
    ["a\\..", root, "root"],
  ];
  // A time stamp: anything the calls below created or changed would be newer.
  await sh(`rm -f ${cwdMarker}; mkdir -p /workspace/a && touch /tmp/paths-stamp && sleep 0.05`);
  for (const [input, message, kind] of cases) {
    for (const [name, operation] of Object.entries(operations)) {
      if (kind === "root" && rootAllowed.has(name)) continue;
      let promise;
      assert.doesNotThrow(() => {
        promise = operation(input);
      }, `${name}(${JSON.stringify(input)}) threw synchronously`);
      await assert.rejects(promise, (error) => {
        assert.ok(error instanceof DockerSandboxError, `${name}(${JSON.stringify(input)}): ${error}`);
        assert.equal(error.code, "invalid_path", `${name}(${JSON.stringify(input)})`);
        assert.equal(error.message, message, `${name}(${JSON.stringify(input)})`);
        return true;
      });
    }
  }
  // Nothing anywhere in the container is newer than the stamp: no write, no exec.
  const changed = await sh("find / \\( -path /proc -o -path /sys -o -path /dev \\) -prune -o -newer /tmp/paths-stamp -print 2>/dev/null; true");
  assert.equal(changed, "", `changed after the stamp:\n${changed}`);
  assert.equal(await sh(`test -e ${cwdMarker} && echo ran || echo not-run`), "not-run\n");
  // And the root is fine where it is allowed.
  assert.ok(Array.isArray(await rt.listFiles({ path: "a/.." })));
  const pwd = await rt.exec({ command: "pwd", cwd: "a\\.." });
  assert.equal(Buffer.from(pwd.stdout).toString(), "/workspace\n");
});

test("symbolic links cannot take reads or writes out of the workspace", async () => {
  const rt = sandbox.runtime;
  const made = await rt.exec({
    command: "sh",
    args: [
      "-c",
      "mkdir links && cd links && echo original > /tmp/outside.txt && ln -s /etc/hostname hn && ln -s /etc etcdir && ln -s /tmp/outside.txt out && ln -s ../../tmp tmpdir && echo inside > real.txt && ln -s real.txt inner",
    ],
  });
  assert.equal(made.exitCode, 0, Buffer.from(made.stderr).toString());
  const reads = {
    readFile: (path) => rt.readFile({ path }),
    readTextFile: (path) => rt.readTextFile({ path }),
    readTextFilePage: (path) => rt.readTextFilePage({ path }),
  };
  const checks = [];
  for (const path of ["links/hn", "links/etcdir/hostname", "links/etcdir/passwd", "links/out", "links/tmpdir/outside.txt", "links/inner"]) {
    for (const [name, read] of Object.entries(reads)) {
      checks.push(
        assert.rejects(read(path), (error) => {
          assert.ok(error instanceof DockerSandboxError, `${name}(${path}): ${error}`);
          assert.equal(error.code, "invalid_path", `${name}(${path}): ${error.message}`);
          assert.ok(error.message.includes(path.split("/").slice(0, 2).join("/")), error.message);
          return true;
        }),
      );
    }
  }
  await Promise.all(checks);
  // A link as the final component: the original's message.
  await assert.rejects(rt.readFile({ path: "links/hn" }), rejectsWith("invalid_path", "Sandbox path is not a regular file: links/hn"));
  // Writes through a directory link are refused and write nothing outside.
  await Promise.all(
    ["links/etcdir/evil", "links/etcdir/newdir/evil", "links/tmpdir/evil"].flatMap((path) => [
      assert.rejects(rt.writeTextFile({ path, text: "evil" }), rejectsWith("invalid_path")),
      assert.rejects(rt.writeFile({ path, data: Uint8Array.of(1) }), rejectsWith("invalid_path")),
    ]),
  );
  assert.equal(await sh("for p in /etc/evil /etc/newdir /tmp/evil; do [ ! -e $p ] || echo $p; done | wc -l"), "0\n");
  // A write to a link to an outside file must not change that file: either it is refused
  // or the link itself is replaced by a regular file.
  let refused = false;
  try {
    await rt.writeTextFile({ path: "links/out", text: "evil" });
  } catch (error) {
    assert.equal(error.code, "invalid_path", String(error));
    refused = true;
  }
  assert.equal(await sh("cat /tmp/outside.txt"), "original\n");
  assert.equal(await sh("test -L /workspace/links/out && echo link || cat /workspace/links/out"), refused ? "link\n" : "evil");
  // Listing a link to a directory does not list the directory it points to (find -P).
  assert.deepEqual(await rt.listFiles({ path: "links/etcdir" }), []);
});

// A tree of every kind of entry, made with the image's own tools.
const TREE_SCRIPT = [
  "mkdir -p tree/dir/nested",
  "printf hello > tree/file.txt",
  ": > tree/empty",
  "ln -s file.txt tree/link",
  "ln -s /nonexistent tree/dangling",
  "printf 12345678 > tree/dir/inner.bin",
  "mkfifo tree/fifo",
  "printf x > 'tree/with space ü.txt'",
  "printf yy > tree/.hidden",
].join(" && ");
const TREE = [
  { path: "tree/.hidden", type: "file", size: 2 },
  { path: "tree/dangling", type: "symlink" },
  { path: "tree/dir", type: "directory" },
  { path: "tree/empty", type: "file", size: 0 },
  { path: "tree/fifo", type: "other" },
  { path: "tree/file.txt", type: "file", size: 5 },
  { path: "tree/link", type: "symlink" },
  { path: "tree/with space ü.txt", type: "file", size: 1 },
];
const byPath = (entries) => [...entries].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));

test("listFiles: direct children with path, type and size, on a GNU and a busybox-only image", async (t) => {
  const [gnu, busybox] = await Promise.all([
    client.createSandbox(baseOptions()),
    client.createSandbox(baseOptions({ image: BUSYBOX_IMAGE })),
  ]);
  t.after(() => Promise.allSettled([gnu.destroy(), busybox.destroy()]));
  const check = async (label, box) => {
    const rt = box.runtime;
    const made = await rt.exec({ command: "sh", args: ["-c", TREE_SCRIPT] });
    assert.equal(made.exitCode, 0, `${label}: ${Buffer.from(made.stderr).toString()}`);
    // The root, however it is asked for.
    for (const call of [() => rt.listFiles(), () => rt.listFiles({}), () => rt.listFiles({ path: "." }), () => rt.listFiles({ path: "./" })]) {
      assert.deepEqual(await call(), [{ path: "tree", type: "directory" }], `${label}: ${call}`);
    }
    for (const path of ["tree", "./tree/", "tree/dir/.."]) {
      const entries = await rt.listFiles({ path });
      assert.deepEqual(byPath(entries), TREE, `${label}: listFiles(${path})`);
    }
    assert.deepEqual(byPath(await rt.listFiles({ path: "tree/dir" })), [
      { path: "tree/dir/inner.bin", type: "file", size: 8 },
      { path: "tree/dir/nested", type: "directory" },
    ], label);
    assert.deepEqual(await rt.listFiles({ path: "tree/dir/nested" }), [], label);
    // Files written through the API are listed with their size.
    await rt.writeFile({ path: "tree/dir/nested/api.bin", data: new Uint8Array(1234) });
    assert.deepEqual(await rt.listFiles({ path: "tree/dir/nested" }), [{ path: "tree/dir/nested/api.bin", type: "file", size: 1234 }], label);
    // A missing directory.
    await assert.rejects(rt.listFiles({ path: "no/such/dir" }), (error) => {
      assert.ok(error instanceof DockerSandboxError, `${label}: ${error}`);
      assert.equal(error.code, "docker_command_failed");
      assert.equal(error.message, "Unable to list sandbox files.");
      assert.equal(error.details?.status, "exited");
      assert.notEqual(error.details?.exitCode, 0);
      return true;
    });
  };
  await Promise.all([check("bookworm", gnu), check("busybox", busybox)]);
});

test("listFiles: names with a newline, a tab, a fake record or bytes that are not UTF-8 are one entry each", async (t) => {
  const [gnu, busybox] = await Promise.all([
    client.createSandbox(baseOptions()),
    client.createSandbox(baseOptions({ image: BUSYBOX_IMAGE })),
  ]);
  t.after(() => Promise.allSettled([gnu.destroy(), busybox.destroy()]));
  // printf builds the names inside the container: \n, \t, and the bytes ff c3 (not UTF-8).
  const script =
    'mkdir odd && cd odd && printf 1 > "$(printf "new\\nline")" && printf 22 > "$(printf "a\\tb")" && ' +
    'printf 333 > "$(printf "x\\nfake\\tf\\t9")" && printf 4444 > "$(printf "\\377\\303bad")" && ' +
    "printf 55555 > plain.txt && mkdir sub";
  const want = [
    { path: "odd/\ufffd\ufffdbad", type: "file", size: 4 },
    { path: "odd/a\tb", type: "file", size: 2 },
    { path: "odd/new\nline", type: "file", size: 1 },
    { path: "odd/plain.txt", type: "file", size: 5 },
    { path: "odd/sub", type: "directory" },
    { path: "odd/x\nfake\tf\t9", type: "file", size: 3 },
  ];
  for (const [label, box] of [["bookworm", gnu], ["busybox", busybox]]) {
    const made = await box.runtime.exec({ command: "sh", args: ["-c", script] });
    assert.equal(made.exitCode, 0, `${label}: ${Buffer.from(made.stderr).toString()}`);
    assert.deepEqual(byPath(await box.runtime.listFiles({ path: "odd" })), byPath(want), label);
  }
});

for (const [user, ids] of [
  ["1000:1000", "1000:1000"],
  ["nobody", "65534:65534"],
]) {
  test(`a sandbox running as ${user}: files the API writes belong to the user, who can change them`, async (t) => {
    const box = await client.createSandbox(baseOptions({ user }));
    t.after(() => box.destroy());
    const rt = box.runtime;
    const name = `anvia-sandbox-${box.id}`;
    const out = async (options) => {
      const result = await rt.exec(options);
      assert.equal(result.exitCode, 0, Buffer.from(result.stderr).toString());
      return Buffer.from(result.stdout).toString();
    };
    assert.equal(await out({ command: "sh", args: ["-c", 'echo "$(id -u):$(id -g)"'] }), `${ids}\n`);
    await rt.writeTextFile({ path: "notes/deep/f.txt", text: "first\n" });
    await rt.writeFile({ path: "top.bin", data: Uint8Array.of(1, 2, 3) });
    assert.equal(
      await sh("busybox stat -c '%u:%g %n' /workspace/notes /workspace/notes/deep /workspace/notes/deep/f.txt /workspace/top.bin", name),
      [`${ids} /workspace/notes`, `${ids} /workspace/notes/deep`, `${ids} /workspace/notes/deep/f.txt`, `${ids} /workspace/top.bin`, ""].join("\n"),
    );
    // The user appends with its own command, then reads back through the API.
    await out({ command: "sh", args: ["-c", "echo more >> notes/deep/f.txt"] });
    assert.equal(await rt.readTextFile({ path: "notes/deep/f.txt" }), "first\nmore\n");
    // Deletes it, and creates files and directories in the directories the API created.
    await out({ command: "sh", args: ["-c", "rm notes/deep/f.txt && echo mine > notes/deep/own.txt && mkdir notes/sub && rm top.bin"] });
    assert.deepEqual(byPath(await rt.listFiles({ path: "notes/deep" })), [{ path: "notes/deep/own.txt", type: "file", size: 5 }]);
    // The API overwrites a file the user made, and writes into a directory the user made.
    await rt.writeTextFile({ path: "notes/deep/own.txt", text: "api" });
    await rt.writeTextFile({ path: "notes/sub/new/api.txt", text: "x" });
    assert.equal(
      await sh("busybox stat -c '%u:%g %n' /workspace/notes/deep/own.txt /workspace/notes/sub /workspace/notes/sub/new /workspace/notes/sub/new/api.txt", name),
      [`${ids} /workspace/notes/deep/own.txt`, `${ids} /workspace/notes/sub`, `${ids} /workspace/notes/sub/new`, `${ids} /workspace/notes/sub/new/api.txt`, ""].join("\n"),
    );
    await out({ command: "sh", args: ["-c", "echo again >> notes/sub/new/api.txt && rm -r notes/sub"] });
    assert.equal(await rt.readTextFile({ path: "notes/deep/own.txt" }), "api");
  });
}

test("writing a file onto an existing directory: a clear error naming the path, root or not", async (t) => {
  const user = await client.createSandbox(baseOptions({ user: "1000:1000" }));
  t.after(() => user.destroy());
  for (const [label, rt] of [["root", sandbox.runtime], ["1000:1000", user.runtime]]) {
    await rt.writeTextFile({ path: "ontodir/inner/keep.txt", text: "kept" });
    for (const path of ["ontodir", "ontodir/inner"]) {
      await assert.rejects(rt.writeTextFile({ path, text: "x" }), (error) => {
        assert.ok(error instanceof DockerSandboxError, `${label}: ${error}`);
        assert.equal(error.code, "docker_command_failed", label);
        assert.equal(error.message, `Sandbox path names a directory, not a file: ${path}`, label);
        return true;
      });
    }
    assert.equal(await rt.readTextFile({ path: "ontodir/inner/keep.txt" }), "kept", label);
  }
});
