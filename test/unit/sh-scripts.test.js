// The scripts the addon runs inside sandboxes (src/*/sh/*.sh, embedded in C by
// scripts/embed-sh.mjs): shellcheck finds nothing in them, their C headers are current,
// and they behave the same under the two shells a sandbox's `sh` is here (dash, Debian's;
// busybox ash, the busybox image's), run as the addon runs them: `sh -c SCRIPT NAME ARGS`.
import test from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { scriptOf } from "../../scripts/embed-sh.mjs";

const root = fileURLToPath(new URL("../..", import.meta.url));
const embed = join(root, "scripts/embed-sh.mjs");
const sources = readdirSync(join(root, "src"))
  .filter((layer) => existsSync(join(root, "src", layer, "sh")))
  .flatMap((layer) => readdirSync(join(root, "src", layer, "sh")).filter((n) => n.endsWith(".sh")).map((n) => join(root, "src", layer, "sh", n)));
// The text embed-sh.mjs embeds (as --print prints it).
const script = (name) => {
  const file = sources.find((f) => f.endsWith(`/${name}.sh`));
  assert.ok(file, `no ${name}.sh`);
  return scriptOf(file).join("\n");
};
const SHELLS = [
  ["dash", ["/bin/dash"]],
  ["busybox ash", ["/bin/busybox", "ash"]],
];

test("every in-sandbox script is a .sh file shellcheck finds nothing in", () => {
  assert.ok(sources.length >= 15, `${sources.length} scripts`);
  const r = spawnSync("shellcheck", sources, { encoding: "utf8" });
  assert.notEqual(r.error?.code, "ENOENT", "shellcheck is not installed (scripts/setup.sh installs it)");
  assert.equal(r.status, 0, r.stdout + r.stderr);
});

test("the embedded headers are those of the scripts (scripts/embed-sh.mjs --check)", () => {
  const r = spawnSync(process.execPath, [embed, "--check"], { encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  // No C file of the addon spells a script itself any more.
  const grep = spawnSync("grep", ["-rlE", '"sh", "-c", "[^"]', join(root, "src"), "--include=*.c"], { encoding: "utf8" });
  assert.equal(grep.stdout, "", "a script in a C string");
});

test("each header's C string is the script's embedded text, includes put in place", (t) => {
  const dir = mkdtempSync(join(tmpdir(), "anvia-sh-c-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const runnable = sources.filter((f) => !/\/_[^/]*$/.test(f));
  const header = (f) => f.replace(/^.*\/src\//, "").replace(/\.sh$/, "_sh.h");
  const ident = (f) => `${f.replace(/^.*\/(.*)\.sh$/, "$1").toUpperCase()}_SH`;
  const c = [
    "#include <stdio.h>",
    "#include <string.h>",
    ...runnable.map((f) => `#include "${header(f)}"`),
    "int main(int argc, char **argv) {",
    "  if (argc < 2) return 2;",
    ...runnable.map((f) => `  if (strcmp(argv[1], "${ident(f)}") == 0) return fputs(${ident(f)}, stdout) < 0;`),
    "  return 2;",
    "}",
  ].join("\n");
  writeFileSync(join(dir, "print.c"), c);
  const cc = spawnSync("cc", ["-std=c11", "-Wall", "-Werror", "-I", join(root, "src"), "-o", join(dir, "print"), join(dir, "print.c")], { encoding: "utf8" });
  assert.equal(cc.status, 0, cc.stderr);
  for (const f of runnable) {
    const r = spawnSync(join(dir, "print"), [ident(f)]);
    assert.equal(r.status, 0, ident(f));
    assert.equal(r.stdout.toString("latin1"), Buffer.from(scriptOf(f).join("\n")).toString("latin1"), ident(f));
  }
});

for (const [label, shell] of SHELLS) {
  const run = (name, args, { input, cwd } = {}) => {
    const r = spawnSync(shell[0], [...shell.slice(1), "-c", script(name), `anvia-${name}`, ...args], { input: input === undefined ? undefined : Buffer.from(input), cwd });
    return { status: r.status, stdout: r.stdout.toString("latin1"), stderr: r.stderr.toString() };
  };

  test(`${label}: every script parses`, () => {
    for (const file of sources.filter((f) => !/\/_[^/]*$/.test(f))) {
      const name = file.replace(/^.*\/(.*)\.sh$/, "$1");
      const r = spawnSync(shell[0], [...shell.slice(1), "-n", "-c", script(name)], { encoding: "utf8" });
      assert.equal(r.status, 0, `${name}: ${r.stderr}`);
    }
  });

  test(`${label}: the file scripts read, write and refuse as their exit codes say`, (t) => {
    const ws = mkdtempSync(join(tmpdir(), "anvia-sh-"));
    t.after(() => rmSync(ws, { recursive: true, force: true }));
    mkdirSync(join(ws, "d"));
    writeFileSync(join(ws, "d/f.txt"), "hello\n");
    symlinkSync("/etc", join(ws, "link"));
    assert.deepEqual(run("file_read", [ws, "d/f.txt", "find", "100"]), { status: 0, stdout: "hello\n", stderr: "" });
    assert.equal(run("file_read", [ws, "link/hostname", "find", "100"]).status, 91);
    assert.equal(run("file_read", [ws, "d/missing", "find", "100"]).status, 96);
    assert.deepEqual(run("file_read", [ws, "d/f.txt", "find", "3"]), { status: 99, stdout: "", stderr: "6" });
    assert.equal(run("file_read", [ws, "d", "find", "100"]).status, 94);
    assert.equal(run("file_write", [ws, "new/dir/g.txt", "create", "5"], { input: "12345" }).status, 0);
    assert.equal(readFileSync(join(ws, "new/dir/g.txt"), "utf8"), "12345");
    const short = run("file_write", [ws, "new/h.txt", "create", "9"], { input: "123" });
    assert.equal(short.status, 95);
    assert.match(short.stderr, /wrote 3 of 9 bytes/);
    assert.equal(existsSync(join(ws, "new/h.txt")), false);
    assert.equal(run("file_write", [ws, "link/escape", "create", "1"], { input: "x" }).status, 91);
    assert.equal(existsSync("/etc/escape"), false);
  });

  test(`${label}: the listing script lists as find -printf does, and fails as find on a missing directory`, (t) => {
    const ws = mkdtempSync(join(tmpdir(), "anvia-sh-"));
    t.after(() => rmSync(ws, { recursive: true, force: true }));
    mkdirSync(join(ws, "sub"));
    writeFileSync(join(ws, "a.txt"), "abc");
    writeFileSync(join(ws, ".hidden"), "");
    symlinkSync("a.txt", join(ws, "l"));
    const r = run("list", [ws]);
    assert.equal(r.status, 0, r.stderr);
    const records = r.stdout.split("\0").slice(0, -1);
    const entries = [];
    for (let i = 0; i < records.length; i += 3) entries.push(`${records[i]} ${records[i + 1]} ${records[i + 2].slice(ws.length + 1)}`);
    assert.deepEqual(entries.sort(), [`d  sub`, `f 0 .hidden`, `f 3 a.txt`, `l  l`]);
    const missing = run("list", [join(ws, "nope")]);
    assert.equal(missing.status, 1);
    assert.match(missing.stderr, /^find: .*nope: No such file or directory/);
  });

  test(`${label}: the input wrapper drains what its command leaves unread and keeps its status`, () => {
    const r = run("input_drain", ["sh", "-c", "head -c 2; exit 7"], { input: "x".repeat(1 << 20) });
    assert.equal(r.status, 7);
    assert.equal(r.stdout, "xx");
  });

  test(`${label}: the stop script ends a process group, TERM first`, async () => {
    const child = spawn("sh", ["-c", "trap 'exit 0' TERM; sleep 100 & wait"], { detached: true, stdio: "ignore" });
    await new Promise((resolve) => setTimeout(resolve, 100));
    const group = String(child.pid);
    assert.equal(run("group_check", [group]).status, 0, "the group is there");
    const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
    // Not spawnSync: this process must reap the group's leader while the script waits for
    // the group to go (a zombie still answers kill -0), as a container's init does.
    const stop = spawn(shell[0], [...shell.slice(1), "-c", script("proc_stop"), "anvia-stop", group, "2000"], { stdio: "ignore" });
    assert.equal(await new Promise((resolve) => stop.on("exit", resolve)), 0);
    assert.deepEqual(await exited, { code: 0, signal: null });
    assert.notEqual(run("group_check", [group]).status, 0, "the group is gone");
  });

  test(`${label}: the export script writes the selection as tar and refuses a link on the way`, (t) => {
    const ws = mkdtempSync(join(tmpdir(), "anvia-sh-"));
    t.after(() => rmSync(ws, { recursive: true, force: true }));
    mkdirSync(join(ws, "src"));
    writeFileSync(join(ws, "src/x.txt"), "x");
    symlinkSync("/etc", join(ws, "out"));
    const r = run("tree_export", [ws, "subtree", "src"]);
    assert.equal(r.status, 0, r.stderr);
    const list = spawnSync("tar", ["-t", "-f", "-"], { input: Buffer.from(r.stdout, "latin1"), encoding: "utf8" });
    assert.deepEqual(list.stdout.trim().split("\n").sort(), ["src/", "src/x.txt"]);
    const link = run("tree_export", [ws, "subtree", "out/ssl"]);
    assert.deepEqual([link.status, link.stderr], [91, "out"]);
    assert.equal(run("tree_export", [ws, "files", "missing.txt"]).status, 96);
  });
}
