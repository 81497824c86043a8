// importTree / exportTree on a real engine (issue 17): a generated tree (thousands of small
// files, a few large ones, nested directories, odd but valid names, several modes) round
// trips byte for byte with its modes, as root and as a non-root user, on the Debian and the
// busybox image; and each way a transfer can go wrong ends with its error and leaves
// nothing half-published: a lying byteLength, a quota breach, an abort mid-transfer, a
// symbolic link in the host tree, a link the sandbox planted on the destination's way, a
// full disk in the sandbox, hostile entries in the sandbox, an existing host destination.
import test, { after, before, describe } from "node:test";
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { chmodSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { execFileSync } from "node:child_process";
import http from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { DockerSandboxClient, DockerSandboxError } from "../../lib/index.js";
import { BUSYBOX_IMAGE, api, baseOptions, uniqueId } from "../helpers/docker.js";

const client = new DockerSandboxClient();
const MiB = 1024 * 1024;
const BIG = { maxFileBytes: 64 * MiB, maxTotalBytes: 512 * MiB };

const work = mkdtempSync(path.join(tmpdir(), "anvia-tree-"));
after(() => rmSync(work, { recursive: true, force: true }));
let counter = 0;
const hostPath = (name) => path.join(work, `${name}-${counter++}`);

const sha = (bytes) => createHash("sha256").update(bytes).digest("hex");

// Runs a command as root in the container through the raw API (no library code).
async function sh(container, script) {
  const created = await api("POST", `/containers/${encodeURIComponent(container)}/exec`, { User: "0", AttachStdout: true, AttachStderr: true, Cmd: ["sh", "-c", script] });
  assert.equal(created.status, 201, created.text);
  const out = await dockerExecStarted(created.json.Id);
  assert.equal(out.exitCode, 0, `${script}: ${out.stdout} ${out.stderr}`);
  return out.stdout;
}

async function dockerExecStarted(id) {
  const res = await new Promise((resolve, reject) => {
    const req = http.request({ socketPath: process.env.DOCKER_HOST?.startsWith("unix://") ? process.env.DOCKER_HOST.slice(7) : "/var/run/docker.sock", method: "POST", path: `/v1.41/exec/${id}/start`, headers: { "content-type": "application/json" } }, (r) => {
      const chunks = [];
      r.on("data", (c) => chunks.push(c));
      r.on("end", () => resolve(Buffer.concat(chunks)));
    });
    req.on("error", reject);
    req.end(JSON.stringify({ Detach: false, Tty: false }));
  });
  let stdout = "";
  let stderr = "";
  for (let i = 0; i + 8 <= res.length; ) {
    const len = res.readUInt32BE(i + 4);
    const data = res.subarray(i + 8, i + 8 + len).toString("utf8");
    if (res[i] === 2) stderr += data;
    else stdout += data;
    i += 8 + len;
  }
  const info = await api("GET", `/exec/${id}/json`);
  return { stdout, stderr, exitCode: info.json.ExitCode };
}

function rejectsWith(code, pattern) {
  return (error) => {
    assert.ok(error instanceof DockerSandboxError, String(error?.stack ?? error));
    assert.equal(error.code, code, error.message);
    if (pattern) assert.match(error.message, pattern);
    return true;
  };
}

// Odd but valid names: spaces, non-ASCII, a newline, a tab, a leading dash, shell and URL
// characters, quotes, dots, a 200-byte name (over ustar's 100) and, through the nesting, a
// path over 255 bytes. (A backslash is a separator under writeFile's path rules: a host
// name holding one is refused, see below.)
const ODD = [
  "with space",
  "ünïcødé-名前-😀",
  "new\nline",
  "tab\tname",
  "-leading-dash",
  "#hash%percent&amp?q=1",
  "quote'\"s",
  "..dots",
  ".hidden",
  "x".repeat(200),
];

/**
 * A host tree: `small` files of 0..3 KiB spread over nested directories (up to 6 deep),
 * the odd names (each a file, some also directories), empty files and directories, three
 * large files, several modes. Returns the directory.
 */
function generateTree({ small = 2400, large = [12 * MiB + 7, 5 * MiB, MiB + 1] } = {}) {
  const root = hostPath("tree");
  mkdirSync(root);
  const dirs = [""];
  for (let i = 0; i < 60; i++) {
    const parent = dirs[Math.floor(Math.random() * dirs.length)];
    if (parent.split("/").length >= 6) continue;
    const d = parent ? `${parent}/d${i}` : `d${i}`;
    mkdirSync(path.join(root, d));
    dirs.push(d);
  }
  const modes = [0o644, 0o600, 0o755, 0o444, 0o640, 0o700];
  for (let i = 0; i < small; i++) {
    const d = dirs[i % dirs.length];
    const f = path.join(root, d, `f${i}.txt`);
    writeFileSync(f, randomBytes(Math.floor(Math.random() * 3072)));
    chmodSync(f, modes[i % modes.length]);
  }
  const deep = "deep/" + Array.from({ length: 5 }, (_, i) => `level-${i}-${"n".repeat(40)}`).join("/");
  mkdirSync(path.join(root, deep), { recursive: true });
  for (const [i, name] of ODD.entries()) {
    writeFileSync(path.join(root, deep, name), `odd ${i}\n`);
    writeFileSync(path.join(root, name), randomBytes(i * 100));
  }
  mkdirSync(path.join(root, "odd dir ü"));
  writeFileSync(path.join(root, "odd dir ü", "new\nline"), "inside");
  mkdirSync(path.join(root, "empty-dir"));
  mkdirSync(path.join(root, "private-dir"), { mode: 0o700 });
  chmodSync(path.join(root, "private-dir"), 0o700);
  writeFileSync(path.join(root, "private-dir", "empty-file"), "");
  mkdirSync(path.join(root, "group-dir"));
  chmodSync(path.join(root, "group-dir"), 0o750);
  for (const [i, size] of large.entries()) {
    const f = path.join(root, `large-${i}.bin`);
    writeFileSync(f, randomBytes(size));
    chmodSync(f, i === 0 ? 0o755 : 0o644);
  }
  return root;
}

/** Every entry of a host tree: relative path -> { kind, mode, sha }. */
function snapshot(root) {
  const out = new Map();
  const walk = (rel) => {
    for (const name of readdirSync(path.join(root, rel))) {
      const r = rel ? `${rel}/${name}` : name;
      const st = lstatSync(path.join(root, r));
      if (st.isDirectory()) {
        out.set(r, { kind: "directory", mode: st.mode & 0o777 });
        walk(r);
      } else {
        out.set(r, { kind: st.isFile() ? "file" : "other", mode: st.mode & 0o777, sha: sha(readFileSync(path.join(root, r))), size: st.size });
      }
    }
  };
  walk("");
  return out;
}

function assertSameTree(actual, expected, label) {
  const a = [...actual.keys()].sort();
  const e = [...expected.keys()].sort();
  assert.deepEqual(a, e, `${label}: the same paths`);
  for (const k of e) assert.deepEqual(actual.get(k), expected.get(k), `${label}: ${JSON.stringify(k)}`);
}

async function workspaceListing(container) {
  return (await sh(container, "busybox ls -A /workspace")).split("\n").filter(Boolean);
}

/** Waits until nothing named .anvia-import.* is left in the workspace. */
async function noStaging(container) {
  for (let i = 0; i < 100; i++) {
    if (!(await workspaceListing(container)).some((n) => n.startsWith(".anvia-"))) return;
    await sleep(100);
  }
  assert.fail(`a staging directory is left: ${await workspaceListing(container)}`);
}

function noTempSibling(dest) {
  const base = path.basename(dest);
  const left = readdirSync(path.dirname(dest)).filter((n) => n.startsWith(`.${base}.anvia-export-`));
  assert.deepEqual(left, [], "no temporary export directory is left");
}

const sandboxes = {};
before(async () => {
  const [root, user, busybox] = await Promise.all([
    client.createSandbox(baseOptions()),
    client.createSandbox(baseOptions({ user: "1000:1000" })),
    client.createSandbox(baseOptions({ image: BUSYBOX_IMAGE, user: "1000:1000" })),
  ]);
  Object.assign(sandboxes, { root, user, busybox });
});
after(async () => {
  await Promise.allSettled(Object.values(sandboxes).map((s) => s.destroy()));
});
const containerOf = (s) => `anvia-sandbox-${s.id}`;

describe("round trip, byte for byte with modes", () => {
  let tree;
  let expected;
  before(() => {
    tree = generateTree();
    expected = snapshot(tree);
  });

  for (const which of ["root", "user"]) {
    test(`${which}: a generated tree of ~2,500 entries through a host directory both ways`, { timeout: 300_000 }, async () => {
      const rt = sandboxes[which].runtime;
      const seen = [];
      const imported = await rt.importTree(tree, { path: "rt/in", quotas: BIG, onProgress: (p) => seen.push(p) });
      const files = [...expected.values()].filter((v) => v.kind === "file");
      assert.equal(imported.files, files.length);
      assert.equal(imported.bytes, files.reduce((n, f) => n + f.size, 0));
      assert.ok(imported.directories >= [...expected.values()].filter((v) => v.kind === "directory").length);
      assert.ok(seen.length > 0 && seen.at(-1).files === imported.files, "progress reached the end");
      await noStaging(containerOf(sandboxes[which]));
      const out = hostPath("out");
      const exported = await rt.exportTree({ kind: "subtree", path: "rt/in" }, out, { quotas: BIG });
      assert.equal(exported.files, imported.files);
      assert.equal(exported.bytes, imported.bytes);
      noTempSibling(out);
      assertSameTree(snapshot(path.join(out, "rt/in")), expected, which);
      // As the sandbox sees it: owned by its user.
      const owners = await sh(containerOf(sandboxes[which]), "find /workspace/rt -exec busybox stat -c %u:%g {} + | sort -u");
      assert.equal(owners.trim(), which === "root" ? "0:0" : "1000:1000");
    });
  }

  test("busybox, 1000:1000: the same tree (no GNU tar, no GNU coreutils)", { timeout: 300_000 }, async () => {
    const rt = sandboxes.busybox.runtime;
    await rt.importTree(tree, { path: "rt", quotas: BIG });
    const out = hostPath("bb");
    await rt.exportTree({ kind: "workspace" }, out, { quotas: BIG });
    assertSameTree(snapshot(path.join(out, "rt")), expected, "busybox");
  });

  test("iterables both ways: sync and async entries, bytes and open(), consume(entry) in order", async () => {
    const rt = sandboxes.root.runtime;
    const big = randomBytes(3 * MiB + 5);
    async function* chunks(buf, size) {
      for (let i = 0; i < buf.length; i += size) yield buf.subarray(i, i + size);
    }
    async function* entries() {
      yield { kind: "directory", path: "iter/dir", mode: 0o711 };
      yield { kind: "file", path: "iter/dir/a.txt", bytes: new TextEncoder().encode("alpha"), mode: 0o600 };
      yield { kind: "file", path: "iter/big.bin", byteLength: big.length, open: () => chunks(big, 100_003) };
      yield { kind: "file", path: "iter/empty", byteLength: 0, open: () => chunks(Buffer.alloc(0), 1) };
    }
    const summary = await rt.importTree(entries());
    assert.deepEqual({ files: summary.files, directories: summary.directories, bytes: summary.bytes }, { files: 3, directories: 2, bytes: big.length + 5 });
    await rt.importTree([{ kind: "file", path: "sync.txt", bytes: new Uint8Array([1, 2, 3]) }], { path: "iter" });
    const got = [];
    await rt.exportTree({ kind: "subtree", path: "iter" }, async (entry) => {
      const parts = [];
      if (entry.kind === "file") for await (const c of entry.bytes) parts.push(c);
      got.push({ kind: entry.kind, path: entry.path, mode: entry.mode, byteLength: entry.byteLength, sha: entry.kind === "file" ? sha(Buffer.concat(parts)) : undefined });
    });
    const byPath = Object.fromEntries(got.map((g) => [g.path, g]));
    assert.deepEqual(Object.keys(byPath).sort(), ["iter", "iter/big.bin", "iter/dir", "iter/dir/a.txt", "iter/empty", "iter/sync.txt"]);
    assert.equal(byPath["iter/dir"].mode, 0o711);
    assert.equal(byPath["iter/dir/a.txt"].mode, 0o600);
    assert.equal(byPath["iter/big.bin"].sha, sha(big));
    assert.equal(byPath["iter/big.bin"].byteLength, big.length);
    assert.equal(byPath["iter/empty"].byteLength, 0);
    const files = await rt.exportTree({ kind: "files", paths: ["iter/sync.txt", "iter/dir/a.txt"] }, async () => {});
    assert.equal(files.files, 2);
  });
});

describe("failures leave nothing half-published", () => {
  for (const which of ["root", "user"]) {
    test(`${which}: a lying byteLength (fewer and more bytes) is invalid_entry`, async () => {
      const rt = sandboxes[which].runtime;
      const c = containerOf(sandboxes[which]);
      async function* yields(n) {
        yield new Uint8Array(n);
      }
      for (const [dest, declared, actual, pattern] of [
        ["lie-short", 100, 50, /yielded 50 bytes, not its byteLength 100: lie\.bin/],
        ["lie-long", 100, 150, /more than its byteLength 100: lie\.bin/],
      ]) {
        await assert.rejects(
          rt.importTree([
            { kind: "file", path: "ok.txt", bytes: new Uint8Array(10) },
            { kind: "file", path: "lie.bin", byteLength: declared, open: () => yields(actual) },
            { kind: "file", path: "after.txt", bytes: new Uint8Array(1) },
          ], { path: dest }),
          rejectsWith("invalid_entry", pattern),
        );
        await noStaging(c);
        assert.ok(!(await workspaceListing(c)).includes(dest), `${dest} was not published`);
      }
    });

    test(`${which}: quota breaches stop the import with how far it got`, async () => {
      const rt = sandboxes[which].runtime;
      const c = containerOf(sandboxes[which]);
      const src = hostPath("quota");
      mkdirSync(path.join(src, "a/b/c/d"), { recursive: true });
      for (let i = 0; i < 10; i++) writeFileSync(path.join(src, `f${i}`), Buffer.alloc(1000));
      writeFileSync(path.join(src, "a/b/c/d/deep.txt"), "deep");
      const cases = [
        [{ maxFiles: 5 }, "quota_exceeded", "maxFiles"],
        [{ maxFileBytes: 999 }, "file_too_large", "maxFileBytes"],
        [{ maxTotalBytes: 4500 }, "quota_exceeded", "maxTotalBytes"],
        [{ maxDepth: 4 }, "quota_exceeded", "maxDepth"],
        [{ maxPathBytes: 8 }, "quota_exceeded", "maxPathBytes"],
      ];
      for (const [quotas, code, quota] of cases) {
        await assert.rejects(rt.importTree(src, { path: `q-${quota}`, quotas }), (error) => {
          rejectsWith(code)(error);
          assert.equal(error.details.quota, quota);
          assert.equal(typeof error.details.files, "number");
          assert.equal(typeof error.details.bytes, "number");
          // Directories count against maxFiles too.
          if (quota === "maxFiles") assert.equal(error.details.files + error.details.directories, 5);
          return true;
        });
        assert.ok(!(await workspaceListing(c)).includes(`q-${quota}`));
      }
      await noStaging(c);
    });

    test(`${which}: an abort mid-transfer stops both sides and closes the caller's iterators`, async () => {
      const rt = sandboxes[which].runtime;
      const c = containerOf(sandboxes[which]);
      // Between entries.
      let closed = false;
      const controller = new AbortController();
      async function* slow() {
        try {
          for (let i = 0; ; i++) {
            if (i === 5) controller.abort(new Error("enough"));
            yield { kind: "file", path: `f${i}.txt`, bytes: new Uint8Array(100) };
            await sleep(5);
          }
        } finally {
          closed = true;
        }
      }
      await assert.rejects(rt.importTree(slow(), { path: "aborted", abortSignal: controller.signal }), /enough/);
      // Inside a large file, whose bytes never end.
      let chunksClosed = false;
      const c2 = new AbortController();
      async function* endless() {
        try {
          for (let n = 0; ; n++) {
            if (n === 64) c2.abort(new Error("mid-file"));
            yield new Uint8Array(256 * 1024);
          }
        } finally {
          chunksClosed = true;
        }
      }
      await assert.rejects(
        rt.importTree([{ kind: "file", path: "huge.bin", byteLength: 2 ** 40, open: endless }], { path: "aborted2", abortSignal: c2.signal, quotas: { maxFileBytes: 2 ** 41, maxTotalBytes: 2 ** 41 } }),
        /mid-file/,
      );
      for (let i = 0; i < 50 && !(closed && chunksClosed); i++) await sleep(20);
      assert.ok(closed, "the entries' iterator was closed");
      assert.ok(chunksClosed, "the file's chunks were closed");
      await noStaging(c);
      const names = await workspaceListing(c);
      assert.ok(!names.includes("aborted") && !names.includes("aborted2"), names.join(","));

      // Export: the consumer's signal fires after the first file; the host directory is not made.
      await rt.importTree([{ kind: "file", path: "exp/a", bytes: new Uint8Array(10) }, { kind: "file", path: "exp/b", bytes: new Uint8Array(3 * MiB) }]);
      const c3 = new AbortController();
      await assert.rejects(
        rt.exportTree({ kind: "subtree", path: "exp" }, async (entry) => {
          if (entry.kind === "file") c3.abort(new Error("stop export"));
        }, { abortSignal: c3.signal }),
        /stop export/,
      );
      const out = hostPath("aborted-out");
      const c4 = new AbortController();
      const pending = rt.exportTree({ kind: "subtree", path: "exp" }, out, {
        abortSignal: c4.signal,
        onProgress: (p) => p.files > 0 && c4.abort(new Error("stop host export")),
      });
      await assert.rejects(pending, /stop host export/);
      assert.ok(!existsSync(out));
      noTempSibling(out);
    });

    test(`${which}: a symbolic link in the host tree is refused, or skipped on request`, async () => {
      const rt = sandboxes[which].runtime;
      const c = containerOf(sandboxes[which]);
      const src = hostPath("links");
      mkdirSync(path.join(src, "sub"), { recursive: true });
      writeFileSync(path.join(src, "sub/real.txt"), "real");
      symlinkSync("/etc/passwd", path.join(src, "sub/link"));
      execFileSync("mkfifo", [path.join(src, "fifo")]);
      await assert.rejects(rt.importTree(src, { path: "linked" }), rejectsWith("invalid_entry", /Host path is (a symbolic link|not a regular file or directory): /));
      await noStaging(c);
      assert.ok(!(await workspaceListing(c)).includes("linked"));
      const summary = await rt.importTree(src, { path: "linked", specialFiles: "skip" });
      assert.equal(summary.skipped, 2);
      assert.equal(summary.files, 1);
      assert.equal(await sh(c, "find /workspace/linked | sort"), "/workspace/linked\n/workspace/linked/sub\n/workspace/linked/sub/real.txt\n");
      // A name with a backslash (a separator under writeFile's rules) cannot be imported as it is.
      const bs = hostPath("backslash");
      mkdirSync(bs);
      writeFileSync(path.join(bs, "back\\slash"), "x");
      writeFileSync(path.join(bs, "plain"), "y");
      await assert.rejects(rt.importTree(bs, { path: "bs" }), rejectsWith("invalid_path", /backslash/));
      assert.equal((await rt.importTree(bs, { path: "bs", specialFiles: "skip" })).skipped, 1);
      // The root itself may not be a link either.
      const rootLink = hostPath("root-link");
      symlinkSync(src, rootLink);
      await assert.rejects(rt.importTree(rootLink), rejectsWith("invalid_entry", /symbolic link/));
    });

    test(`${which}: a link the sandbox planted on the destination's way is refused, nothing written through it`, async () => {
      const rt = sandboxes[which].runtime;
      const c = containerOf(sandboxes[which]);
      // The sandbox's user plants them (as itself).
      await rt.exec({ command: "sh", args: ["-c", "mkdir -p /tmp/outside dest/inner && ln -s /tmp/outside planted && ln -s /tmp/outside dest/inner/sub && echo keep > dest/keep.txt"] });
      const entries = [
        { kind: "file", path: "new.txt", bytes: new TextEncoder().encode("new") },
        { kind: "file", path: "inner/sub/evil.txt", bytes: new TextEncoder().encode("evil") },
      ];
      // On the destination itself / its way.
      await assert.rejects(rt.importTree(entries, { path: "planted" }), rejectsWith("invalid_path", /symbolic link: planted/));
      await assert.rejects(rt.importTree(entries, { path: "planted/deeper" }), rejectsWith("invalid_path", /symbolic link: planted/));
      // Inside an existing destination, where the import puts a directory.
      await assert.rejects(rt.importTree(entries, { path: "dest" }), rejectsWith("invalid_path", /symbolic link: dest\/inner\/sub/));
      assert.equal(await sh(c, "busybox ls -A /tmp/outside | wc -l"), "0\n", "nothing was written through a link");
      assert.equal(await sh(c, "busybox ls -A /workspace/dest"), "inner\nkeep.txt\n", "nothing of the import was published");
      await noStaging(c);
      // Export refuses a selection through a link too.
      await assert.rejects(rt.exportTree({ kind: "subtree", path: "planted" }, async () => {}), rejectsWith("invalid_path", /symbolic link/));
      await assert.rejects(rt.exportTree({ kind: "files", paths: ["dest/inner/sub/x"] }, async () => {}), rejectsWith("invalid_path", /symbolic link/));
    });

    test(`${which}: a full disk in the sandbox fails the import and leaves nothing staged`, async (t) => {
      const volume = uniqueId("tree-tmpfs");
      // 4 MiB as tmpfs pages: Podman takes "size=" as a quota of its own (which needs
      // project quotas), nr_blocks goes to the mount as on Docker.
      const made = await api("POST", "/volumes/create", { Name: volume, Driver: "local", DriverOpts: { type: "tmpfs", device: "tmpfs", o: "nr_blocks=1024" } });
      assert.equal(made.status, 201, made.text);
      let small;
      // The sandbox first, then its volume (in use until then).
      t.after(async () => {
        await small?.destroy();
        await api("DELETE", `/volumes/${volume}?force=1`);
      });
      small = await client.createSandbox(baseOptions({ workspace: { type: "docker-volume", name: volume }, ...(which === "user" ? { user: "1000:1000" } : {}) }));
      const c = containerOf(small);
      await small.runtime.writeTextFile({ path: "before.txt", text: "kept" });
      await assert.rejects(
        small.runtime.importTree([
          { kind: "file", path: "a.bin", bytes: randomBytes(2 * MiB) },
          { kind: "file", path: "b.bin", bytes: randomBytes(3 * MiB) },
        ], { path: "full" }),
        rejectsWith("docker_command_failed", /no space left on device/i),
      );
      await noStaging(c);
      assert.deepEqual(await workspaceListing(c), ["before.txt"]);
      // The space is free again: a smaller import fits.
      await small.runtime.importTree([{ kind: "file", path: "c.bin", bytes: randomBytes(2 * MiB) }], { path: "fits" });
    });

    test(`${which}: hostile entries from the sandbox (links out, hard links, fifos) are refused, or skipped`, async () => {
      const rt = sandboxes[which].runtime;
      await rt.exec({ command: "sh", args: ["-c", "mkdir -p hostile/sub && echo data > hostile/sub/file && ln -s /etc/passwd hostile/link-out && ln hostile/sub/file hostile/hard && mkfifo hostile/fifo"] });
      const out = hostPath("hostile");
      await assert.rejects(rt.exportTree({ kind: "subtree", path: "hostile" }, out), rejectsWith("invalid_entry", /Sandbox entry is (a symbolic link|a hard link|not a regular file or directory): hostile\//));
      assert.ok(!existsSync(out), "nothing published");
      noTempSibling(out);
      const summary = await rt.exportTree({ kind: "subtree", path: "hostile" }, out, { specialFiles: "skip" });
      assert.equal(summary.skipped, 3);
      // Of the two names of the hard-linked file, the archive carries the data under the
      // first it meets and a link under the other, which is skipped.
      const names = [...snapshot(out).keys()].sort();
      const kept = names.filter((n) => n === "hostile/hard" || n === "hostile/sub/file");
      assert.deepEqual(names.filter((n) => !kept.includes(n)), ["hostile", "hostile/sub"]);
      assert.equal(kept.length, 1, names.join(", "));
      assert.equal(readFileSync(path.join(out, kept[0]), "utf8"), "data\n");
    });

    test(`${which}: export quotas, an existing host destination, a missing selection`, async () => {
      const rt = sandboxes[which].runtime;
      await rt.importTree(Array.from({ length: 8 }, (_, i) => ({ kind: "file", path: `eq/f${i}`, bytes: new Uint8Array(1000) })));
      const out = hostPath("eq");
      await assert.rejects(rt.exportTree({ kind: "subtree", path: "eq" }, out, { quotas: { maxFiles: 3 } }), (error) => {
        rejectsWith("quota_exceeded")(error);
        assert.equal(error.details.quota, "maxFiles");
        // The subtree's own directory is an entry: it and two files.
        assert.deepEqual([error.details.files, error.details.directories], [2, 1]);
        return true;
      });
      assert.ok(!existsSync(out));
      noTempSibling(out);
      await assert.rejects(rt.exportTree({ kind: "subtree", path: "eq" }, out, { quotas: { maxFileBytes: 999 } }), rejectsWith("file_too_large"));
      mkdirSync(out);
      await assert.rejects(rt.exportTree({ kind: "subtree", path: "eq" }, out), rejectsWith("invalid_path", /already exists/));
      await assert.rejects(rt.exportTree({ kind: "subtree", path: "no/such" }, async () => {}), rejectsWith("docker_command_failed", /does not exist: no\/such/));
      await assert.rejects(rt.exportTree({ kind: "files", paths: ["eq"] }, async () => {}), rejectsWith("invalid_path", /not a regular file: eq/));
    });
  }

  test("user: a file the user cannot read fails the export, nothing published", async () => {
    const rt = sandboxes.user.runtime;
    const c = containerOf(sandboxes.user);
    await rt.importTree([{ kind: "file", path: "secret/ok.txt", bytes: new Uint8Array(3) }]);
    await rt.exec({ command: "sh", args: ["-c", "echo unreadable > secret/locked.txt && chmod 000 secret/locked.txt"] });
    const out = hostPath("secret");
    await assert.rejects(rt.exportTree({ kind: "subtree", path: "secret" }, out), rejectsWith("docker_command_failed", /Permission denied/));
    assert.ok(!existsSync(out));
    noTempSibling(out);
  });
});
