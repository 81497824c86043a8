#!/usr/bin/env node
// Runtime operations under each OCI runtime the daemon has (containerRuntime: runc, the
// default; gVisor's runsc; crun), through the agent and through the engine path: one
// sandbox per runtime (network none), the same calls interleaved run by run (the order of
// the runtimes rotates), medians and p95 per runtime and transport, and pair ratios
// against runc (run i against run i, common.mjs).
//
//   node bench/runtimes.mjs [--runs 40] [--warmup 5] [--runtimes default,runsc,crun]
//                           [--json out.json]
//
// Runtimes the daemon does not have are left out with a note (scripts/dockerd.sh
// registers runsc and crun when they are installed).
import { writeFileSync } from "node:fs";
import { DockerSandboxClient } from "../lib/index.js";
import { IMAGE, newSandboxId, pairRatios, summarize } from "./common.mjs";

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : dflt;
};
const RUNS = Number(opt("runs", 40));
const WARMUP = Number(opt("warmup", 5));
const WANTED = opt("runtimes", "default,runsc,crun").split(",");
const JSON_OUT = opt("json", "");
const log = (s) => process.stderr.write(`${s}\n`);
const rotate = (list, i) => [...list.slice(i % list.length), ...list.slice(0, i % list.length)];

const clients = { agent: new DockerSandboxClient({ transport: "agent" }), engine: new DockerSandboxClient({ transport: "engine" }) };
const payload = "x".repeat(1024);
const ops = {
  execTrue: (rt) => rt.exec({ command: "true" }),
  writeTextFile: (rt) => rt.writeTextFile({ path: "bench/f.txt", text: payload }),
  readFile: (rt) => rt.readFile({ path: "bench/f.txt" }),
  listFiles: (rt) => rt.listFiles({ path: "bench" }),
};

const sandboxes = [];
const runtimes = [];
try {
  for (const name of WANTED) {
    let sb;
    try {
      sb = await clients.agent.createSandbox({
        image: IMAGE,
        id: newSandboxId(`rt-${name}`),
        workspace: { type: "ephemeral" },
        network: { mode: "none" },
        ...(name === "default" ? {} : { containerRuntime: name }),
      });
    } catch (error) {
      if (error.code === "runtime_not_found") {
        log(`${name}: not registered in the daemon, left out`);
        continue;
      }
      throw error;
    }
    sandboxes.push(sb);
    // The engine-path handle on the same container: resumeSandbox restarts it, so it comes
    // before the agent's first call.
    const viaEngine = await clients.engine.resumeSandbox({ id: sb.id });
    const rt = { agent: sb.runtime, engine: viaEngine.runtime };
    await rt.agent.exec({ command: "true" });
    await rt.agent.writeTextFile({ path: "bench/f.txt", text: payload });
    runtimes.push({ name, rt });
  }
  const samples = {};
  for (const r of runtimes) for (const t of ["agent", "engine"]) for (const op of Object.keys(ops)) samples[`${r.name}/${t}/${op}`] = [];
  log(`${RUNS} runs (+${WARMUP} warm-up) of ${Object.keys(ops).join(", ")} under ${runtimes.map((r) => r.name).join(", ")}; ${IMAGE}`);
  for (let i = 0; i < WARMUP + RUNS; i++) {
    for (const r of rotate(runtimes, i)) {
      for (const t of ["agent", "engine"]) {
        for (const [op, fn] of Object.entries(ops)) {
          const t0 = performance.now();
          await fn(r.rt[t]);
          const ms = performance.now() - t0;
          if (i >= WARMUP) samples[`${r.name}/${t}/${op}`].push(ms);
        }
      }
    }
  }
  const result = { config: { runs: RUNS, warmup: WARMUP, image: IMAGE, runtimes: runtimes.map((r) => r.name) }, results: {} };
  const rows = [["runtime", "transport", "operation", "median ms", "p95 ms", "runc/this (pairs)"]];
  for (const key of Object.keys(samples)) {
    const [name, t, op] = key.split("/");
    const s = summarize(samples[key]);
    const base = samples[`default/${t}/${op}`];
    const ratio = name !== "default" && base ? pairRatios(base, samples[key]) : undefined;
    result.results[key] = { ...s, ratioToRunc: ratio && { median: ratio.median, ci95: ratio.ci95 } };
    rows.push([name === "default" ? "runc" : name, t, op, s.median.toFixed(2), s.p95.toFixed(2), ratio ? ratio.median.toFixed(2) : "-"]);
  }
  const widths = rows[0].map((_, c) => Math.max(...rows.map((row) => row[c].length)));
  for (const row of rows) console.log(row.map((cell, c) => cell.padEnd(widths[c])).join("  "));
  if (JSON_OUT) writeFileSync(JSON_OUT, `${JSON.stringify(result, null, 2)}\n`);
} finally {
  for (const sb of sandboxes) await sb.destroy().catch(() => undefined);
}
