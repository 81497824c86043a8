#!/usr/bin/env node
// importTree / exportTree through the in-sandbox agent against the engine transport and
// `docker cp`, on one sandbox (the agent's client makes it, an engine-transport client
// resumes the same container), interleaved run by run (the order rotates), with medians
// and pair ratios as in the rest of the bench (common.mjs). The tree is bench/tree.mjs's
// (nested directories, sizes spread around the average).
//
//   node bench/tree-transports.mjs [--files 2000] [--mib 50] [--runs 7] [--warmup 1]
//                                  [--user 1000:1000] [--json out.json]
//
// Every run imports into a fresh workspace directory and exports to a fresh host directory,
// both removed outside the timings, and each result is checked (file count and bytes).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { DockerSandboxClient } from "../lib/index.js";
import { IMAGE, newSandboxId, pairRatios, summarize } from "./common.mjs";
import { docker, generate, hostTotals } from "./tree.mjs";

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : dflt;
};
const FILES = Number(opt("files", 2000));
const MIB = Number(opt("mib", 50));
const RUNS = Number(opt("runs", 7));
const WARMUP = Number(opt("warmup", 1));
const USER = opt("user", "");
const JSON_OUT = opt("json", "");
const IMPLS = ["agent", "engine", "cp"];
const log = (s) => process.stderr.write(`${s}\n`);

const rotate = (list, i) => [...list.slice(i % list.length), ...list.slice(0, i % list.length)];

const agentClient = new DockerSandboxClient({ transport: "agent" });
const engineClient = new DockerSandboxClient({ transport: "engine" });
const sandbox = await agentClient.createSandbox({ image: IMAGE, id: newSandboxId("trees"), workspace: { type: "ephemeral" }, network: { mode: "none" }, ...(USER ? { user: USER } : {}) });
const container = `anvia-sandbox-${sandbox.id}`;
const work = mkdtempSync(path.join(os.tmpdir(), "anvia-bench-trees-"));
try {
  const viaEngine = await engineClient.resumeSandbox({ id: sandbox.id });
  const rt = { agent: sandbox.runtime, engine: viaEngine.runtime };
  const src = path.join(work, "src");
  mkdirSync(src);
  const made = generate(src, FILES, Math.round(MIB * 1024 * 1024));
  const tree = { files: made.paths.length, bytes: made.bytes };
  const quotas = { maxFiles: FILES * 2, maxTotalBytes: tree.bytes * 2 };
  log(`tree: ${tree.files} files, ${(tree.bytes / 2 ** 20).toFixed(1)} MiB; ${RUNS} runs (+${WARMUP} warm-up); user ${USER || "root"}; ${IMAGE}`);
  await rt.agent.exec({ command: "true" }); // the agent is up before the first timing
  const countIn = async (dir) => {
    const r = await rt.agent.exec({ command: "sh", args: ["-c", `find '${dir}' -type f | wc -l; find '${dir}' -type f -exec cat {} + | wc -c`] });
    const [files, bytes] = Buffer.from(r.stdout).toString().trim().split(/\s+/).map(Number);
    return { files, bytes };
  };
  const clean = (dir) => rt.agent.exec({ command: "rm", args: ["-rf", dir] });
  const result = { config: { files: tree.files, bytes: tree.bytes, runs: RUNS, warmup: WARMUP, user: USER || "root", image: IMAGE } };

  const importers = {
    agent: (dest) => rt.agent.importTree(src, { path: dest, quotas }),
    engine: (dest) => rt.engine.importTree(src, { path: dest, quotas }),
    cp: (dest) => docker(["cp", src, `${container}:/workspace/${dest}`]),
  };
  const samples = { agent: [], engine: [], cp: [] };
  for (let i = 0; i < WARMUP + RUNS; i++) {
    for (const impl of rotate(IMPLS, i)) {
      const dest = `imp-${impl}-${i}`;
      const s = performance.now();
      await importers[impl](dest);
      const ms = performance.now() - s;
      const got = await countIn(`/workspace/${dest}`);
      if (got.files !== tree.files || got.bytes !== tree.bytes) throw new Error(`${impl} import: ${got.files} files, ${got.bytes} bytes`);
      await clean(`/workspace/${dest}`);
      if (i >= WARMUP) samples[impl].push(ms);
      log(`  import ${i < WARMUP ? "warm-up" : `run ${i + 1 - WARMUP}/${RUNS}`} ${impl}: ${ms.toFixed(0)} ms`);
    }
  }
  result.import = summarizeAll(samples);

  await rt.engine.importTree(src, { path: "tree-src", quotas });
  if (USER) await rt.agent.exec({ command: "true" });
  const exporters = {
    agent: (dest) => rt.agent.exportTree({ kind: "subtree", path: "tree-src" }, dest, { quotas }),
    engine: (dest) => rt.engine.exportTree({ kind: "subtree", path: "tree-src" }, dest, { quotas }),
    cp: async (dest) => {
      mkdirSync(dest);
      await docker(["cp", `${container}:/workspace/tree-src`, path.join(dest, "tree-src")]);
    },
  };
  const out = { agent: [], engine: [], cp: [] };
  for (let i = 0; i < WARMUP + RUNS; i++) {
    for (const impl of rotate(IMPLS, i)) {
      const dest = path.join(work, `exp-${impl}-${i}`);
      const s = performance.now();
      await exporters[impl](dest);
      const ms = performance.now() - s;
      const got = hostTotals(path.join(dest, "tree-src"));
      if (got.files !== tree.files || got.bytes !== tree.bytes) throw new Error(`${impl} export: ${got.files} files, ${got.bytes} bytes`);
      rmSync(dest, { recursive: true, force: true });
      if (i >= WARMUP) out[impl].push(ms);
      log(`  export ${i < WARMUP ? "warm-up" : `run ${i + 1 - WARMUP}/${RUNS}`} ${impl}: ${ms.toFixed(0)} ms`);
    }
  }
  result.export = summarizeAll(out);

  for (const dir of ["import", "export"]) {
    const d = result[dir];
    const r = (x) => `${x.median.toFixed(2)}x [${x.p5?.toFixed?.(2) ?? "-"}..${x.p95?.toFixed?.(2) ?? "-"}]`;
    log(`${dir}: agent ${d.agent.median.toFixed(0)} ms, engine ${d.engine.median.toFixed(0)} ms, docker cp ${d.cp.median.toFixed(0)} ms; engine/agent ${r(d.ratios.engineOverAgent)}, cp/agent ${r(d.ratios.cpOverAgent)}`);
  }
  if (JSON_OUT) writeFileSync(JSON_OUT, `${JSON.stringify(result, null, 2)}\n`);
  console.log(JSON.stringify(result));
} finally {
  rmSync(work, { recursive: true, force: true });
  await sandbox.destroy();
}

function summarizeAll(samples) {
  const r = { samplesMs: samples };
  for (const impl of IMPLS) r[impl] = summarize(samples[impl]);
  r.ratios = { engineOverAgent: pairRatios(samples.engine, samples.agent), cpOverAgent: pairRatios(samples.cp, samples.agent) };
  return r;
}
