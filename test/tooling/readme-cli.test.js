// The CLI's documented invocations as tests (issue 30): every `anvia-sandbox` command line
// of the README's shell blocks, and every example of `--help`, runs through the package's
// bin with `--dry-run` added (the files it would generate are printed, nothing is written
// or built, no engine is asked) and must exit 0 having said what it would create; the
// wizard (no options: it needs a terminal) is left to test/unit/cli-*.test.js. Every flag
// the README names is one `--help` lists.
import test from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const repo = fileURLToPath(new URL("../..", import.meta.url));
const bin = join(repo, "bin/anvia-sandbox.js");
const readme = readFileSync(join(repo, "README.md"), "utf8");

const run = (args, cwd) => spawnSync(process.execPath, [bin, ...args], { cwd, encoding: "utf8", env: { ...process.env, NO_COLOR: "1" } });

/** The argument words of each `anvia-sandbox ...` line of the README's sh blocks. */
function readmeCommands() {
  const out = [];
  let inSh = false;
  for (const line of readme.split("\n")) {
    if (/^```(sh|bash|console)\s*$/.test(line)) inSh = true;
    else if (line === "```") inSh = false;
    else if (inSh) {
      const m = /^(?:npx\s+)?anvia-sandbox\s+([^#]*?)\s*(?:#.*)?$/.exec(line.trim());
      if (m) out.push(m[1].split(/\s+/).filter(Boolean));
    }
  }
  return out;
}

const help = run(["--help"], repo);

test("--help exits 0 and lists every option the README names", () => {
  assert.equal(help.status, 0, help.stderr);
  const named = new Set(readmeCommands().flatMap((words) => words.filter((w) => w.startsWith("--"))));
  assert.ok(named.size > 0);
  for (const flag of named) assert.ok(help.stdout.includes(flag), `the README names ${flag}, which --help does not list`);
});

const documented = [
  ...readmeCommands().map((words) => ({ from: "README.md", words })),
  // The examples of --help (after its "Examples:" line).
  ...[...help.stdout.slice(help.stdout.indexOf("\nExamples:")).matchAll(/^\s+pnpm dlx @anvia\/sandbox (.+)$/gm)].map((m) => ({ from: "--help", words: m[1].trim().split(/\s+/) })),
];

test("the README and --help document command lines", () => {
  assert.ok(documented.filter((d) => d.from === "README.md").length >= 2, JSON.stringify(documented));
  assert.ok(documented.filter((d) => d.from === "--help").length >= 2, JSON.stringify(documented));
});

for (const { from, words } of documented) {
  // The bare command is the wizard, and --help is the test above.
  if (words.length <= 1 || words.includes("--help")) continue;
  test(`${from}: anvia-sandbox ${words.join(" ")} (with --dry-run)`, () => {
    const cwd = mkdtempSync(join(tmpdir(), "anvia-cli-doc-"));
    try {
      const r = run([...words, "--dry-run"], cwd);
      assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
      assert.match(r.stdout, /^Would create \S+/m, r.stdout);
      assert.match(r.stdout, /^--- Dockerfile$/m, r.stdout);
      assert.deepEqual(readdirSync(cwd), [], "a dry run writes nothing");
    } finally {
      rmSync(cwd, { recursive: true, force: true });
    }
  });
}
