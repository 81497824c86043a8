#!/usr/bin/env node
// The same runtime operations as bench/run.mjs, through this package only, on three
// engines side by side (issue 15): the local Docker on its unix socket, the same Docker
// reached over ssh:// (a local sshd: the cost of the ssh transport itself), and Podman's
// Docker-compatible API. Same method as run.mjs: runs interleaved (run i measures every
// engine once, in an order rotating with i) after warm-up runs, medians and p95 per
// engine, and ratios to Docker-on-its-socket taken pair by pair.
//
//   node bench/engines.mjs [options]       (scripts/bench.sh runs it after run.mjs)
//
// The engines come from the environment (scripts/bench.sh sets them up):
//   ANVIA_BENCH_DOCKER_HOST   default unix:///var/run/docker.sock
//   ANVIA_BENCH_SSH_HOST      ssh://user@host:port (scripts/sshd.sh env); column left out if unset
//   ANVIA_BENCH_PODMAN_HOST   unix://.../podman.sock (scripts/podman.sh env); left out if unset
// Options:
//   --scale F       multiply every default run count by F (at least 1 run each)
//   --runs N        runs per operation
//   --warmup N      warm-up runs per operation (default 2)
//   --only K,K      only these operations (keys as in run.mjs)
//   --transport T   the clients' transport ("engine", "agent"; default: the package's default)
//   --large-kib N   size of the "1 MiB" payloads in KiB (default 1024)
//   --smoke         one run of everything, tiny sizes
//   --out FILE      write the JSON there (default bench/results/engines-<date>.json and
//                   bench/results/engines-latest.json)
import { readFileSync, writeFileSync, mkdirSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { DockerSandboxClient } from "../lib/index.js";
import { IMAGE, PORT, BENCH_MAX_PROCESSES, newSandboxId, setIdPrefix, summarize, pairRatios } from "./common.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));

const OPERATIONS = [
  ["createSandbox", "createSandbox (3 files)", 8],
  ["destroy", "destroy", 8],
  ["execTrue", "exec true", 30],
  ["execStdout", "exec printing {L}", 15],
  ["execStdin", "exec with {L} stdin", 15],
  ["writeTextFileSmall", "writeTextFile 1 KiB", 20],
  ["writeTextFileLarge", "writeTextFile {L}", 12],
  ["readFileSmall", "readFile 1 KiB", 20],
  ["readFileLarge", "readFile {L}", 12],
  ["listFiles", "listFiles (100 entries)", 15],
  ["startProcess", "startProcess", 10],
  ["stopProcess", "stopProcess", 10],
  ["waitForPort", "waitForPort (listening)", 15],
];

function parseArgs(argv) {
  const o = { scale: 1, runs: undefined, warmup: 2, only: undefined, transport: undefined, largeKiB: 1024, smoke: false, out: undefined };
  for (let i = 0; i < argv.length; i++) {
    const [arg, inline] = argv[i].includes("=") ? argv[i].split(/=(.*)/s) : [argv[i], undefined];
    const next = () => inline ?? argv[++i];
    switch (arg) {
      case "--scale": o.scale = Number(next()); break;
      case "--runs": o.runs = Math.max(1, Number(next())); break;
      case "--warmup": o.warmup = Number(next()); break;
      case "--only": o.only = new Set(next().split(",")); break;
      case "--transport": o.transport = next(); break;
      case "--large-kib": o.largeKiB = Math.max(1, Number(next())); break;
      case "--smoke": o.smoke = true; break;
      case "--out": o.out = path.resolve(next()); break;
      case "--id-prefix": setIdPrefix(next()); break;
      case "--help":
      case "-h":
        process.stdout.write(readFileSync(fileURLToPath(import.meta.url), "utf8").split("\n").filter((l) => l.startsWith("//")).slice(0, 24).map((l) => l.slice(3)).join("\n") + "\n");
        process.exit(0);
        break;
      default:
        throw new Error(`unknown option ${arg} (try --help)`);
    }
  }
  if (o.smoke) Object.assign(o, { runs: o.runs ?? 1, warmup: 0, largeKiB: Math.min(o.largeKiB, 64) });
  return o;
}

const log = (msg) => process.stderr.write(`\x1b[2m[bench engines]\x1b[0m ${msg}\n`);
const fmtMs = (v) => (Number.isFinite(v) ? (v >= 100 ? v.toFixed(0) : v.toFixed(1)) : "-");
const fmtX = (v) => (Number.isFinite(v) ? `${v.toFixed(2)}x` : "-");
const rotate = (list, i) => [...list.slice(i % list.length), ...list.slice(0, i % list.length)];

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const engines = [["docker", "Docker (unix socket)", process.env.ANVIA_BENCH_DOCKER_HOST ?? "unix:///var/run/docker.sock"]];
  if (process.env.ANVIA_BENCH_SSH_HOST) engines.push(["ssh", "Docker over ssh://", process.env.ANVIA_BENCH_SSH_HOST]);
  if (process.env.ANVIA_BENCH_PODMAN_HOST) engines.push(["podman", "Podman", process.env.ANVIA_BENCH_PODMAN_HOST]);
  const keys = engines.map(([k]) => k);
  const largeBytes = o.largeKiB * 1024;
  const L = largeBytes % (1024 * 1024) === 0 ? `${largeBytes / 1024 / 1024} MiB` : `${o.largeKiB} KiB`;
  const smallText = "x".repeat(1023) + "\n";
  const largeText = ("0123456789abcdef".repeat(4) + "\n").repeat(Math.ceil(largeBytes / 65)).slice(0, largeBytes - 1) + "\n";
  const largeInput = Buffer.alloc(largeBytes, 0x61);
  const initialFiles = {
    "README.md": "# bench sandbox\n\nThree small files written at creation.\n",
    "src/index.js": 'import { greet } from "./util.js";\nconsole.log(greet("sandbox"));\n',
    "src/util.js": "export function greet(name) {\n  return `hello, ${name}`;\n}\n",
  };
  const clientOptions = (host) => (o.transport ? { host, transport: o.transport } : { host });
  const clients = Object.fromEntries(engines.map(([k, , host]) => [k, new DockerSandboxClient(clientOptions(host))]));
  const started = new Date();
  const result = {
    schema: 1,
    date: started.toISOString(),
    machine: {
      cpuModel: os.cpus()[0]?.model?.trim(),
      cores: os.cpus().length,
      kernel: `${os.type()} ${os.release()}`,
      nodeVersion: process.version,
      loadAverageAtStart: os.loadavg().map((v) => Math.round(v * 100) / 100),
    },
    config: {
      image: IMAGE,
      engines: Object.fromEntries(engines.map(([k, label, host]) => [k, { label, host }])),
      transport: o.transport ?? "default",
      warmup: o.warmup,
      largeBytes,
      notes: [
        "This package only, one client per engine. Runs are interleaved: run i measures every engine once, in an order rotating with i.",
        "Ratios are engine time / Docker-on-its-socket time, run i against run i; the median of those pairs is reported.",
        "The runtime operations work on one sandbox per engine (bridge network, port 8080 published, busybox httpd listening); createSandbox/destroy use a fresh sandbox per engine and run.",
        "Over ssh://, every new connection is an `ssh ... docker system dial-stdio` process (a login); libcurl reuses its connections, each exec takes one of its own (spares are started ahead).",
      ],
    },
    operations: {},
    errors: [],
  };
  const ops = OPERATIONS.filter(([k]) => !o.only || o.only.has(k));
  const runsFor = (def) => o.runs ?? Math.max(1, Math.round(def * o.scale));
  const live = new Set();
  const cleanup = async () => {
    const all = [...live];
    live.clear();
    await Promise.allSettled(all.map((sb) => sb.destroy()));
  };
  process.once("SIGINT", () => cleanup().finally(() => process.exit(130)));
  const create = async (k, tag, extra) => {
    const sb = await clients[k].createSandbox({
      image: IMAGE,
      id: newSandboxId(`${tag}-${k}`),
      workspace: { type: "ephemeral" },
      network: { mode: "bridge", ports: [PORT] },
      ...extra,
    });
    live.add(sb);
    return sb;
  };
  const destroy = async (sb) => {
    live.delete(sb);
    await sb.destroy();
  };
  const expect = (cond, what) => {
    if (!cond) throw new Error(`check failed: ${what}`);
  };
  const decode = (b) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("utf8");
  const record = (key, label, runs, samples) => {
    const entry = { label, runs, samplesMs: samples };
    for (const k of keys) entry[k] = summarize(samples[k]);
    entry.ratios = {};
    for (const k of keys.slice(1)) entry.ratios[`${k}OverDocker`] = pairRatios(samples[k], samples.docker);
    result.operations[key] = entry;
    log(`${label}: ${keys.map((k) => `${k} ${fmtMs(entry[k].median)} ms`).join(", ")}`);
  };
  let exitCode = 0;
  try {
    log(`engines: ${engines.map(([k, , h]) => `${k}=${h}`).join(" ")}; transport ${o.transport ?? "default"}`);
    const shared = {};
    for (const [k] of engines) {
      const sb = await create(k, "eng-shared", { runtime: { maxProcesses: BENCH_MAX_PROCESSES } });
      const rt = sb.runtime;
      const fx = await rt.exec({ command: "sh", args: ["-c", 'set -e; mkdir -p data out list100 www; i=0; while [ $i -lt 100 ]; do printf "entry %d\\n" $i > list100/f$(printf %03d $i); i=$((i + 1)); done; echo ok > www/index.html'] });
      expect(fx.exitCode === 0, `fixtures on ${k}: ${decode(fx.stderr)}`);
      await rt.writeTextFile({ path: "data/small.txt", text: smallText });
      await rt.writeTextFile({ path: "data/large.txt", text: largeText });
      await rt.startProcess({ command: "busybox", args: ["httpd", "-f", "-p", `${PORT}`, "-h", "/workspace/www"] });
      await rt.waitForPort({ containerPort: PORT, timeoutMs: 10_000 });
      shared[k] = rt;
    }
    const simple = [
      ["execTrue", (t) => t.exec({ command: "true" }), (r) => expect(r.exitCode === 0, "exit 0")],
      ["execStdout", (t) => t.exec({ command: "head", args: ["-c", `${largeBytes}`, "/dev/zero"] }), (r) => expect(r.stdout.byteLength === largeBytes, "stdout size")],
      ["execStdin", (t) => t.exec({ command: "wc", args: ["-c"], input: largeInput }), (r) => expect(decode(r.stdout).trim() === `${largeBytes}`, "wc -c")],
      ["writeTextFileSmall", (t, k) => t.writeTextFile({ path: `out/${k}-small.txt`, text: smallText }), () => undefined],
      ["writeTextFileLarge", (t, k) => t.writeTextFile({ path: `out/${k}-large.txt`, text: largeText }), () => undefined],
      ["readFileSmall", (t) => t.readFile({ path: "data/small.txt" }), (r) => expect(r.byteLength === 1024, "1024 bytes")],
      ["readFileLarge", (t) => t.readFile({ path: "data/large.txt" }), (r) => expect(r.byteLength === largeBytes, "large read")],
      ["listFiles", (t) => t.listFiles({ path: "list100" }), (r) => expect(r.length === 100, "100 entries")],
      ["waitForPort", (t) => t.waitForPort({ containerPort: PORT, timeoutMs: 10_000 }), (r) => expect(r.containerPort === PORT, "port")],
    ];
    for (const [key, label, def] of ops) {
      const runs = runsFor(def);
      const full = label.replace("{L}", L);
      const samples = Object.fromEntries(keys.map((k) => [k, []]));
      try {
        const op = simple.find(([k]) => k === key);
        if (op) {
          for (let i = 0; i < o.warmup + runs; i++) {
            for (const k of rotate(keys, i)) {
              const s = performance.now();
              const r = await op[1](shared[k], k);
              const ms = performance.now() - s;
              op[2](r);
              if (i >= o.warmup) samples[k].push(ms);
            }
          }
          record(key, full, runs, samples);
        } else if (key === "startProcess" || key === "stopProcess") {
          if (result.operations[key]) continue; // measured with its pair
          const stop = Object.fromEntries(keys.map((k) => [k, []]));
          for (let i = 0; i < o.warmup + runs; i++) {
            for (const k of rotate(keys, i)) {
              let s = performance.now();
              const info = await shared[k].startProcess({ command: "sleep", args: ["600"] });
              const a = performance.now() - s;
              s = performance.now();
              const st = await shared[k].stopProcess({ processId: info.id });
              const b = performance.now() - s;
              expect(st.status === "stopped", "stopped");
              if (i >= o.warmup) {
                samples[k].push(a);
                stop[k].push(b);
              }
            }
          }
          if (!o.only || o.only.has("startProcess")) record("startProcess", "startProcess", runs, samples);
          if (!o.only || o.only.has("stopProcess")) record("stopProcess", "stopProcess", runs, stop);
        } else if (key === "createSandbox" || key === "destroy") {
          if (result.operations[key]) continue;
          const destroyed = Object.fromEntries(keys.map((k) => [k, []]));
          for (let i = 0; i < o.warmup + runs; i++) {
            const made = {};
            for (const k of rotate(keys, i)) {
              const s = performance.now();
              made[k] = await create(k, "eng", { files: initialFiles });
              if (i >= o.warmup) samples[k].push(performance.now() - s);
            }
            for (const k of rotate(keys, i)) {
              const s = performance.now();
              await destroy(made[k]);
              if (i >= o.warmup) destroyed[k].push(performance.now() - s);
            }
          }
          if (!o.only || o.only.has("createSandbox")) record("createSandbox", OPERATIONS[0][1], runs, samples);
          if (!o.only || o.only.has("destroy")) record("destroy", "destroy", runs, destroyed);
        }
      } catch (error) {
        result.errors.push(`${key}: ${error?.stack ?? error}`);
        log(`FAILED ${key}: ${error?.message ?? error}`);
        exitCode = 1;
      }
    }
  } catch (error) {
    result.errors.push(String(error?.stack ?? error));
    log(`FAILED: ${error?.stack ?? error}`);
    exitCode = 1;
  } finally {
    await cleanup();
  }
  result.machine.loadAverageAtEnd = os.loadavg().map((v) => Math.round(v * 100) / 100);
  result.seconds = Math.round((Date.now() - started.getTime()) / 1000);
  const table = formatTable(result, engines);
  process.stdout.write(table);
  result.table = table;
  const dir = path.join(here, "results");
  mkdirSync(dir, { recursive: true });
  const json = JSON.stringify(result, null, 1) + "\n";
  if (o.out) writeFileSync(o.out, json);
  else if (!o.smoke) {
    writeFileSync(path.join(dir, `engines-${result.date.replace(/[:.]/g, "-")}.json`), json);
    writeFileSync(path.join(dir, "engines-latest.json"), json);
  }
  return exitCode;
}

function formatTable(result, engines) {
  const keys = engines.map(([k]) => k);
  const cols = engines.map(([k, label]) => ({ k, label }));
  const lines = [];
  lines.push(`@anvia/sandbox on each engine, ${result.date}; transport ${result.config.transport}`);
  lines.push(`${result.machine.cpuModel} x${result.machine.cores}, ${result.machine.kernel}, Node ${result.machine.nodeVersion}`);
  lines.push(`load average ${result.machine.loadAverageAtStart.join(" ")} at start, ${result.machine.loadAverageAtEnd.join(" ")} at end; ${result.seconds} s`);
  lines.push("");
  const head1 = ["operation".padEnd(25), "runs"];
  const head2 = ["".padEnd(25), "    "];
  for (const c of cols) {
    head1.push(c.label.padStart(22));
    head2.push("median / p95 ms".padStart(22));
  }
  for (const k of keys.slice(1)) {
    head1.push(`${k}/docker`.padStart(14));
    head2.push("(pairs)".padStart(14));
  }
  lines.push(head1.join("  "), head2.join("  "));
  lines.push(head1.map((h) => "-".repeat(h.length)).join("  "));
  for (const [key] of OPERATIONS) {
    const e = result.operations[key];
    if (!e) continue;
    const row = [e.label.padEnd(25), String(e.runs).padStart(4)];
    for (const k of keys) row.push(`${fmtMs(e[k].median)} / ${fmtMs(e[k].p95)}`.padStart(22));
    for (const k of keys.slice(1)) row.push(fmtX(e.ratios[`${k}OverDocker`].median).padStart(14));
    lines.push(row.join("  "));
  }
  if (result.errors.length) lines.push("", `errors: ${result.errors.length} (see the JSON)`);
  return lines.join("\n") + "\n";
}

process.exitCode = await main();
