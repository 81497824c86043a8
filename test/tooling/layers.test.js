// The layers of src/ keep their rules (src/README.md): scripts/check-layers.mjs
// finds no include or call cycle, no call or include into a higher layer, no Node header
// in the base, codec and engine layers, an opening comment in every C file, no call
// cycle between the in-container agent's files, no global defined by both the agent and
// the addon, and no export of the addon that nothing uses.
import test from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const script = fileURLToPath(new URL("../../scripts/check-layers.mjs", import.meta.url));

test("scripts/check-layers.mjs passes", { timeout: 120_000 }, () => {
  const r = spawnSync(process.execPath, [script], { encoding: "utf8" });
  assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
  assert.match(r.stdout, /no cycle/);
});

// The checker finds what it is for: a copy of src/ with one rule broken at a time fails.
import { appendFileSync, cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const src = fileURLToPath(new URL("../../src", import.meta.url));
const breakages = {
  "an include of a higher layer": [["codec/paths.c", 'append', '\n#include "lifecycle/create.h"\n'], /codec\/paths\.c \(codec\) includes lifecycle\/create\.h/],
  "node_api.h in the engine layer": [["engine/timer.h", 'prepend', '#include <node_api.h>\n'], /engine\/timer\.[ch] \(engine\): reaches node_api\.h/],
  "a call cycle between two files": [
    ["base/tail.c", 'append', '\nint sbx_layers_probe_b(void);\nint sbx_layers_probe_a(void) { return sbx_layers_probe_b(); }\n'],
    /call cycle between files: base\/buf\.c, base\/tail\.c/,
    ["base/buf.c", 'append', '\nint sbx_layers_probe_a(void);\nint sbx_layers_probe_b(void) { return sbx_layers_probe_a(); }\n'],
  ],
  "a file without its opening comment": [["codec/spec.c", 'prepend', 'int sbx_layers_probe;\n'], /codec\/spec\.c: does not open with a comment/],
  // The agent's output queue calling back up into the connection that uses it.
  "a call cycle between two agent files": [
    ["agent/out.c", 'append', '\nvoid agent_layers_probe(void) { conn_read(); }\n'],
    /call cycle between agent files: [^\n]*agent\/conn\.c[^\n]*agent\/out\.c[\s\S]*agent\/out\.c -> agent\/conn\.c: conn_read/,
  ],
  // The agent's err_set once had the name of the addon's (base/err.c).
  "a global defined by both the agent and the addon": [
    ["agent/util.c", 'append', '\nint sbx_layers_twice(void) { return 1; }\n'],
    /symbol sbx_layers_twice is defined by the agent's agent\/util\.c and by the addon's base\/buf\.c/,
    ["base/buf.c", 'append', '\nint sbx_layers_twice(void) { return 2; }\n'],
  ],
  "an agent global without its file's prefix": [["agent/walk.c", 'append', '\nint layers_probe_walk(void) { return 0; }\n'], /agent\/walk\.c exports layers_probe_walk: the agent's globals begin with their file's name \(walk_\)/],
  "an export nothing uses": [["codec/paths.c", 'append', '\nint paths_layers_probe(void) { return 0; }\n'], /codec\/paths\.c exports paths_layers_probe, which no other file uses/],
};

test("check-layers compiles only what changed since its last run", { timeout: 120_000 }, () => {
  // A run on src/ leaves every listing cached (the test above, or this one).
  spawnSync(process.execPath, [script], { encoding: "utf8" });
  const r = spawnSync(process.execPath, [script, "--verbose"], { encoding: "utf8" });
  assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
  assert.match(r.stdout, /compiled 0 file\(s\)/);
  const cold = spawnSync(process.execPath, [script, "--verbose"], { encoding: "utf8", env: { ...process.env, ANVIA_LAYERS_NO_CACHE: "1" } });
  assert.equal(cold.status, 0, `${cold.stdout}${cold.stderr}`);
  assert.match(cold.stdout, /compiled [1-9]\d+ file\(s\)/);
});

for (const [what, [edit, expected, edit2]] of Object.entries(breakages)) {
  test(`check-layers refuses ${what}`, { timeout: 120_000 }, (t) => {
    const copy = mkdtempSync(join(tmpdir(), "anvia-layers-"));
    t.after(() => rmSync(copy, { recursive: true, force: true }));
    cpSync(src, copy, { recursive: true });
    for (const [file, how, text] of [edit, edit2].filter(Boolean)) {
      const path = join(copy, file);
      if (how === "append") appendFileSync(path, text);
      else writeFileSync(path, text + readFileSync(path, "utf8"));
    }
    const r = spawnSync(process.execPath, [script, "--src", copy], { encoding: "utf8" });
    assert.equal(r.status, 1, `${r.stdout}${r.stderr}`);
    assert.match(r.stderr, expected);
  });
}
