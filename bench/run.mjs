#!/usr/bin/env node
// `npm run bench`: the same operations four ways, in one process and one run, against
// the same engine and image: this package through its in-sandbox agent ("agent":
// transport "agent"), this package through the Engine API ("engine": transport
// "engine"), the original's docker CLI invocations ("cli"), and dockerode. Runs are
// interleaved (run i does every implementation once, in an order that rotates with i) so
// that drift on the machine hits all four alike, and ratios are computed pair by pair
// (run i against run i): CLI/engine, dockerode/engine, engine/agent, CLI/agent.
//
//   node --expose-gc bench/run.mjs [options]      (re-executes itself with --expose-gc)
//
// Options (defaults size the whole run at about 15-20 minutes on a 2-core machine):
//   --scale F            multiply every default run count by F (at least 1 run each)
//   --runs N             runs per operation (overrides the defaults and --scale)
//   --warmup N           warm-up runs per operation (default 3)
//   --gap-ms N           idle time before each measured runtime call (default 25): the
//                        previous column's call (a docker CLI process exiting, runc
//                        tearing an exec down) is not billed to the next one
//   --op KEY=N           runs for one operation (repeatable); keys are listed by --list
//   --only KEY,KEY       only these operations and extras (execStream, eventLoopDelay,
//                        leak, agentLeak, agentFirstCall, ...); keys are listed by --list
//   --large-kib N        size of the "1 MiB" payloads, in KiB (default 1024)
//   --stream-mib N       execStream size in MiB (default 256); --stream-runs N (default 3)
//   --concurrency N      concurrent execs for the event-loop test (default 64);
//   --eld-rounds N       rounds of it per implementation (default 3)
//   --leak-execs N       engine leak test: execs between the RSS/fd readings (default 5000);
//   --leak-warmup N      engine leak test: execs before the first reading (default 300);
//   --leak-concurrency N calls in flight during both leak tests (default 2)
//   --agent-leak-ops N   agent leak test: operations between the readings, a rotation of
//                        exec, writeTextFile, readFile, listFiles (default 10000);
//   --agent-leak-warmup N  operations before its first reading (default 10000: V8 grows
//                        its young generation for the first few thousand)
//   --first-call-runs N  fresh sandboxes for the agent's first-call cost (default 8)
//   --watch-runs N       writes timed to their watchFiles event (default 60)
//   --terminal-runs N    keystrokes timed to their echo in a terminal, per path (default 100)
//   --tree-files N       files of the treeImport/treeExport tree (default 2000);
//   --tree-mib N         its size in MiB (default 50); --tree-runs N (default 3);
//   --tree-loop-concurrency N  writeFile/readFile calls in flight in the loop (default 1);
//   --tree-loop-runs N   runs that include the loop (the first N; default all: a plain
//                        loop takes minutes per run)
//   --no-extras          skip the stream, first-call, event-loop, leak and tree measurements
//   --smoke              one run of everything with tiny sizes (used by the tests)
//   --out FILE           write the JSON there (default bench/results/<date>.json and
//                        bench/results/latest.json)
//   --id-prefix P        sandbox ids start with P (default "bench")
//   --list               print the operation keys and exit
import { spawn, execFile, execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "..");

// ---------------------------------------------------------------- options

const OPERATIONS = [
  // key, label (sizes filled in later), default runs
  ["createSandbox", "createSandbox (3 files)", 12],
  ["destroy", "destroy", 12],
  ["execTrue", "exec true", 60],
  ["execStdout", "exec printing {L}", 30],
  ["execStdin", "exec with {L} stdin", 30],
  ["writeTextFileSmall", "writeTextFile 1 KiB", 40],
  ["writeTextFileLarge", "writeTextFile {L}", 25],
  ["readFileSmall", "readFile 1 KiB", 40],
  ["readFileLarge", "readFile {L}", 25],
  ["listFiles", "listFiles (100 entries)", 30],
  ["startProcess", "startProcess", 20],
  ["stopProcess", "stopProcess", 20],
  ["waitForPort", "waitForPort (listening)", 30],
];
const EXTRAS = ["execStream", "watchLatency", "terminalLatency", "eventLoopDelay", "leak", "agentLeak", "agentFirstCall", "treeImport", "treeExport"];
// The columns. "agent" and "engine" are both this package (its public API), through a
// client with transport "agent" and one with transport "engine".
const IMPLS = ["agent", "engine", "cli", "dockerode"];
const IMPL_LABEL = { agent: "agent", engine: "engine", cli: "docker CLI", dockerode: "dockerode" };
// Pair ratios (run i against run i), numerator over denominator: [key, numerator, denominator, label].
const RATIOS = [
  ["cliOverEngine", "cli", "engine", "CLI/engine"],
  ["dockerodeOverEngine", "dockerode", "engine", "dockerode/engine"],
  ["engineOverAgent", "engine", "agent", "engine/agent"],
  ["cliOverAgent", "cli", "agent", "CLI/agent"],
];
// Schema-1 names kept in the JSON for older readers: "package" was the one column of this
// package (today's "engine"), and its ratios were cliOverPackage / dockerodeOverPackage.
const LEGACY_ALIASES = { package: "engine" };
const LEGACY_RATIOS = { cliOverPackage: "cliOverEngine", dockerodeOverPackage: "dockerodeOverEngine" };

function parseArgs(argv) {
  const o = {
    scale: 1,
    runs: undefined,
    warmup: 3,
    gapMs: 25,
    opRuns: {},
    only: undefined,
    largeKiB: 1024,
    streamMiB: 256,
    streamRuns: 3,
    concurrency: 64,
    eldRounds: 3,
    leakExecs: 5000,
    leakWarmup: 300,
    leakConcurrency: 2,
    agentLeakOps: 10000,
    agentLeakWarmup: 10000,
    firstCallRuns: 8,
    watchRuns: 60,
    terminalRuns: 100,
    treeFiles: 2000,
    treeMiB: 50,
    treeRuns: 3,
    treeLoopConcurrency: 1,
    treeLoopRuns: undefined,
    extras: true,
    smoke: false,
    out: undefined,
    list: false,
  };
  const num = (v, name) => {
    const n = Number(v);
    if (!Number.isFinite(n) || n < 0) throw new Error(`${name} needs a non-negative number, got ${v}`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    let arg = argv[i];
    let value;
    const eq = arg.indexOf("=");
    if (arg.startsWith("--") && eq > 0 && !arg.startsWith("--op=")) {
      value = arg.slice(eq + 1);
      arg = arg.slice(0, eq);
    } else if (arg.startsWith("--op=")) {
      value = arg.slice(5);
      arg = "--op";
    }
    const next = () => value ?? argv[++i];
    switch (arg) {
      case "--scale": o.scale = num(next(), arg); break;
      case "--runs": o.runs = Math.max(1, Math.round(num(next(), arg))); break;
      case "--warmup": o.warmup = Math.round(num(next(), arg)); break;
      case "--gap-ms": o.gapMs = Math.max(0, num(next(), arg)); break;
      case "--op": {
        const [k, v] = next().split("=");
        if (!OPERATIONS.some(([key]) => key === k)) throw new Error(`unknown operation ${k} (see --list)`);
        o.opRuns[k] = Math.max(1, Math.round(num(v, `--op ${k}`)));
        break;
      }
      case "--only": {
        o.only = new Set(next().split(","));
        for (const k of o.only) if (!OPERATIONS.some(([key]) => key === k) && !EXTRAS.includes(k)) throw new Error(`unknown key ${k} (see --list)`);
        break;
      }
      case "--large-kib": o.largeKiB = Math.max(1, Math.round(num(next(), arg))); break;
      case "--stream-mib": o.streamMiB = Math.max(1, Math.round(num(next(), arg))); break;
      case "--stream-runs": o.streamRuns = Math.max(1, Math.round(num(next(), arg))); break;
      case "--concurrency": o.concurrency = Math.max(1, Math.round(num(next(), arg))); break;
      case "--eld-rounds": o.eldRounds = Math.max(1, Math.round(num(next(), arg))); break;
      case "--leak-execs": o.leakExecs = Math.max(1, Math.round(num(next(), arg))); break;
      case "--leak-warmup": o.leakWarmup = Math.round(num(next(), arg)); break;
      case "--leak-concurrency": o.leakConcurrency = Math.max(1, Math.round(num(next(), arg))); break;
      case "--agent-leak-ops": o.agentLeakOps = Math.max(1, Math.round(num(next(), arg))); break;
      case "--agent-leak-warmup": o.agentLeakWarmup = Math.round(num(next(), arg)); break;
      case "--first-call-runs": o.firstCallRuns = Math.max(1, Math.round(num(next(), arg))); break;
      case "--watch-runs": o.watchRuns = Math.max(1, Math.round(num(next(), arg))); break;
      case "--terminal-runs": o.terminalRuns = Math.max(1, Math.round(num(next(), arg))); break;
      case "--tree-files": o.treeFiles = Math.max(1, Math.round(num(next(), arg))); break;
      case "--tree-mib": o.treeMiB = Math.max(1, num(next(), arg)); break;
      case "--tree-runs": o.treeRuns = Math.max(1, Math.round(num(next(), arg))); break;
      case "--tree-loop-concurrency": o.treeLoopConcurrency = Math.max(1, Math.round(num(next(), arg))); break;
      case "--tree-loop-runs": o.treeLoopRuns = Math.round(num(next(), arg)); break;
      case "--no-extras": o.extras = false; break;
      case "--smoke": o.smoke = true; break;
      case "--out": o.out = path.resolve(next()); break;
      case "--list": o.list = true; break;
      case "--id-prefix": o.idPrefix = next(); break;
      case "--help":
      case "-h":
        {
          // The header comment, up to the first line of code.
          const lines = readFileSync(fileURLToPath(import.meta.url), "utf8").split("\n").slice(1);
          const end = lines.findIndex((l) => !l.startsWith("//"));
          process.stdout.write(lines.slice(0, end).map((l) => l.slice(3)).join("\n") + "\n");
        }
        process.exit(0);
        break;
      default:
        throw new Error(`unknown option ${arg} (try --help)`);
    }
  }
  if (o.smoke) {
    Object.assign(o, {
      runs: o.runs ?? 1,
      warmup: 0,
      largeKiB: Math.min(o.largeKiB, 64),
      streamMiB: Math.min(o.streamMiB, 2),
      streamRuns: 1,
      concurrency: Math.min(o.concurrency, 4),
      eldRounds: 1,
      leakExecs: Math.min(o.leakExecs, 10),
      leakWarmup: Math.min(o.leakWarmup, 2),
      agentLeakOps: Math.min(o.agentLeakOps, 20),
      agentLeakWarmup: Math.min(o.agentLeakWarmup, 4),
      firstCallRuns: 1,
      watchRuns: 3,
      terminalRuns: 3,
      treeFiles: Math.min(o.treeFiles, 20),
      treeMiB: Math.min(o.treeMiB, 1),
      treeRuns: 1,
    });
  }
  return o;
}

function runsFor(o, key, defaultRuns) {
  if (o.opRuns[key] !== undefined) return o.opRuns[key];
  if (o.runs !== undefined) return o.runs;
  return Math.max(1, Math.round(defaultRuns * o.scale));
}

// ---------------------------------------------------------------- helpers

const log = (msg) => process.stderr.write(`\x1b[2m[bench]\x1b[0m ${msg}\n`);
const fmtMs = (v) => (Number.isFinite(v) ? (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2)) : "-");
const fmtX = (v) => (Number.isFinite(v) ? `${v.toFixed(2)}x` : "-");
const sizeLabel = (bytes) => (bytes % (1024 * 1024) === 0 ? `${bytes / 1024 / 1024} MiB` : `${bytes / 1024} KiB`);

function rotate(list, i) {
  const k = i % list.length;
  return [...list.slice(k), ...list.slice(0, k)];
}

function fdCount() {
  return readdirSync("/proc/self/fd").length;
}

function tryRun(cmd, args) {
  try {
    return execFileSync(cmd, args, { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  } catch {
    return undefined;
  }
}

function addonInUse() {
  // The addon lib/native.js loaded (it is in the shared CommonJS module cache).
  return Object.keys(createRequire(import.meta.url).cache).find((file) => file.endsWith("anvia_sandbox.node"));
}

function machineInfo() {
  const cpus = os.cpus();
  let dockerodeVersion;
  try {
    dockerodeVersion = JSON.parse(readFileSync(path.join(root, "node_modules/dockerode/package.json"), "utf8")).version;
  } catch {
    dockerodeVersion = undefined;
  }
  const addon = addonInUse();
  return {
    cpuModel: cpus[0]?.model?.trim(),
    cores: cpus.length,
    memoryGiB: Math.round((os.totalmem() / 1024 ** 3) * 10) / 10,
    kernel: `${os.type()} ${os.release()}`,
    os: tryRun("sh", ["-c", ". /etc/os-release && echo \"$PRETTY_NAME\""]),
    dockerServerVersion: tryRun("docker", ["version", "--format", "{{.Server.Version}}"]),
    dockerApiVersion: tryRun("docker", ["version", "--format", "{{.Server.APIVersion}}"]),
    dockerCliVersion: tryRun("docker", ["version", "--format", "{{.Client.Version}}"]),
    nodeVersion: process.version,
    dockerodeVersion,
    addon: addon === undefined ? undefined : path.relative(root, addon) || addon,
    addonBuild: addon === undefined ? undefined : /asan/.test(addon) ? "asan" : /Debug/.test(addon) ? "debug" : "release",
    loadAverageAtStart: os.loadavg().map((v) => Math.round(v * 100) / 100),
  };
}

// ---------------------------------------------------------------- main

async function main() {
  const o = parseArgs(process.argv.slice(2));
  if (o.list) {
    for (const [key, label, runs] of OPERATIONS) console.log(`${key.padEnd(20)} ${label.replace("{L}", "1 MiB").padEnd(28)} ${runs} runs`);
    console.log(`extras: ${EXTRAS.join(", ")}`);
    return 0;
  }
  const { IMAGE, PORT, BENCH_MAX_PROCESSES, newSandboxId, setIdPrefix, summarize: summarize0, quantile, pairRatios, sleep } = await import("./common.mjs");
  // common.mjs's summary plus the 99th percentile (an agent target).
  const summarize = (samples) => ({ ...summarize0(samples), p99: quantile([...samples].sort((a, b) => a - b), 0.99) });
  if (o.idPrefix !== undefined) setIdPrefix(o.idPrefix);
  const pkgPath = await import("./package-path.mjs");
  const { agent: agentPath, engine: enginePath } = pkgPath;
  const cliPath = await import("./cli-path.mjs");
  const dockerodePath = await import("./dockerode-path.mjs");

  const largeBytes = o.largeKiB * 1024;
  const L = sizeLabel(largeBytes);
  const smallText = "x".repeat(1023) + "\n";
  const largeText = ("0123456789abcdef".repeat(4) + "\n").repeat(Math.ceil(largeBytes / 65)).slice(0, largeBytes - 1) + "\n";
  const largeInput = Buffer.alloc(largeBytes, 0x61);
  const initialFiles = {
    "README.md": "# bench sandbox\n\nThree small files written at creation.\n",
    "src/index.js": 'import { greet } from "./util.js";\nconsole.log(greet("sandbox"));\n',
    "src/util.js": "export function greet(name) {\n  return `hello, ${name}`;\n}\n",
  };

  const started = new Date();
  const machine = machineInfo();
  log(`machine: ${machine.cpuModel}, ${machine.cores} cores, ${machine.kernel}, docker ${machine.dockerServerVersion}, node ${machine.nodeVersion}`);
  log(`addon: ${machine.addon ?? "?"} (${machine.addonBuild ?? "?"} build); load average ${machine.loadAverageAtStart.join(" ")}`);
  if (machine.addonBuild === "debug" && !o.smoke) log("warning: the debug (-O0) addon is loaded; scripts/bench.sh builds and uses a release one");

  // Everything created is destroyed at the end, whatever happens.
  const live = new Set();
  const track = (sb) => {
    live.add(sb);
    return sb;
  };
  const destroyTracked = async (sb) => {
    live.delete(sb);
    await sb.destroy();
  };
  let cleaning;
  const cleanup = () =>
    (cleaning ??= (async () => {
      const all = [...live];
      live.clear();
      await Promise.allSettled(all.map((sb) => sb.destroy()));
    })());
  const onSignal = (signal) => {
    log(`${signal}: cleaning up`);
    cleanup().finally(() => process.exit(130));
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);

  const result = {
    schema: 1,
    date: started.toISOString(),
    machine,
    config: {
      image: IMAGE,
      smoke: o.smoke,
      warmup: o.warmup,
      gapMs: o.gapMs,
      largeBytes,
      streamBytes: o.streamMiB * 1024 * 1024,
      streamRuns: o.streamRuns,
      concurrency: o.concurrency,
      eldRounds: o.eldRounds,
      leakExecs: o.leakExecs,
      leakWarmup: o.leakWarmup,
      leakConcurrency: o.leakConcurrency,
      agentLeakOps: o.agentLeakOps,
      agentLeakWarmup: o.agentLeakWarmup,
      firstCallRuns: o.firstCallRuns,
      implementations: IMPLS,
      ratios: Object.fromEntries(RATIOS.map(([key, num, den]) => [key, `${num} / ${den}`])),
      legacyAliases: { ...LEGACY_ALIASES, ...LEGACY_RATIOS },
      notes: [
        "agent and engine are this package through a client with transport \"agent\" and one with transport \"engine\"; cli is the original's docker CLI invocations; dockerode makes this package's Engine API calls.",
        "Runs are interleaved: run i measures every implementation once, in an order rotating with i.",
        "Ratios are numerator time / denominator time, run i against run i; the median of those pairs is reported, with a bootstrap 95% interval.",
        "The runtime operations of all four work on one sandbox (created by the engine client, bridge network, port 8080 published, busybox httpd listening; the agent client attaches to it with resumeSandbox and places its agent before any timing); createSandbox/destroy use a fresh sandbox per implementation and run.",
        "The agent's placement and start on a fresh sandbox is measured apart (extras.agentFirstCall); warm-up runs keep it and other first-time costs out of the per-operation samples.",
        "writeTextFile and readFile use paths one directory deep (so the CLI path runs its `mkdir -p` exec, as the original does for any nested path).",
        "The bench sandbox allows 1000 managed processes so repeated start/stop does not add the original's pruning checks.",
      ],
    },
    operations: {},
    extras: {},
    targets: [],
    errors: [],
  };

  const ops = OPERATIONS.filter(([key]) => o.only === undefined || o.only.has(key));
  const want = (key) => ops.some(([k]) => k === key);
  const wantExtra = (key) => o.extras && (o.only === undefined || o.only.has(key));
  for (const [key, label, defaultRuns] of ops) {
    result.operations[key] = { label: label.replace("{L}", L), runs: runsFor(o, key, defaultRuns), warmup: o.warmup };
  }

  const emptySamples = () => Object.fromEntries(IMPLS.map((impl) => [impl, []]));
  const record = (key, samples) => {
    const entry = result.operations[key];
    entry.samplesMs = { ...samples };
    for (const impl of IMPLS) entry[impl] = summarize(samples[impl]);
    entry.ratios = Object.fromEntries(RATIOS.map(([k, num, den]) => [k, pairRatios(samples[num], samples[den])]));
    for (const [alias, impl] of Object.entries(LEGACY_ALIASES)) {
      entry.samplesMs[alias] = samples[impl];
      entry[alias] = entry[impl];
    }
    for (const [alias, k] of Object.entries(LEGACY_RATIOS)) entry.ratios[alias] = entry.ratios[k];
    log(
      `${entry.label}: ${IMPLS.map((impl) => `${IMPL_LABEL[impl]} ${fmtMs(entry[impl].median)} ms`).join(", ")} ` +
        `(${RATIOS.map(([k, , , label]) => `${label} ${fmtX(entry.ratios[k].median)}`).join(", ")})`,
    );
  };
  const failed = (key, error) => {
    const message = `${key}: ${error?.stack ?? error}`;
    result.errors.push(message);
    if (result.operations[key]) result.operations[key].error = String(error?.message ?? error);
    log(`FAILED ${message}`);
  };

  let exitCode = 0;
  try {
    // ------------------------------------------------------------ the shared sandbox
    log("creating the bench sandbox and its fixtures");
    const shared = track(await enginePath.createSandbox({ image: IMAGE, id: newSandboxId("shared"), ports: [PORT], maxProcesses: BENCH_MAX_PROCESSES }));

    // The agent column: its own client attaches to the shared sandbox with resumeSandbox
    // (and never destroys it: the engine client that made it does). resumeSandbox
    // restarts a running container (as the original's does), which ends every process in
    // it and publishes the port on a new host port: so it comes first, before the fixtures
    // and the server, and the port is read from its handle. The engine client's handle
    // keeps the host port from before the restart in its publishedPorts (it cannot know
    // another client restarted the container); config.engineHandleHostPort records it.
    // Then the agent's first call places and starts the agent, untimed, so that no sample
    // below pays for it (even with --warmup 0).
    const resumeStarted = performance.now();
    const sharedAgent = await agentPath.resumeSandbox(shared.id);
    result.config.sharedSandboxAgentResumeMs = performance.now() - resumeStarted;
    {
      const s = performance.now();
      const first = await sharedAgent.exec({ command: "true" });
      if (first.exitCode !== 0) throw new Error("the agent's first exec on the shared sandbox failed");
      result.config.sharedSandboxAgentFirstExecMs = performance.now() - s;
      log(
        `agent client attached to the shared sandbox (resumeSandbox ${fmtMs(result.config.sharedSandboxAgentResumeMs)} ms, a restart), ` +
          `first exec ${fmtMs(result.config.sharedSandboxAgentFirstExecMs)} ms (agent placed and started)`,
      );
    }
    const publishedPorts = sharedAgent.publishedPorts;
    result.config.sharedSandboxHostPort = publishedPorts[0].hostPort;
    result.config.engineHandleHostPort = shared.publishedPorts[0].hostPort;

    const fixture = await shared.exec({
      command: "sh",
      args: [
        "-c",
        'set -e; mkdir -p data out leak list100 www; i=0; while [ $i -lt 100 ]; do printf "entry %d\\n" $i > list100/f$(printf %03d $i); i=$((i + 1)); done; echo ok > www/index.html',
      ],
    });
    if (fixture.exitCode !== 0) throw new Error(`fixture exec failed: ${new TextDecoder().decode(fixture.stderr)}`);
    await shared.writeTextFile({ path: "data/small.txt", text: smallText });
    await shared.writeTextFile({ path: "data/large.txt", text: largeText });
    const server = await shared.startProcess({ command: "busybox", args: ["httpd", "-f", "-p", `${PORT}`, "-h", "/workspace/www"] });
    await shared.waitForPort({ containerPort: PORT, timeoutMs: 10_000 });
    const hostPort = publishedPorts[0].hostPort;

    const targets = {
      agent: sharedAgent,
      engine: shared,
      cli: new cliPath.CliSandbox({
        id: shared.id,
        containerName: shared.containerName,
        volumeName: undefined,
        ownsVolume: false,
        publishedPorts: publishedPorts.map((p) => ({ ...p })),
        maxProcesses: BENCH_MAX_PROCESSES,
      }),
      dockerode: dockerodePath.attach({
        id: shared.id,
        containerName: shared.containerName,
        volumeName: undefined,
        publishedPorts: publishedPorts.map((p) => ({ ...p })),
      }),
    };

    const decode = (bytes) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8");
    const expect = (cond, what) => {
      if (!cond) throw new Error(`check failed: ${what}`);
    };

    // Runtime operations on the shared sandbox: [key, run(target, impl), check(result)]
    const simple = [
      ["execTrue", (t) => t.exec({ command: "true" }), (r) => expect(r.exitCode === 0, "exit 0")],
      [
        "execStdout",
        (t) => t.exec({ command: "head", args: ["-c", `${largeBytes}`, "/dev/zero"] }),
        (r) => expect(r.exitCode === 0 && r.stdout.byteLength === largeBytes, `stdout of ${largeBytes} bytes (got ${r.stdout.byteLength})`),
      ],
      [
        "execStdin",
        (t) => t.exec({ command: "wc", args: ["-c"], input: largeInput }),
        (r) => expect(r.exitCode === 0 && decode(r.stdout).trim() === `${largeBytes}`, `wc -c = ${largeBytes} (got ${decode(r.stdout).trim()})`),
      ],
      ["writeTextFileSmall", (t, impl) => t.writeTextFile({ path: `out/${impl}-small.txt`, text: smallText }), () => undefined],
      ["writeTextFileLarge", (t, impl) => t.writeTextFile({ path: `out/${impl}-large.txt`, text: largeText }), () => undefined],
      ["readFileSmall", (t) => t.readFile({ path: "data/small.txt" }), (r) => expect(r.byteLength === 1024, "1024 bytes read")],
      ["readFileLarge", (t) => t.readFile({ path: "data/large.txt" }), (r) => expect(r.byteLength === largeBytes, `${largeBytes} bytes read`)],
      ["listFiles", (t) => t.listFiles({ path: "list100" }), (r) => expect(r.length === 100 && r.every((e) => e.type === "file"), "100 files listed")],
      [
        "waitForPort",
        (t) => t.waitForPort({ containerPort: PORT, timeoutMs: 10_000 }),
        // Each handle answers with the port it knows (the engine handle's may predate the
        // agent client's restart: see above).
        (r, t) => expect(r.containerPort === PORT && r.hostPort === t.publishedPorts[0].hostPort, "the published port"),
      ],
    ];

    for (const [key, run, check] of simple) {
      if (!want(key)) continue;
      const { runs } = result.operations[key];
      const samples = emptySamples();
      const t0 = performance.now();
      try {
        for (let i = 0; i < o.warmup + runs; i++) {
          for (const impl of rotate(IMPLS, i)) {
            if (o.gapMs > 0) await sleep(o.gapMs);
            const s = performance.now();
            const r = await run(targets[impl], impl);
            const ms = performance.now() - s;
            check(r, targets[impl]);
            if (i >= o.warmup) samples[impl].push(ms);
          }
        }
        record(key, samples);
        result.operations[key].wallSeconds = (performance.now() - t0) / 1000;
      } catch (error) {
        failed(key, error);
      }
    }
    if (want("writeTextFileSmall") || want("writeTextFileLarge")) {
      // The writes of all four landed, with the right sizes.
      const sizes = await shared.exec({ command: "sh", args: ["-c", "wc -c out/*.txt"] });
      const text = decode(sizes.stdout);
      for (const impl of IMPLS) {
        if (want("writeTextFileSmall") && !new RegExp(`^\\s*1024 out/${impl}-small.txt$`, "m").test(text)) failed("writeTextFileSmall", `${impl} did not write 1024 bytes:\n${text}`);
        if (want("writeTextFileLarge") && !new RegExp(`^\\s*${largeBytes} out/${impl}-large.txt$`, "m").test(text)) failed("writeTextFileLarge", `${impl} did not write ${largeBytes} bytes:\n${text}`);
      }
    }

    // ------------------------------------------------------------ start and stop a process
    if (want("startProcess") || want("stopProcess")) {
      const runs = Math.max(result.operations.startProcess?.runs ?? 0, result.operations.stopProcess?.runs ?? 0);
      const start = emptySamples();
      const stop = emptySamples();
      const t0 = performance.now();
      try {
        for (let i = 0; i < o.warmup + runs; i++) {
          for (const impl of rotate(IMPLS, i)) {
            const t = targets[impl];
            if (o.gapMs > 0) await sleep(o.gapMs);
            let s = performance.now();
            const info = await t.startProcess({ command: "sleep", args: ["600"] });
            const startMs = performance.now() - s;
            expect(info.status === "running", "process running");
            if (o.gapMs > 0) await sleep(o.gapMs);
            s = performance.now();
            const stopped = await t.stopProcess({ processId: info.id });
            const stopMs = performance.now() - s;
            expect(stopped.status === "stopped", `process stopped (got ${stopped.status})`);
            if (i >= o.warmup) {
              start[impl].push(startMs);
              stop[impl].push(stopMs);
            }
          }
        }
        if (want("startProcess")) record("startProcess", start);
        if (want("stopProcess")) record("stopProcess", stop);
        for (const key of ["startProcess", "stopProcess"]) if (want(key)) result.operations[key].wallSeconds = (performance.now() - t0) / 1000;
      } catch (error) {
        failed("startProcess", error);
      }
      // Nothing of those processes is left.
      const ps = await shared.exec({ command: "sh", args: ["-c", "ps -eo args | grep -c '^sleep 600' || true"] });
      if (decode(ps.stdout).trim() !== "0") failed("stopProcess", `sleep processes left running: ${decode(ps.stdout).trim()}`);
    }

    // ------------------------------------------------------------ create and destroy
    if (want("createSandbox") || want("destroy")) {
      const runs = Math.max(result.operations.createSandbox?.runs ?? 0, result.operations.destroy?.runs ?? 0);
      const create = emptySamples();
      const destroy = emptySamples();
      const makers = {
        agent: () => agentPath.createSandbox({ image: IMAGE, id: newSandboxId("agent"), ports: [PORT], files: initialFiles }),
        engine: () => enginePath.createSandbox({ image: IMAGE, id: newSandboxId("engine"), ports: [PORT], files: initialFiles }),
        cli: () => cliPath.createSandbox({ image: IMAGE, id: newSandboxId("cli"), ports: [PORT], files: initialFiles }),
        dockerode: () => dockerodePath.createSandbox({ image: IMAGE, id: newSandboxId("dockerode"), ports: [PORT], files: initialFiles }),
      };
      const t0 = performance.now();
      try {
        for (let i = 0; i < o.warmup + runs; i++) {
          const order = rotate(IMPLS, i);
          const made = {};
          for (const impl of order) {
            const s = performance.now();
            made[impl] = track(await makers[impl]());
            const ms = performance.now() - s;
            if (i >= o.warmup) create[impl].push(ms);
          }
          if (i === 0) {
            // Each implementation made the same sandbox: the three files, the port.
            for (const impl of IMPLS) {
              const listing = await dockerodePath.attach({ containerName: made[impl].containerName, publishedPorts: [] }).exec({
                command: "sh",
                args: ["-c", "cat README.md src/index.js src/util.js | wc -c"],
              });
              const want = Object.values(initialFiles).reduce((n, s) => n + Buffer.byteLength(s), 0);
              expect(decode(listing.stdout).trim() === `${want}`, `${impl} sandbox has the three files`);
              expect(made[impl].publishedPorts[0]?.hostPort > 0, `${impl} sandbox publishes the port`);
            }
          }
          for (const impl of order) {
            const s = performance.now();
            await destroyTracked(made[impl]);
            const ms = performance.now() - s;
            if (i >= o.warmup) destroy[impl].push(ms);
          }
        }
        if (want("createSandbox")) {
          record("createSandbox", create);
          // The agent target: creating through an agent-transport client costs about what it
          // costs through an engine-transport one.
          result.operations.createSandbox.ratios.agentOverEngine = pairRatios(create.agent, create.engine);
        }
        if (want("destroy")) record("destroy", destroy);
        for (const key of ["createSandbox", "destroy"]) if (want(key)) result.operations[key].wallSeconds = (performance.now() - t0) / 1000;
      } catch (error) {
        failed("createSandbox", error);
      }
    }

    if (o.extras) {
      // ---------------------------------------------------------- the agent's first call
      // A fresh sandbox per run, made by the agent client (no network, no files): its first
      // exec places and starts the agent, its second is a warm call, and first - second is
      // the one-time cost. The engine client does the same on a fresh sandbox of its own in
      // the same run (order rotating), as the control: an engine's first exec on a new
      // container against its second.
      if (wantExtra("agentFirstCall")) try {
        const FIRST = ["agent", "engine"];
        const samples = Object.fromEntries(FIRST.map((impl) => [impl, { createMs: [], firstExecMs: [], secondExecMs: [], oneTimeMs: [] }]));
        const agentRssKiB = [];
        const agentFds = [];
        for (let i = 0; i < o.firstCallRuns; i++) {
          for (const impl of rotate(FIRST, i)) {
            const p = impl === "agent" ? agentPath : enginePath;
            let s = performance.now();
            const sb = track(await p.createSandbox({ image: IMAGE, id: newSandboxId(`first-${impl}`) }));
            const createMs = performance.now() - s;
            try {
              s = performance.now();
              const r1 = await sb.exec({ command: "true" });
              const firstExecMs = performance.now() - s;
              s = performance.now();
              const r2 = await sb.exec({ command: "true" });
              const secondExecMs = performance.now() - s;
              expect(r1.exitCode === 0 && r2.exitCode === 0, `${impl}: both execs exit 0`);
              const x = samples[impl];
              x.createMs.push(createMs);
              x.firstExecMs.push(firstExecMs);
              x.secondExecMs.push(secondExecMs);
              x.oneTimeMs.push(firstExecMs - secondExecMs);
              if (impl === "agent") {
                const agent = mainAgent(await agentProcesses(sb.containerName));
                expect(agent !== undefined, "an agent process runs in the agent client's sandbox");
                agentRssKiB.push(agent.vmRssKiB);
                agentFds.push(agent.fds);
              }
            } finally {
              await destroyTracked(sb);
            }
          }
        }
        const fc = { runs: o.firstCallRuns, sandbox: "fresh, made by the same client, no network, no files" };
        for (const impl of FIRST) {
          fc[impl] = Object.fromEntries(Object.entries(samples[impl]).map(([k, v]) => [k, summarize(v)]));
          fc[impl].samplesMs = samples[impl];
        }
        fc.agent.processVmRssKiB = { ...summarize(agentRssKiB), samples: agentRssKiB };
        fc.agent.processFds = { ...summarize(agentFds), samples: agentFds };
        result.extras.agentFirstCall = fc;
        log(
          `agent first call: first exec ${fmtMs(fc.agent.firstExecMs.median)} ms, second ${fmtMs(fc.agent.secondExecMs.median)} ms, one-time ${fmtMs(fc.agent.oneTimeMs.median)} ms ` +
            `(engine: first ${fmtMs(fc.engine.firstExecMs.median)} ms, second ${fmtMs(fc.engine.secondExecMs.median)} ms); agent VmRSS ${fc.agent.processVmRssKiB.median} KiB`,
        );
      } catch (error) {
        failed("agentFirstCall", error);
      }

      // ---------------------------------------------------------- execStream throughput
      const streamBytes = o.streamMiB * 1024 * 1024;
      const streamCmd = { command: "head", args: ["-c", `${streamBytes}`, "/dev/zero"], timeoutMs: 300_000 };
      const pkgStreamer = (t) => async () => {
        let n = 0;
        let res;
        for await (const ev of t.execStream(streamCmd)) {
          if (ev.type === "stdout") n += ev.data.byteLength;
          else if (ev.type === "result") res = ev.result;
        }
        expect(res?.exitCode === 0, "stream exit 0");
        return n;
      };
      const streamers = {
        agent: pkgStreamer(targets.agent),
        engine: pkgStreamer(targets.engine),
        cli: async () => {
          let n = 0;
          let res;
          for await (const ev of cliExecStream(targets.cli, streamCmd)) {
            if (ev.type === "stdout") n += ev.data.byteLength;
            else if (ev.type === "result") res = ev.result;
          }
          expect(res?.exitCode === 0, "stream exit 0");
          return n;
        },
        dockerode: async () => {
          let n = 0;
          const r = await targets.dockerode.exec({ ...streamCmd, onStdout: (chunk) => (n += chunk.length) });
          expect(r.exitCode === 0, "stream exit 0");
          return n;
        },
      };
      // ---------------------------------------------------------- watchFiles latency
      // Through the agent only (the engine path refuses watchFiles): a watch on a directory
      // of the shared sandbox, then writes one at a time, each timed from just before the
      // writeTextFile call to its event (the write's own round trip included), and from the
      // write's resolution to the event (0 when the event came first).
      if (wantExtra("watchLatency")) try {
        await targets.agent.exec({ command: "mkdir", args: ["-p", "watched"] });
        const controller = new AbortController();
        const waiting = new Map();
        const consumer = (async () => {
          for await (const ev of targets.agent.watchFiles({ path: "watched", abortSignal: controller.signal })) {
            if (ev.type === "overflow") continue;
            const w = waiting.get(ev.path);
            if (w) {
              waiting.delete(ev.path);
              w(performance.now());
            }
          }
        })().catch((error) => {
          if (error?.name !== "AbortError") throw error;
        });
        // The watch is live once a probe's event arrives (written until it does).
        for (let live = false; !live; ) {
          const seen = new Promise((resolve) => waiting.set("watched/probe", resolve));
          await targets.agent.writeTextFile({ path: "watched/probe", text: "x" });
          live = await Promise.race([seen.then(() => true), sleep(200).then(() => false)]);
        }
        const total = [];
        const afterWrite = [];
        for (let i = 0; i < o.watchRuns; i++) {
          const p = `watched/f${i % 8}`;
          const seen = new Promise((resolve) => waiting.set(p, resolve));
          const s = performance.now();
          await targets.agent.writeTextFile({ path: p, text: `${i}` });
          const wrote = performance.now();
          const at = await seen;
          total.push(at - s);
          afterWrite.push(Math.max(0, at - wrote));
          await sleep(o.gapMs);
        }
        controller.abort();
        await consumer;
        const wl = { runs: o.watchRuns, agent: { writeToEventMs: { ...summarize(total), samples: total }, afterWriteMs: { ...summarize(afterWrite), samples: afterWrite } }, engine: "refused: watchFiles needs the agent (invalid_state)" };
        result.extras.watchLatency = wl;
        log(`watchFiles: write to event ${fmtMs(wl.agent.writeToEventMs.median)} ms median, p99 ${fmtMs(wl.agent.writeToEventMs.p99)} ms; after the write resolved ${fmtMs(wl.agent.afterWriteMs.median)} ms (agent; the engine path refuses it)`);
      } catch (error) {
        failed("watchLatency", error);
      }

      // ---------------------------------------------------------- terminal latency
      // Keystroke to echo, through the agent and the engine path: a terminal running `cat`,
      // one character written at a time, timed from just before the write to the moment its
      // echo (the pty's line discipline) arrives through output().
      if (wantExtra("terminalLatency")) try {
        const tl = { runs: o.terminalRuns };
        for (const impl of ["agent", "engine"]) {
          try {
            const samples = await terminalEchoes(targets[impl], o.terminalRuns, () => (o.gapMs > 0 ? sleep(o.gapMs) : undefined));
            tl[impl] = { keystrokeToEchoMs: { ...summarize(samples), samples } };
          } catch (error) {
            if (error?.code !== "invalid_state") throw error;
            tl[impl] = `refused: ${error.message}`;
          }
        }
        result.extras.terminalLatency = tl;
        log(`terminal keystroke to echo: ${terminalLine(tl)}`);
      } catch (error) {
        failed("terminalLatency", error);
      }

      if (wantExtra("execStream")) try {
        const stream = { bytes: streamBytes, runs: o.streamRuns };
        const mibps = emptySamples();
        for (let i = 0; i < o.streamRuns; i++) {
          for (const impl of rotate(IMPLS, i)) {
            const s = performance.now();
            const n = await streamers[impl]();
            const seconds = (performance.now() - s) / 1000;
            expect(n === streamBytes, `${impl} streamed ${streamBytes} bytes (got ${n})`);
            mibps[impl].push(streamBytes / 1024 / 1024 / seconds);
          }
        }
        for (const impl of IMPLS) stream[impl] = { ...summarize(mibps[impl]), samples: mibps[impl] };
        for (const [alias, impl] of Object.entries(LEGACY_ALIASES)) stream[alias] = stream[impl];
        result.extras.execStream = stream;
        log(`execStream ${o.streamMiB} MiB: ${IMPLS.map((impl) => `${IMPL_LABEL[impl]} ${stream[impl].median.toFixed(0)} MiB/s`).join(", ")}`);
      } catch (error) {
        failed("execStream", error);
      }

      // ---------------------------------------------------------- RSS and descriptors
      // Before the event-loop test: its bursts of 64 requests leave idle connections in
      // the package's (and dockerode's) pools, which would inflate the first reading.
      // "leak": execs through the engine client; "agentLeak": a rotation of exec,
      // writeTextFile, readFile and listFiles through the agent client, with the agent's
      // own RSS and descriptors read in the container as well.
      const settle = async () => {
        for (let i = 0; i < 3; i++) {
          globalThis.gc();
          await sleep(50);
        }
      };
      const reading = () => {
        const m = process.memoryUsage();
        return { rssBytes: m.rss, heapUsedBytes: m.heapUsed, heapTotalBytes: m.heapTotal, externalBytes: m.external, arrayBuffersBytes: m.arrayBuffers, openFds: fdCount() };
      };
      if (wantExtra("leak")) try {
        const runExecs = async (count) => {
          let next = 0;
          await Promise.all(
            Array.from({ length: Math.min(o.leakConcurrency, count) }, async () => {
              while (next < count) {
                next++;
                const r = await shared.exec({ command: "true" });
                if (r.exitCode !== 0) throw new Error("exec true failed");
              }
            }),
          );
        };
        log(`leak test (engine): ${o.leakWarmup} warm-up execs, then ${o.leakExecs} execs (${o.leakConcurrency} in flight)`);
        await runExecs(o.leakWarmup);
        await settle();
        const before = reading();
        const series = [];
        const step = Math.max(1, Math.ceil(o.leakExecs / 10));
        const s = performance.now();
        for (let done = 0; done < o.leakExecs; done += step) {
          await runExecs(Math.min(step, o.leakExecs - done));
          const point = { execs: Math.min(done + step, o.leakExecs), rssBytes: process.memoryUsage().rss, openFds: fdCount() };
          series.push(point);
          log(`  ${point.execs}/${o.leakExecs} execs, RSS ${(point.rssBytes / 2 ** 20).toFixed(1)} MiB, ${point.openFds} fds, ${(point.execs / ((performance.now() - s) / 1000)).toFixed(1)} exec/s`);
        }
        const seconds = (performance.now() - s) / 1000;
        await settle();
        const after = reading();
        result.extras.leak = {
          transport: "engine",
          execs: o.leakExecs,
          warmup: o.leakWarmup,
          concurrency: o.leakConcurrency,
          seconds,
          execsPerSecond: o.leakExecs / seconds,
          before,
          after,
          rssGrowthBytes: after.rssBytes - before.rssBytes,
          heapGrowthBytes: after.heapUsedBytes - before.heapUsedBytes,
          fdGrowth: after.openFds - before.openFds,
          series,
        };
        log(
          `leak test (engine): RSS ${(before.rssBytes / 2 ** 20).toFixed(1)} -> ${(after.rssBytes / 2 ** 20).toFixed(1)} MiB, fds ${before.openFds} -> ${after.openFds}, ` +
            `${(o.leakExecs / seconds).toFixed(1)} exec/s`,
        );
      } catch (error) {
        failed("leak", error);
      }
      if (wantExtra("agentLeak")) try {
        const total = o.agentLeakOps;
        const a = targets.agent;
        const MIX = [
          ["exec", () => a.exec({ command: "true" }), (r) => r.exitCode === 0],
          ["writeTextFile", (k) => a.writeTextFile({ path: `leak/f${k % 16}.txt`, text: smallText }), () => true],
          ["readFile", () => a.readFile({ path: "data/small.txt" }), (r) => r.byteLength === 1024],
          ["listFiles", () => a.listFiles({ path: "list100" }), (r) => r.length === 100],
        ];
        let counter = 0;
        const runOps = async (count) => {
          let next = 0;
          await Promise.all(
            Array.from({ length: Math.min(o.leakConcurrency, count) }, async () => {
              while (next < count) {
                next++;
                const k = counter++;
                const [name, run, ok] = MIX[k % MIX.length];
                if (!ok(await run(k))) throw new Error(`${name} through the agent returned something unexpected`);
              }
            }),
          );
        };
        const agentReading = async () => {
          const agent = mainAgent(await agentProcesses(shared.containerName));
          if (agent === undefined) throw new Error("no agent process in the shared sandbox");
          return agent;
        };
        // The warm-up is long: at several hundred operations a second, V8 grows its young
        // generation (process.memoryUsage().heapTotal, and RSS with it, by ~15-25 MiB over
        // the first ~5,000-8,000 operations, then flat; with --max-semi-space-size=1 the
        // growth is gone). Measured before and after it, so that it shows.
        log(`leak test (agent): ${o.agentLeakWarmup} warm-up operations, then ${total} (${MIX.map(([n]) => n).join(", ")} in turn; ${o.leakConcurrency} in flight)`);
        await settle();
        const beforeWarmup = reading();
        await runOps(o.agentLeakWarmup);
        await settle();
        const before = reading();
        const agentBefore = await agentReading();
        const series = [];
        const step = Math.max(1, Math.ceil(total / 10));
        let seconds = 0;
        for (let done = 0; done < total; done += step) {
          const s = performance.now();
          await runOps(Math.min(step, total - done));
          seconds += (performance.now() - s) / 1000;
          const agent = await agentReading();
          const m = process.memoryUsage();
          const point = { operations: Math.min(done + step, total), rssBytes: m.rss, heapTotalBytes: m.heapTotal, openFds: fdCount(), agentVmRssKiB: agent.vmRssKiB, agentFds: agent.fds, agentPid: agent.pid };
          series.push(point);
          log(
            `  ${point.operations}/${total} operations, RSS ${(point.rssBytes / 2 ** 20).toFixed(1)} MiB (V8 heap reserved ${(point.heapTotalBytes / 2 ** 20).toFixed(1)}), ${point.openFds} fds; ` +
              `agent (pid ${agent.pid}) VmRSS ${agent.vmRssKiB} KiB, ${agent.fds} fds`,
          );
        }
        await settle();
        const after = reading();
        const agentAfter = await agentReading();
        result.extras.agentLeak = {
          transport: "agent",
          operations: total,
          mix: MIX.map(([n]) => n),
          warmup: o.agentLeakWarmup,
          beforeWarmup,
          warmupRssGrowthBytes: before.rssBytes - beforeWarmup.rssBytes,
          warmupHeapTotalGrowthBytes: before.heapTotalBytes - beforeWarmup.heapTotalBytes,
          // Ramp or slope: RSS over the second half of the series (no forced GC there).
          secondHalfRssGrowthBytes: series.length >= 2 ? series.at(-1).rssBytes - series[Math.floor(series.length / 2) - 1].rssBytes : NaN,
          concurrency: o.leakConcurrency,
          seconds, // the operations' time, without the readings in the container
          operationsPerSecond: total / seconds,
          before,
          after,
          rssGrowthBytes: after.rssBytes - before.rssBytes,
          heapGrowthBytes: after.heapUsedBytes - before.heapUsedBytes,
          fdGrowth: after.openFds - before.openFds,
          agentProcess: {
            before: agentBefore,
            after: agentAfter,
            samePid: agentBefore.pid === agentAfter.pid,
            vmRssGrowthKiB: agentAfter.vmRssKiB - agentBefore.vmRssKiB,
            fdGrowth: agentAfter.fds - agentBefore.fds,
          },
          series,
        };
        log(
          `leak test (agent): RSS ${(before.rssBytes / 2 ** 20).toFixed(1)} -> ${(after.rssBytes / 2 ** 20).toFixed(1)} MiB, fds ${before.openFds} -> ${after.openFds}, ${(total / seconds).toFixed(0)} op/s; ` +
            `agent VmRSS ${agentBefore.vmRssKiB} -> ${agentAfter.vmRssKiB} KiB, fds ${agentBefore.fds} -> ${agentAfter.fds}`,
        );
      } catch (error) {
        failed("agentLeak", error);
      }
      // ---------------------------------------------------------- tree transfers
      // Before the event-loop test, on a sandbox of their own (no network).
      const directions = [wantExtra("treeImport") && "import", wantExtra("treeExport") && "export"].filter(Boolean);
      if (directions.length > 0) try {
        const { benchTree } = await import("./tree.mjs");
        // The engine transport, named: the transfer and its baselines on the engine path.
        const sandbox = track(await enginePath.createSandbox({ image: IMAGE, id: newSandboxId("tree") }));
        try {
          result.extras.tree = await benchTree({
            files: o.treeFiles,
            totalBytes: Math.round(o.treeMiB * 1024 * 1024),
            runs: o.treeRuns,
            warmup: Math.min(o.warmup, 1),
            loopConcurrency: o.treeLoopConcurrency,
            loopRuns: o.treeLoopRuns ?? o.treeRuns,
            directions,
            sandbox,
            log,
            summarize,
            pairRatios,
          });
        } finally {
          await destroyTracked(sandbox);
        }
        for (const dir of ["import", "export"]) {
          const d = result.extras.tree[dir];
          if (d) log(`tree ${dir}: package ${fmtMs(d.package.median)} ms, loop ${d.loop.n ? fmtMs(d.loop.median) : "-"} ms, docker cp ${fmtMs(d.cp.median)} ms (loop/pkg ${fmtX(d.ratios.loopOverPackage.median)}, cp/pkg ${fmtX(d.ratios.cpOverPackage.median)})`);
        }
      } catch (error) {
        failed("tree", error);
      }

      // ---------------------------------------------------------- event-loop delay
      // A fresh histogram per round: a re-enabled one would record the whole time it was
      // disabled as one delay (it keeps the timestamp of its last sample).
      if (wantExtra("eventLoopDelay")) try {
        // A round is one burst of `concurrency` execs at once, repeated (each burst awaited)
        // until the round has lasted ELD_MIN_ROUND_MS: one burst through the agent takes
        // tens of ms, too few 1 ms samples for a p99; the other paths' single burst lasts
        // seconds, so for them a round stays one burst.
        const ELD_MIN_ROUND_MS = 1000;
        const eld = { concurrency: o.concurrency, rounds: o.eldRounds, resolutionMs: 1, minRoundMs: ELD_MIN_ROUND_MS };
        const rounds = emptySamples();
        const idleRounds = [];
        const busyRounds = [];
        for (let i = 0; i < o.eldRounds; i++) {
          for (const impl of rotate(IMPLS, i)) {
            await sleep(200);
            const h = monitorEventLoopDelay({ resolution: 1 });
            const s = performance.now();
            h.enable();
            let bursts = 0;
            do {
              const all = await Promise.all(Array.from({ length: o.concurrency }, () => targets[impl].exec({ command: "true" })));
              expect(all.every((r) => r.exitCode === 0), "all concurrent execs exit 0");
              bursts++;
            } while (performance.now() - s < ELD_MIN_ROUND_MS);
            h.disable();
            const wallMs = performance.now() - s;
            rounds[impl].push({ p50Ms: h.percentile(50) / 1e6, p99Ms: h.percentile(99) / 1e6, maxMs: h.max / 1e6, samples: h.count, wallMs, bursts });
          }
          // Controls: this loop idle on a quiet engine (the machine's own noise), and this
          // loop idle while another process makes the engine run the same 64 execs (what
          // the engine's work alone does to any process on this machine).
          await sleep(200);
          const idle = monitorEventLoopDelay({ resolution: 1 });
          idle.enable();
          await sleep(rounds.engine[rounds.engine.length - 1].wallMs);
          idle.disable();
          idleRounds.push({ p50Ms: idle.percentile(50) / 1e6, p99Ms: idle.percentile(99) / 1e6, maxMs: idle.max / 1e6, samples: idle.count });
          await sleep(200);
          const busy = monitorEventLoopDelay({ resolution: 1 });
          const s = performance.now();
          busy.enable();
          await execsInAnotherProcess(shared.containerName, o.concurrency);
          busy.disable();
          busyRounds.push({ p50Ms: busy.percentile(50) / 1e6, p99Ms: busy.percentile(99) / 1e6, maxMs: busy.max / 1e6, samples: busy.count, wallMs: performance.now() - s });
        }
        eld.busyEngineIdleLoop = {
          p99Ms: Math.max(...busyRounds.map((x) => x.p99Ms)),
          maxMs: Math.max(...busyRounds.map((x) => x.maxMs)),
          medianRoundP99Ms: summarize(busyRounds.map((x) => x.p99Ms)).median,
          rounds: busyRounds,
        };
        eld.idle = {
          p99Ms: Math.max(...idleRounds.map((x) => x.p99Ms)),
          maxMs: Math.max(...idleRounds.map((x) => x.maxMs)),
          medianRoundP99Ms: summarize(idleRounds.map((x) => x.p99Ms)).median,
          rounds: idleRounds,
        };
        for (const impl of IMPLS) {
          const r = rounds[impl];
          eld[impl] = {
            // worst round (the target is checked against it), then the median round
            p99Ms: Math.max(...r.map((x) => x.p99Ms)),
            maxMs: Math.max(...r.map((x) => x.maxMs)),
            medianRoundP99Ms: summarize(r.map((x) => x.p99Ms)).median,
            medianRoundMaxMs: summarize(r.map((x) => x.maxMs)).median,
            wallMs: summarize(r.map((x) => x.wallMs)),
            bursts: summarize(r.map((x) => x.bursts)),
            rounds: r,
          };
        }
        for (const [alias, impl] of Object.entries(LEGACY_ALIASES)) eld[alias] = eld[impl];
        result.extras.eventLoopDelay = eld;
        log(
          `event-loop delay with ${o.concurrency} execs at once (worst of ${o.eldRounds}): ` +
            IMPLS.map((impl) => `${IMPL_LABEL[impl]} p99 ${eld[impl].p99Ms.toFixed(2)} ms (max ${eld[impl].maxMs.toFixed(1)})`).join(", "),
        );
      } catch (error) {
        failed("eventLoopDelay", error);
      }
    }

    // The server answered all along.
    try {
      const res = await fetch(`http://127.0.0.1:${hostPort}/index.html`);
      expect(res.status === 200 && (await res.text()) === "ok\n", "httpd still serving");
    } catch (error) {
      failed("waitForPort", error);
    }
    await shared.stopProcess({ processId: server.id, gracePeriodMs: 2000 });
  } catch (error) {
    result.errors.push(String(error?.stack ?? error));
    log(`FAILED: ${error?.stack ?? error}`);
    exitCode = 1;
  } finally {
    log("cleaning up");
    await cleanup();
  }

  result.machine.loadAverageAtEnd = os.loadavg().map((v) => Math.round(v * 100) / 100);
  result.finished = new Date().toISOString();
  result.wallSeconds = (Date.now() - started.getTime()) / 1000;
  result.targets = evaluateTargets(result);

  process.stdout.write(renderTable(result));

  // JSON
  let outFiles;
  if (o.out !== undefined) outFiles = [o.out];
  else {
    const dir = path.join(here, "results");
    const stamp = result.date.replace(/[:.]/g, "-");
    outFiles = [path.join(dir, `${stamp}.json`), path.join(dir, "latest.json")];
  }
  const json = JSON.stringify(result, null, 2) + "\n";
  for (const file of outFiles) {
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, json);
  }
  log(`wrote ${outFiles.map((f) => path.relative(process.cwd(), f) || f).join(" and ")} (${result.wallSeconds.toFixed(0)} s in all)`);
  if (result.errors.length > 0) exitCode = 1;
  return exitCode;
}

// The event-loop control: a separate node process makes the engine run `count` execs at
// once (with dockerode, on the same container) while this process's loop does nothing.
function execsInAnotherProcess(containerName, count) {
  const code = [
    `import { attach } from ${JSON.stringify(new URL("./dockerode-path.mjs", import.meta.url).href)};`,
    `const sb = attach({ containerName: ${JSON.stringify(containerName)}, publishedPorts: [] });`,
    `const all = await Promise.all(Array.from({ length: ${count} }, () => sb.exec({ command: "true" })));`,
    `if (!all.every((r) => r.exitCode === 0)) process.exit(1);`,
  ].join("\n");
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--input-type=module", "-e", code], { stdio: ["ignore", "ignore", "inherit"] });
    child.on("error", reject);
    child.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`control process exited with ${code}`))));
  });
}

// The in-sandbox agents of a container, read from outside with the docker CLI (so no
// client's own transport is involved): every process whose command line starts with
// /.anvia/agent-, with its parent pid, VmRSS and VmHWM (KiB) and its open descriptors.
const AGENT_PS = [
  "for p in /proc/[0-9]*; do",
  '  c=$(tr "\\000" " " < "$p/cmdline" 2>/dev/null) || continue',
  '  case "$c" in',
  '    /.anvia/agent-*) echo "P ${p#/proc/} $c"; grep -E "^(PPid|VmRSS|VmHWM):" "$p/status"; echo "F $(ls "$p/fd" 2>/dev/null | wc -l)" ;;',
  "  esac",
  "done",
].join("\n");

function agentProcesses(containerName) {
  return new Promise((resolve, reject) => {
    execFile("docker", ["exec", containerName, "sh", "-c", AGENT_PS], { encoding: "utf8", timeout: 30_000 }, (error, stdout, stderr) => {
      if (error) return reject(new Error(`docker exec ${containerName} (agent processes): ${stderr.trim() || error.message}`));
      const found = [];
      for (const line of stdout.split("\n")) {
        let m;
        if ((m = /^P (\d+) (.*)$/.exec(line))) found.push({ pid: Number(m[1]), command: m[2].trim() });
        else if (found.length === 0) continue;
        else if ((m = /^PPid:\s+(\d+)/.exec(line))) found.at(-1).ppid = Number(m[1]);
        else if ((m = /^VmRSS:\s+(\d+) kB/.exec(line))) found.at(-1).vmRssKiB = Number(m[1]);
        else if ((m = /^VmHWM:\s+(\d+) kB/.exec(line))) found.at(-1).vmHwmKiB = Number(m[1]);
        else if ((m = /^F (\d+)/.exec(line))) found.at(-1).fds = Number(m[1]);
      }
      resolve(found.filter((p) => p.vmRssKiB !== undefined));
    });
  });
}

// The agent itself: the one started by an exec (its parent is outside the container's
// pid namespace, so PPid 0), not a child of it between fork and exec.
function mainAgent(processes) {
  const top = processes.filter((p) => p.ppid === 0);
  return top.length > 0 ? { ...top[0], agents: top.length } : undefined;
}

// The original's execStream over runDockerCli (with its "consumer is too slow" limit).
async function* cliExecStream(sandbox, options) {
  const maxOutputBytes = 1024 * 1024;
  const queue = [];
  let queuedBytes = 0;
  let wake;
  let complete = false;
  let failure;
  let tooSlow = false;
  const push = (event) => {
    if (event.type !== "result") {
      queuedBytes += event.data.byteLength;
      if (queuedBytes > maxOutputBytes) {
        tooSlow = true;
        return;
      }
    }
    queue.push(event);
    wake?.();
    wake = undefined;
  };
  const run = sandbox
    .exec({
      ...options,
      onStdout: (data) => push({ type: "stdout", data: data.slice() }),
      onStderr: (data) => push({ type: "stderr", data: data.slice() }),
    })
    .then((result) => push({ type: "result", result }));
  void run.then(
    () => {
      complete = true;
      wake?.();
    },
    (error) => {
      failure = error;
      complete = true;
      wake?.();
    },
  );
  while (!complete || queue.length > 0) {
    const event = queue.shift();
    if (event !== undefined) {
      if (event.type !== "result") queuedBytes -= event.data.byteLength;
      yield event;
      continue;
    }
    await new Promise((resolve) => {
      wake = resolve;
    });
  }
  if (failure !== undefined) throw failure;
  if (tooSlow) throw new Error("Sandbox stream consumer is too slow.");
}

// ---------------------------------------------------------------- targets and the table

function evaluateTargets(result) {
  const ops = result.operations;
  const ex = result.extras;
  const t = [];
  const add = (name, target, value, pass, detail) => t.push({ name, target, value, pass, detail });
  // The engine path against the two baselines (the targets from before the agent).
  if (ops.execTrue?.ratios) {
    const c = ops.execTrue.ratios.cliOverEngine;
    const d = ops.execTrue.ratios.dockerodeOverEngine;
    add("engine: exec true vs CLI", ">= 1.70x faster", `${fmtX(c.median)}`, c.median >= 1.7, `95% CI ${fmtX(c.ci95[0])}..${fmtX(c.ci95[1])}`);
    add("engine: exec true vs dockerode", "no slower (>= 1.00x)", `${fmtX(d.median)}`, d.median >= 1.0, `95% CI ${fmtX(d.ci95[0])}..${fmtX(d.ci95[1])}`);
  }
  if (ops.writeTextFileSmall?.ratios) {
    const c = ops.writeTextFileSmall.ratios.cliOverEngine;
    add("engine: writeTextFile 1 KiB vs CLI", ">= 2.00x faster", fmtX(c.median), c.median >= 2, `95% CI ${fmtX(c.ci95[0])}..${fmtX(c.ci95[1])}`);
  }
  if (ops.createSandbox?.ratios) {
    const c = ops.createSandbox.ratios.cliOverEngine;
    add("engine: createSandbox (3 files) vs CLI", ">= 3.00x faster", fmtX(c.median), c.median >= 3, `95% CI ${fmtX(c.ci95[0])}..${fmtX(c.ci95[1])}`);
  }
  if (ex.eventLoopDelay?.engine) {
    const e = ex.eventLoopDelay.engine;
    add(`engine: event-loop delay p99, ${ex.eventLoopDelay.concurrency} execs at once`, "< 5 ms", `${e.p99Ms.toFixed(2)} ms`, e.p99Ms < 5, `worst of ${ex.eventLoopDelay.rounds} rounds; median round ${e.medianRoundP99Ms.toFixed(2)} ms; max ${e.maxMs.toFixed(1)} ms; control (engine busy, loop idle) ${ex.eventLoopDelay.busyEngineIdleLoop?.p99Ms.toFixed(2)} ms`);
  }
  for (const dir of ["import", "export"]) {
    const d = ex.tree?.[dir];
    if (!d) continue;
    const what = `tree ${dir} (${ex.tree.config.files} files, ${(ex.tree.config.bytes / 2 ** 20).toFixed(0)} MiB)`;
    const l = d.ratios.loopOverPackage;
    const c = d.ratios.cpOverPackage;
    const ci = (r) => (Number.isFinite(r.ci95[0]) ? `95% CI ${fmtX(r.ci95[0])}..${fmtX(r.ci95[1])}` : `pairs ${r.pairs.map(fmtX).join(", ")}`);
    if (l.n > 0) add(`${what} vs ${ex.tree.config.loopConcurrency === 1 ? "a" : `a ${ex.tree.config.loopConcurrency}-wide`} ${dir === "import" ? "writeFile" : "readFile"} loop`, ">= 20x faster", fmtX(l.median), l.median >= 20, ci(l));
    add(`${what} vs docker cp`, "no slower (>= 1.00x)", fmtX(c.median), c.median >= 1, ci(c));
  }
  if (ex.leak) {
    const l = ex.leak;
    add(`engine: RSS growth after ${l.execs} execs`, "< 5 MiB", `${(l.rssGrowthBytes / 2 ** 20).toFixed(2)} MiB`, l.rssGrowthBytes < 5 * 2 ** 20, `heap ${(l.heapGrowthBytes / 2 ** 20).toFixed(2)} MiB`);
    add(`engine: open descriptors after ${l.execs} execs`, "no growth", `${l.fdGrowth >= 0 ? "+" : ""}${l.fdGrowth}`, l.fdGrowth <= 0, `${l.before.openFds} -> ${l.after.openFds}`);
  }

  // The agent path: absolute times on this machine (medians of the interleaved runs).
  const ms = (v) => `${fmtMs(v)} ms`;
  const atMost = (name, key, stat, limit) => {
    const x = ops[key]?.agent;
    if (x === undefined) return;
    add(`agent: ${name}`, `<= ${limit} ms`, ms(x[stat]), x[stat] <= limit, `${x.n} runs; median ${fmtMs(x.median)}, p95 ${fmtMs(x.p95)}, p99 ${fmtMs(x.p99)} ms; engine median ${fmtMs(ops[key].engine.median)} ms`);
  };
  atMost("exec true, median", "execTrue", "median", 2);
  atMost("exec true, p99", "execTrue", "p99", 5);
  atMost("readFile 1 KiB, median", "readFileSmall", "median", 1);
  atMost("writeTextFile 1 KiB, median", "writeTextFileSmall", "median", 1);
  atMost("listFiles (100 entries), median", "listFiles", "median", 2);
  if (ops.startProcess?.agent && ops.stopProcess?.agent) {
    const sum = ops.startProcess.agent.median + ops.stopProcess.agent.median;
    add("agent: startProcess + stopProcess, medians", "<= 15 ms", ms(sum), sum <= 15, `start ${fmtMs(ops.startProcess.agent.median)} + stop ${fmtMs(ops.stopProcess.agent.median)} ms; engine ${fmtMs(ops.startProcess.engine.median + ops.stopProcess.engine.median)} ms`);
  }
  atMost("waitForPort (listening), median", "waitForPort", "median", 2);
  if (ops.createSandbox?.ratios?.agentOverEngine) {
    const r = ops.createSandbox.ratios.agentOverEngine;
    add(
      "createSandbox (3 files), agent client / engine client",
      "<= 1.10x (<= 10% slower)",
      fmtX(r.median),
      r.median <= 1.1,
      `${Number.isFinite(r.ci95[0]) ? `95% CI ${fmtX(r.ci95[0])}..${fmtX(r.ci95[1])}` : `pairs ${r.pairs.map(fmtX).join(", ")}`}; medians ${fmtMs(ops.createSandbox.agent.median)} / ${fmtMs(ops.createSandbox.engine.median)} ms`,
    );
  }
  if (ex.eventLoopDelay?.agent) {
    const e = ex.eventLoopDelay.agent;
    add(
      `agent: event-loop delay p99, ${ex.eventLoopDelay.concurrency} execs at once`,
      "< 5 ms",
      `${e.p99Ms.toFixed(2)} ms`,
      e.p99Ms < 5,
      `worst of ${ex.eventLoopDelay.rounds} rounds of >= ${ex.eventLoopDelay.minRoundMs} ms (median ${e.bursts.median} bursts); median round ${e.medianRoundP99Ms.toFixed(2)} ms; max ${e.maxMs.toFixed(1)} ms`,
    );
  }
  if (ex.agentLeak) {
    const l = ex.agentLeak;
    const ap = l.agentProcess;
    add(
      `agent: RSS growth after ${l.operations} operations`,
      "< 5 MiB",
      `${(l.rssGrowthBytes / 2 ** 20).toFixed(2)} MiB`,
      l.rssGrowthBytes < 5 * 2 ** 20,
      `heap ${(l.heapGrowthBytes / 2 ** 20).toFixed(2)} MiB; second half of the run ${Number.isFinite(l.secondHalfRssGrowthBytes) ? `${l.secondHalfRssGrowthBytes >= 0 ? "+" : ""}${(l.secondHalfRssGrowthBytes / 2 ** 20).toFixed(1)} MiB` : "-"}; after ${l.warmup} warm-up operations (RSS ${l.warmupRssGrowthBytes >= 0 ? "+" : ""}${(l.warmupRssGrowthBytes / 2 ** 20).toFixed(1)} MiB, V8 heap reserved ${l.warmupHeapTotalGrowthBytes >= 0 ? "+" : ""}${(l.warmupHeapTotalGrowthBytes / 2 ** 20).toFixed(1)} MiB during them); the agent's own VmRSS ${ap.before.vmRssKiB} -> ${ap.after.vmRssKiB} KiB${ap.samePid ? "" : " (a different agent process at the end)"}`,
    );
    add(
      `agent: open descriptors after ${l.operations} operations`,
      "no growth",
      `${l.fdGrowth >= 0 ? "+" : ""}${l.fdGrowth}`,
      l.fdGrowth <= 0,
      `${l.before.openFds} -> ${l.after.openFds}; the agent's own ${ap.before.fds} -> ${ap.after.fds}`,
    );
  }
  return t;
}

function renderTable(result) {
  const lines = [];
  const m = result.machine;
  lines.push("");
  lines.push(`@anvia/sandbox benchmark, ${result.date}`);
  lines.push(`${m.cpuModel} x${m.cores}, ${m.kernel}, Docker ${m.dockerServerVersion} (API ${m.dockerApiVersion}, CLI ${m.dockerCliVersion}), Node ${m.nodeVersion}, dockerode ${m.dockerodeVersion}, addon ${m.addonBuild}`);
  lines.push(`load average ${m.loadAverageAtStart.join(" ")} at start, ${m.loadAverageAtEnd?.join(" ")} at end; ${result.wallSeconds?.toFixed(0)} s`);
  lines.push("");
  // Three header lines: the columns, with "this package" over its two (agent, engine);
  // those two's names; the units.
  const header = ["operation", "runs", ...IMPLS.map((impl) => IMPL_LABEL[impl]), ...RATIOS.map(([, , , label]) => label)];
  const a = 2 + IMPLS.indexOf("agent"); // agent, then engine
  header[a] = header[a + 1] = "";
  const sub = header.map((_, c) => (c === a ? IMPL_LABEL.agent : c === a + 1 ? IMPL_LABEL.engine : ""));
  const units = ["", "", ...IMPLS.map(() => "median / p95 ms"), ...RATIOS.map(() => "(pairs)")];
  const rows = [header, sub, units];
  for (const entry of Object.values(result.operations)) {
    if (entry.error !== undefined && entry.engine === undefined) {
      rows.push([entry.label, `${entry.runs}`, "error", ...header.slice(3).map(() => "")]);
      continue;
    }
    if (entry.engine === undefined) continue;
    const cell = (s) => `${fmtMs(s.median)} / ${fmtMs(s.p95)}`;
    rows.push([entry.label, `${entry.runs}`, ...IMPLS.map((impl) => cell(entry[impl])), ...RATIOS.map(([k]) => fmtX(entry.ratios[k].median))]);
  }
  if (rows.length > 3) {
    const widths = header.map((_, c) => Math.max(...rows.map((r) => r[c].length)));
    const fmtRow = (r) => r.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]) : cell.padStart(widths[c]))).join("  ").trimEnd();
    const span = widths[a] + 2 + widths[a + 1];
    const group = "this package";
    const groupCell = (" ".repeat(Math.max(0, Math.floor((span - group.length) / 2))) + group).padEnd(span);
    const first = fmtRow(header).split("");
    const at = widths.slice(0, a).reduce((n, w) => n + w + 2, 0);
    first.splice(at, span, groupCell);
    lines.push(first.join(""));
    lines.push(fmtRow(sub));
    lines.push(fmtRow(units));
    lines.push(widths.map((w) => "-".repeat(w)).join("  "));
    for (const r of rows.slice(3)) lines.push(fmtRow(r));
    lines.push("");
  }
  const ex = result.extras;
  if (ex.agentFirstCall) {
    const f = ex.agentFirstCall;
    lines.push(
      `agent first call (a fresh sandbox, median of ${f.runs}): first exec ${fmtMs(f.agent.firstExecMs.median)} ms, second ${fmtMs(f.agent.secondExecMs.median)} ms, ` +
        `placement and start ${fmtMs(f.agent.oneTimeMs.median)} ms (p95 ${fmtMs(f.agent.oneTimeMs.p95)}); engine control: first ${fmtMs(f.engine.firstExecMs.median)} ms, second ${fmtMs(f.engine.secondExecMs.median)} ms`,
    );
    lines.push(`agent process in the container: VmRSS ${f.agent.processVmRssKiB.median} KiB, ${f.agent.processFds.median} fds (fresh, after two execs)`);
  }
  if (ex.execStream) {
    const s = ex.execStream;
    lines.push(`execStream ${s.bytes / 2 ** 20} MiB (median of ${s.runs}): ${IMPLS.map((impl) => `${IMPL_LABEL[impl]} ${s[impl].median.toFixed(0)} MiB/s`).join(", ")}`);
  }
  if (ex.watchLatency) {
    const w = ex.watchLatency.agent;
    lines.push(
      `watchFiles (${ex.watchLatency.runs} writes): write to event median ${w.writeToEventMs.median.toFixed(2)} ms, p99 ${w.writeToEventMs.p99.toFixed(2)} ms; ` +
        `after the write resolved ${w.afterWriteMs.median.toFixed(2)} ms (agent; the engine path refuses watchFiles)`,
    );
  }
  if (ex.terminalLatency) lines.push(`terminal keystroke to echo (${ex.terminalLatency.runs} keys): ${terminalLine(ex.terminalLatency)}`);
  if (ex.tree) {
    const t = ex.tree;
    lines.push(`tree transfers: ${t.config.files} files, ${(t.config.bytes / 2 ** 20).toFixed(1)} MiB, ${t.config.runs} runs (${t.config.loopRuns} with the loop), median / p95 ms (loop: ${t.config.loopConcurrency} call${t.config.loopConcurrency === 1 ? "" : "s"} in flight):`);
    for (const dir of ["import", "export"]) {
      const d = t[dir];
      if (!d) continue;
      const cell = (x) => (x.n ? `${fmtMs(x.median)} / ${fmtMs(x.p95)}` : "-");
      lines.push(
        `  ${dir.padEnd(6)}  this package ${cell(d.package)}, ${dir === "import" ? "writeFile" : "readFile"} loop ${cell(d.loop)}, docker cp ${cell(d.cp)}; ` +
          `loop/pkg ${fmtX(d.ratios.loopOverPackage.median)}, cp/pkg ${fmtX(d.ratios.cpOverPackage.median)} (pairs)`,
      );
    }
  }
  if (ex.eventLoopDelay) {
    const e = ex.eventLoopDelay;
    const one = (x) => `p99 ${x.p99Ms.toFixed(2)} ms, max ${x.maxMs.toFixed(1)} ms (median round p99 ${x.medianRoundP99Ms.toFixed(2)} ms; wall ${fmtMs(x.wallMs.median)} ms)`;
    lines.push(`event-loop delay, ${e.concurrency} execs at once (bursts repeated for >= ${e.minRoundMs} ms), worst of ${e.rounds} rounds:`);
    for (const impl of IMPLS) lines.push(`  ${IMPL_LABEL[impl].padEnd(13)} ${one(e[impl])}${e[impl].bursts.median > 1 ? `, ${e[impl].bursts.median} bursts` : ""}`);
    if (e.busyEngineIdleLoop) {
      const b = e.busyEngineIdleLoop;
      lines.push(`  ${"control".padEnd(13)} p99 ${b.p99Ms.toFixed(2)} ms, max ${b.maxMs.toFixed(1)} ms (median round p99 ${b.medianRoundP99Ms.toFixed(2)} ms): this loop idle while another process runs the ${e.concurrency} execs`);
    }
    if (e.idle) lines.push(`  ${"idle".padEnd(13)} p99 ${e.idle.p99Ms.toFixed(2)} ms, max ${e.idle.maxMs.toFixed(1)} ms: this loop idle, engine idle (the machine's own noise)`);
  }
  const mib = (b) => (b / 2 ** 20).toFixed(1);
  if (ex.leak) {
    const l = ex.leak;
    lines.push(
      `engine: ${l.execs} execs (${l.concurrency} in flight, ${l.execsPerSecond.toFixed(1)}/s): RSS ${mib(l.before.rssBytes)} -> ${mib(l.after.rssBytes)} MiB, ` +
        `heap ${mib(l.before.heapUsedBytes)} -> ${mib(l.after.heapUsedBytes)} MiB, open fds ${l.before.openFds} -> ${l.after.openFds}`,
    );
  }
  if (ex.agentLeak) {
    const l = ex.agentLeak;
    const ap = l.agentProcess;
    lines.push(
      `agent: ${l.operations} operations after ${l.warmup} warm-up (${l.mix.join("/")} in turn, ${l.concurrency} in flight, ${l.operationsPerSecond.toFixed(0)}/s): ` +
        `RSS ${mib(l.beforeWarmup.rssBytes)} before the warm-up, ${mib(l.before.rssBytes)} -> ${mib(l.after.rssBytes)} MiB, ` +
        `heap ${mib(l.before.heapUsedBytes)} -> ${mib(l.after.heapUsedBytes)} MiB, open fds ${l.before.openFds} -> ${l.after.openFds}; ` +
        `the agent in the container: VmRSS ${ap.before.vmRssKiB} -> ${ap.after.vmRssKiB} KiB (peak ${ap.after.vmHwmKiB} KiB), fds ${ap.before.fds} -> ${ap.after.fds}`,
    );
  }
  if (result.targets.length > 0) {
    lines.push("");
    lines.push("targets (reported, not asserted):");
    const w = Math.max(...result.targets.map((t) => t.name.length));
    const w2 = Math.max(...result.targets.map((t) => t.target.length));
    for (const t of result.targets) lines.push(`  ${t.pass ? "PASS" : "MISS"}  ${t.name.padEnd(w)}  ${t.target.padEnd(w2)}  ${t.value}  (${t.detail})`);
  }
  if (result.errors.length > 0) {
    lines.push("");
    lines.push(`errors: ${result.errors.length} (see the JSON)`);
  }
  lines.push("");
  return lines.join("\n");
}

// ---------------------------------------------------------------- entry

if (typeof globalThis.gc !== "function") {
  // The leak test needs a forced GC: run again with --expose-gc, in this process tree.
  const child = spawn(process.execPath, ["--expose-gc", ...process.execArgv, fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    stdio: "inherit",
  });
  for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => child.kill(signal));
  child.on("exit", (code, signal) => process.exit(code ?? (signal ? 128 + (os.constants.signals[signal] ?? 1) : 1)));
} else {
  main().then(
    (code) => {
      process.exitCode = code;
    },
    (error) => {
      process.stderr.write(`${error?.stack ?? error}\n`);
      process.exitCode = 1;
    },
  );
}

// One terminal running `cat` on `target`; `runs` keystrokes, each timed to its echo.
async function terminalEchoes(target, runs, pause) {
  const terminal = await target.startTerminal({ command: "cat" });
  const it = terminal.output()[Symbol.asyncIterator]();
  let text = "";
  const until = async (marker) => {
    while (!text.includes(marker)) {
      const r = await it.next();
      if (r.done) throw new Error("the terminal ended during the latency run");
      text += Buffer.from(r.value.data).toString("latin1");
    }
  };
  try {
    const samples = [];
    for (let i = -3; i < runs; i++) {
      // A fresh line now and then: the pty's line buffer holds 4096 characters.
      if (i % 1000 === 0) {
        text = "";
        await terminal.write("\n");
        await until("\n");
      }
      const key = String.fromCharCode(97 + ((i + 26) % 26));
      text = "";
      const s = performance.now();
      const seen = until(key);
      await terminal.write(key);
      await seen;
      if (i >= 0) samples.push(performance.now() - s); // the first three warm the path
      await pause();
    }
    return samples;
  } finally {
    await it.return?.();
    await terminal.kill().catch(() => {});
  }
}

function terminalLine(tl) {
  return ["agent", "engine"]
    .map((impl) => {
      const v = tl[impl];
      if (typeof v === "string") return `${impl} ${v}`;
      return `${impl} median ${v.keystrokeToEchoMs.median.toFixed(2)} ms, p99 ${v.keystrokeToEchoMs.p99.toFixed(2)} ms`;
    })
    .join("; ");
}
