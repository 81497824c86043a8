#!/usr/bin/env node
// Checks the rules of the addon's layers (src/README.md):
//
//   1. every C file lives in a layer folder of src/ (or is src/addon.c, the top), and
//      opens with a comment saying what it owns;
//   2. a file includes only headers of its own layer or of the layers below it;
//   3. no include cycle between modules (a module is a .c file with its .h);
//   4. no call cycle between files, and no call into a higher layer: the symbols each
//      object file takes from another are read with `nm` from objects compiled here;
//   5. base, codec and engine never include node_api.h, even through another header;
//      base and codec include neither libuv nor libcurl; nothing includes addon.c's
//      header (it has none) or a .c file;
//   6. the in-container agent (src/agent/) includes nothing of the addon but the shared
//      wire codec, and the addon includes nothing of the agent;
//   7. no call cycle between the agent's files (its layers are listed in src/agent/agent.h):
//      read with `nm` from the agent's own objects, compiled here as its build does;
//   8. no global symbol defined by both the addon and the agent (one name, one meaning:
//      the structure drawing and a reader's grep both mistook one for the other);
//   9. no dead export: every global the addon defines is used by another of its files,
//      by a C test source (test/**/*.c), or is the module's entry point;
//  10. every global of the agent begins with its file's name (files.c: files_, ops.c: op_).
//
// Usage: node scripts/check-layers.mjs [--verbose] [--src DIR]. Exit status 1 when a rule
// is broken. --src checks another tree laid out like src/ (the tests use it on a copy
// with a rule broken on purpose).
//
// Incremental: the `nm -P` listing of each object is kept in build-layers/, named by
// a hash of the compiler flags, the file and every local header it reaches, so a run
// compiles only what changed since the last one (the listing does not depend on where the
// tree is, so a --src copy reuses the entries of the files it did not change). A run on
// src/ itself removes the entries it did not use; ANVIA_LAYERS_NO_CACHE=1 compiles all.
import { createHash } from "node:crypto";
import { execFile, execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir, cpus } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const srcArg = process.argv.indexOf("--src");
const src = srcArg > 0 ? process.argv[srcArg + 1] : join(root, "src");
const verbose = process.argv.includes("--verbose");

// Bottom to top. A layer may use itself and every layer before it.
const LAYERS = ["base", "codec", "engine", "sandbox", "napi", "runtime", "lifecycle", "top"];
const NO_NAPI = new Set(["base", "codec", "engine"]);
const NO_IO_LIBS = new Set(["base", "codec"]);
const AGENT_SHARED = new Set(["codec/agent_wire.h"]);

const problems = [];
const problem = (msg) => problems.push(msg);

function walk(dir) {
  const out = [];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...walk(p));
    else if (/\.[ch]$/.test(name)) out.push(relative(src, p));
  }
  return out;
}

const files = walk(src);
const layerOf = (file) => {
  if (file === "addon.c") return "top";
  const folder = file.split("/")[0];
  return file.includes("/") ? folder : null;
};
const rank = (layer) => LAYERS.indexOf(layer);
const moduleOf = (file) => file.replace(/\.[ch]$/, "");

// ---- the nm cache ----
const cacheDir = join(root, "build-layers");
const useCache = process.env.ANVIA_LAYERS_NO_CACHE !== "1";
const cacheUsed = new Set();
let compiled = 0;
if (useCache) mkdirSync(cacheDir, { recursive: true });
// The local headers a file reaches, itself first (from the includes map below).
function localClosure(file) {
  const out = [];
  const seen = new Set();
  const visit = (f) => {
    if (seen.has(f) || !includes.has(f)) return;
    seen.add(f);
    out.push(f);
    for (const inc of includes.get(f).local) visit(inc);
  };
  visit(file);
  return out;
}
// The `nm -P` lines of `file` compiled with `flags` (which name no path of the tree): from
// the cache when the file and its headers are unchanged, else compiled into `obj`.
async function nmLines(file, flags, includeArgs, obj) {
  const hash = createHash("sha256").update(flags.join("\0"));
  for (const f of localClosure(file)) hash.update(`\0${f}\0`).update(includes.get(f).text);
  const key = hash.digest("hex").slice(0, 32);
  const entry = join(cacheDir, `${key}.nm`);
  if (useCache) {
    cacheUsed.add(`${key}.nm`);
    try {
      return readFileSync(entry, "utf8").split("\n").filter(Boolean);
    } catch {}
  }
  await new Promise((resolveP, reject) =>
    execFile("cc", [...flags, ...includeArgs, "-c", "-o", obj, join(src, file)], (err, _out, stderr) =>
      err ? reject(new Error(`${file}: ${stderr}`)) : resolveP(),
    ),
  );
  compiled++;
  const text = execFileSync("nm", ["-P", obj], { encoding: "utf8" });
  if (useCache) {
    const tmp = `${entry}.${process.pid}.tmp`;
    writeFileSync(tmp, text);
    renameSync(tmp, entry);
  }
  return text.split("\n").filter(Boolean);
}
// Runs `work` over `items`, as many at once as there are CPUs.
async function eachParallel(items, work) {
  const queue = [...items];
  await Promise.all(
    Array.from({ length: Math.max(1, cpus().length) }, async () => {
      while (queue.length) await work(queue.shift());
    }),
  );
}
// ---- includes ----
const includes = new Map(); // file -> { local: [..], system: [..] }
for (const file of files) {
  const text = readFileSync(join(src, file), "utf8");
  // As the preprocessor finds a quoted include: next to the including file, then from src/
  // (the agent's build: from src/agent and src/codec).
  const from = file.startsWith("agent/") ? [dirname(file), "agent", "codec"] : file.includes("/") ? [dirname(file), "."] : ["."];
  const local = [...text.matchAll(/^\s*#\s*include\s+"([^"]+)"/gm)].map((m) => {
    const dir = from.find((d) => existsSync(join(src, d, m[1])));
    return dir === undefined ? m[1] : join(dir, m[1]);
  });
  const system = [...text.matchAll(/^\s*#\s*include\s+<([^>]+)>/gm)].map((m) => m[1]);
  includes.set(file, { local, system, text });
  if (!/^\/\*/.test(text)) problem(`${file}: does not open with a comment saying what it owns`);
}

const addonFiles = files.filter((f) => !f.startsWith("agent/"));
const agentFiles = files.filter((f) => f.startsWith("agent/"));

for (const file of addonFiles) {
  const layer = layerOf(file);
  if (layer === null || rank(layer) < 0) {
    problem(`${file}: not in a layer folder (${LAYERS.slice(0, -1).join(", ")}) nor src/addon.c`);
    continue;
  }
  for (const inc of includes.get(file).local) {
    if (inc.endsWith(".c")) problem(`${file}: includes a .c file (${inc})`);
    if (inc.startsWith("agent/")) problem(`${file}: includes the in-container agent's ${inc}`);
    if (!files.includes(inc)) {
      problem(`${file}: includes "${inc}", which is not a file under src/ (includes name "layer/name.h")`);
      continue;
    }
    const target = layerOf(inc);
    if (rank(target) > rank(layer)) problem(`${file} (${layer}) includes ${inc} (${target}), a higher layer`);
  }
}
for (const file of agentFiles) {
  for (const inc of includes.get(file).local) {
    // The agent's build puts src/codec on its include path for the shared wire codec.
    if (!inc.startsWith("agent/") && !AGENT_SHARED.has(inc) && !AGENT_SHARED.has(`codec/${inc}`))
      problem(`${file}: the agent includes ${inc}; it may use libc and ${[...AGENT_SHARED].join(", ")} only`);
  }
}

// Transitive system includes (node_api.h through another header counts).
const closureMemo = new Map();
function systemClosure(file, seen = new Set()) {
  if (closureMemo.has(file)) return closureMemo.get(file);
  if (seen.has(file)) return new Set();
  seen.add(file);
  const out = new Set(includes.get(file)?.system ?? []);
  for (const inc of includes.get(file)?.local ?? []) {
    if (!includes.has(inc)) continue;
    for (const s of systemClosure(inc, seen)) out.add(s);
  }
  closureMemo.set(file, out);
  return out;
}
for (const file of addonFiles) {
  const layer = layerOf(file);
  const sys = systemClosure(file);
  if (NO_NAPI.has(layer) && sys.has("node_api.h")) problem(`${file} (${layer}): reaches node_api.h`);
  if (NO_IO_LIBS.has(layer)) {
    for (const lib of ["uv.h", "curl/curl.h", "openssl/ssl.h"])
      if (sys.has(lib)) problem(`${file} (${layer}): reaches <${lib}>`);
  }
}

// Module include graph and its cycles.
function cycles(graph) {
  // Tarjan's strongly connected components; any component of 2+ nodes is a cycle.
  let index = 0;
  const idx = new Map(), low = new Map(), stack = [], on = new Set(), out = [];
  const visit = (v) => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v), idx.get(w)));
    }
    if (low.get(v) === idx.get(v)) {
      const comp = [];
      let w;
      do {
        w = stack.pop();
        on.delete(w);
        comp.push(w);
      } while (w !== v);
      if (comp.length > 1) out.push(comp.sort());
    }
  };
  for (const v of graph.keys()) if (!idx.has(v)) visit(v);
  return out;
}

const includeGraph = new Map();
for (const file of addonFiles) {
  const from = moduleOf(file);
  if (!includeGraph.has(from)) includeGraph.set(from, new Set());
  for (const inc of includes.get(file).local) {
    const to = moduleOf(inc);
    if (to !== from && includes.has(inc)) includeGraph.get(from).add(to);
  }
}
for (const comp of cycles(includeGraph)) problem(`include cycle between modules: ${comp.join(", ")}`);

// ---- calls, from the objects ----

// Compiles `cfiles` (or takes their listings from the cache) and reads their symbols: which
// file defines each global, what each file takes from elsewhere, and the graph of files
// calling files. A global defined twice is a problem.
async function symbolsOf(cfiles, flags, includeArgs) {
  const objdir = mkdtempSync(join(tmpdir(), "anvia-layers-"));
  const nmOf = new Map();
  try {
    await eachParallel(cfiles, async (file) => {
      nmOf.set(file, await nmLines(file, flags, includeArgs, join(objdir, file.replace(/\//g, "__") + ".o")));
    });
  } finally {
    rmSync(objdir, { recursive: true, force: true });
  }
  const defined = new Map(); // symbol -> file
  const undefinedBy = new Map(); // file -> [symbols]
  for (const file of cfiles) {
    const undef = [];
    for (const line of nmOf.get(file)) {
      const [name, type] = line.split(" ");
      if (type === "U") undef.push(name);
      else if (/[TDBR]/.test(type)) {
        if (defined.has(name)) problem(`symbol ${name} is defined in both ${defined.get(name)} and ${file}`);
        defined.set(name, file);
      }
    }
    undefinedBy.set(file, undef);
  }
  const callGraph = new Map();
  for (const file of cfiles) {
    const edges = new Set();
    for (const sym of undefinedBy.get(file)) {
      const target = defined.get(sym);
      if (target && target !== file) edges.add(target);
    }
    callGraph.set(file, edges);
  }
  return { defined, undefinedBy, callGraph };
}

// Every call cycle of `callGraph`, with the symbols that tie it.
function cycleProblems(what, { defined, undefinedBy, callGraph }) {
  for (const comp of cycles(callGraph)) {
    const ties = [];
    for (const a of comp)
      for (const sym of undefinedBy.get(a)) {
        const b = defined.get(sym);
        if (b && b !== a && comp.includes(b)) ties.push(`${a} -> ${b}: ${sym}`);
      }
    problem(`call cycle between ${what}: ${comp.join(", ")}\n    ${ties.join("\n    ")}`);
  }
}

const cfiles = addonFiles.filter((f) => f.endsWith(".c"));
const nodeInclude = process.env.ANVIA_NODEDIR ? join(process.env.ANVIA_NODEDIR, "include/node") : "/usr/include/node";
// ANVIA_TEST_EXPORTS: the debug build's superset (the unit tests' natives included).
const addon = await symbolsOf(cfiles, ["-std=c11", "-D_GNU_SOURCE", "-DNAPI_VERSION=8", "-DANVIA_TEST_EXPORTS", "-O0", "-w"], [`-I${src}`, `-I${nodeInclude}`]);
for (const file of cfiles) {
  const layer = layerOf(file);
  for (const sym of addon.undefinedBy.get(file)) {
    const target = addon.defined.get(sym);
    if (target && target !== file && rank(layerOf(target)) > rank(layer))
      problem(`${file} (${layer}) uses ${sym} of ${target} (${layerOf(target)}), a higher layer`);
  }
}
cycleProblems("files", addon);
if (verbose) {
  for (const layer of LAYERS) {
    const inLayer = cfiles.filter((f) => layerOf(f) === layer);
    console.log(`${layer}: ${inLayer.length} files`);
    for (const f of inLayer) console.log(`  ${f} -> ${[...addon.callGraph.get(f)].join(", ") || "(libc and libraries only)"}`);
  }
}

// ---- the agent's calls, from its own objects ----
const agentCfiles = agentFiles.filter((f) => f.endsWith(".c"));
// -fno-common: a global without an initializer (the state `g`) is defined where it is
// written, so nm names its file.
const agent = await symbolsOf(agentCfiles, ["-std=c11", "-O0", "-w", "-fno-common"], [`-I${join(src, "agent")}`, `-I${join(src, "codec")}`]);
// Rule 8.
for (const [sym, file] of agent.defined) {
  const other = addon.defined.get(sym);
  if (other) problem(`symbol ${sym} is defined by the agent's ${file} and by the addon's ${other}: give one of them its file's prefix`);
}
cycleProblems("agent files", agent);
// Rule 10: a global of the agent says its file: the file's name (or that name without a
// final "s": ops.c's op_, ports.c's port_) and "_". main() and the state `g` (state.c) are
// the exceptions.
for (const [sym, file] of agent.defined) {
  if (sym === "main" || (sym === "g" && file === "agent/state.c")) continue;
  const stem = file.replace(/^.*\//, "").replace(/\.c$/, "");
  if (![stem, stem.replace(/s$/, "")].some((p) => sym.startsWith(`${p}_`)))
    problem(`${file} exports ${sym}: the agent's globals begin with their file's name (${stem}_)`);
}
if (verbose) {
  console.log(`agent: ${agentCfiles.length} files`);
  for (const f of agentCfiles) console.log(`  ${f} -> ${[...agent.callGraph.get(f)].join(", ") || "(libc and the wire codec only)"}`);
}

// ---- rule 9: dead exports ----
{
  // What the C test sources (fuzzers, test agents, drivers) call of the addon's files (the
  // repository's tests, also for a --src copy).
  const testRoot = join(root, "test");
  const testText = [];
  const walkTests = (dir) => {
    if (!existsSync(dir)) return;
    for (const name of readdirSync(dir)) {
      const p = join(dir, name);
      if (name === "node_modules" || name === "corpus") continue;
      if (statSync(p).isDirectory()) walkTests(p);
      else if (/\.[ch]$/.test(name)) testText.push(readFileSync(p, "utf8"));
    }
  };
  walkTests(testRoot);
  const tests = testText.join("\n");
  const ENTRY = new Set(["napi_register_module_v1", "node_api_module_get_api_version_v1"]);
  const addonUsed = new Set();
  for (const [file, syms] of addon.undefinedBy) for (const sym of syms) if (addon.defined.get(sym) !== file) addonUsed.add(sym);
  for (const [sym, file] of addon.defined) {
    if (addonUsed.has(sym) || ENTRY.has(sym) || new RegExp(`\\b${sym}\\b`).test(tests)) continue;
    problem(`${file} exports ${sym}, which no other file uses: make it static or remove it`);
  }
}

if (useCache && srcArg < 0) {
  for (const name of readdirSync(cacheDir)) if (!cacheUsed.has(name)) rmSync(join(cacheDir, name), { force: true });
}
if (verbose) console.log(`check-layers: compiled ${compiled} file(s)${useCache ? ", the rest from build-layers/" : " (no cache)"}`);

if (problems.length) {
  console.error(`check-layers: ${problems.length} problem(s):`);
  for (const p of problems) console.error(`  - ${p}`);
  process.exit(1);
}
console.log(`check-layers: ${addonFiles.length} addon files in ${LAYERS.length - 1} layers and addon.c, ${agentFiles.length} agent files: no cycle, no upward or forbidden include, no upward call, no symbol defined twice, no dead export, every agent global with its file's prefix.`);
