#!/usr/bin/env node
// `npm run bench`: the same operations three ways, in one process and one run, against
// the same engine and image: this package, the original's docker CLI invocations, and
// dockerode. Runs are interleaved (run i does every implementation once, in an order
// that rotates with i) so that drift on the machine hits all three alike, and each
// baseline's ratio to this package is computed pair by pair (run i against run i).
//
//   node --expose-gc bench/run.mjs [options]      (re-executes itself with --expose-gc)
//
// Options (defaults size the whole run at about 10-15 minutes on a 2-core machine):
//   --scale F            multiply every default run count by F (at least 1 run each)
//   --runs N             runs per operation (overrides the defaults and --scale)
//   --warmup N           warm-up runs per operation (default 3)
//   --op KEY=N           runs for one operation (repeatable); keys are listed by --list
//   --only KEY,KEY       only these operations and extras (execStream, eventLoopDelay,
//                        leak); keys are listed by --list
//   --large-kib N        size of the "1 MiB" payloads, in KiB (default 1024)
//   --stream-mib N       execStream size in MiB (default 256); --stream-runs N (default 3)
//   --concurrency N      concurrent execs for the event-loop test (default 64);
//   --eld-rounds N       rounds of it per implementation (default 3)
//   --leak-execs N       execs between the RSS/fd readings (default 5000);
//   --leak-warmup N      execs before the first reading (default 300);
//   --leak-concurrency N execs in flight during the leak test (default 2)
//   --no-extras          skip the stream, event-loop and leak measurements
//   --smoke              one run of everything with tiny sizes (used by the tests)
//   --out FILE           write the JSON there (default bench/results/<date>.json and
//                        bench/results/latest.json)
//   --id-prefix P        sandbox ids start with P (default "bench")
//   --list               print the operation keys and exit
import { spawn, execFileSync } from "node:child_process";
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
const EXTRAS = ["execStream", "eventLoopDelay", "leak"];
const IMPLS = ["package", "cli", "dockerode"];
const IMPL_LABEL = { package: "this package", cli: "docker CLI", dockerode: "dockerode" };

function parseArgs(argv) {
  const o = {
    scale: 1,
    runs: undefined,
    warmup: 3,
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
      case "--no-extras": o.extras = false; break;
      case "--smoke": o.smoke = true; break;
      case "--out": o.out = path.resolve(next()); break;
      case "--list": o.list = true; break;
      case "--id-prefix": o.idPrefix = next(); break;
      case "--help":
      case "-h":
        process.stdout.write(readFileSync(fileURLToPath(import.meta.url), "utf8").split("\n").filter((l) => l.startsWith("//")).slice(0, 30).map((l) => l.slice(3)).join("\n") + "\n");
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
const fmtMs = (v) => (Number.isFinite(v) ? (v >= 100 ? v.toFixed(0) : v.toFixed(1)) : "-");
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
  const { IMAGE, PORT, BENCH_MAX_PROCESSES, newSandboxId, setIdPrefix, summarize, pairRatios, sleep } = await import("./common.mjs");
  if (o.idPrefix !== undefined) setIdPrefix(o.idPrefix);
  const pkgPath = await import("./package-path.mjs");
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
      largeBytes,
      streamBytes: o.streamMiB * 1024 * 1024,
      streamRuns: o.streamRuns,
      concurrency: o.concurrency,
      eldRounds: o.eldRounds,
      leakExecs: o.leakExecs,
      leakWarmup: o.leakWarmup,
      leakConcurrency: o.leakConcurrency,
      notes: [
        "Runs are interleaved: run i measures every implementation once, in an order rotating with i.",
        "Ratios are baseline time / this package's time, run i against run i; the median of those pairs is reported, with a bootstrap 95% interval.",
        "The runtime operations of all three work on one sandbox (created by this package, bridge network, port 8080 published, busybox httpd listening); createSandbox/destroy use a fresh sandbox per implementation and run.",
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

  const record = (key, samples) => {
    const entry = result.operations[key];
    entry.samplesMs = samples;
    for (const impl of IMPLS) entry[impl] = summarize(samples[impl]);
    entry.ratios = {
      cliOverPackage: pairRatios(samples.cli, samples.package),
      dockerodeOverPackage: pairRatios(samples.dockerode, samples.package),
    };
    log(
      `${entry.label}: package ${fmtMs(entry.package.median)} ms, CLI ${fmtMs(entry.cli.median)} ms, dockerode ${fmtMs(entry.dockerode.median)} ms ` +
        `(CLI/pkg ${fmtX(entry.ratios.cliOverPackage.median)}, dockerode/pkg ${fmtX(entry.ratios.dockerodeOverPackage.median)})`,
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
    const shared = track(await pkgPath.createSandbox({ image: IMAGE, id: newSandboxId("shared"), ports: [PORT], maxProcesses: BENCH_MAX_PROCESSES }));
    const fixture = await shared.exec({
      command: "sh",
      args: [
        "-c",
        'set -e; mkdir -p data out list100 www; i=0; while [ $i -lt 100 ]; do printf "entry %d\\n" $i > list100/f$(printf %03d $i); i=$((i + 1)); done; echo ok > www/index.html',
      ],
    });
    if (fixture.exitCode !== 0) throw new Error(`fixture exec failed: ${new TextDecoder().decode(fixture.stderr)}`);
    await shared.writeTextFile({ path: "data/small.txt", text: smallText });
    await shared.writeTextFile({ path: "data/large.txt", text: largeText });
    const server = await shared.startProcess({ command: "busybox", args: ["httpd", "-f", "-p", `${PORT}`, "-h", "/workspace/www"] });
    await shared.waitForPort({ containerPort: PORT, timeoutMs: 10_000 });
    const hostPort = shared.publishedPorts[0].hostPort;

    const targets = {
      package: shared,
      cli: new cliPath.CliSandbox({
        id: shared.id,
        containerName: shared.containerName,
        volumeName: undefined,
        ownsVolume: false,
        publishedPorts: shared.publishedPorts.map((p) => ({ ...p })),
        maxProcesses: BENCH_MAX_PROCESSES,
      }),
      dockerode: dockerodePath.attach({
        id: shared.id,
        containerName: shared.containerName,
        volumeName: undefined,
        publishedPorts: shared.publishedPorts.map((p) => ({ ...p })),
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
        (r) => expect(r.containerPort === PORT && r.hostPort === hostPort, "the published port"),
      ],
    ];

    for (const [key, run, check] of simple) {
      if (!want(key)) continue;
      const { runs } = result.operations[key];
      const samples = { package: [], cli: [], dockerode: [] };
      const t0 = performance.now();
      try {
        for (let i = 0; i < o.warmup + runs; i++) {
          for (const impl of rotate(IMPLS, i)) {
            const s = performance.now();
            const r = await run(targets[impl], impl);
            const ms = performance.now() - s;
            check(r);
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
      // The writes of all three landed, with the right sizes.
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
      const start = { package: [], cli: [], dockerode: [] };
      const stop = { package: [], cli: [], dockerode: [] };
      const t0 = performance.now();
      try {
        for (let i = 0; i < o.warmup + runs; i++) {
          for (const impl of rotate(IMPLS, i)) {
            const t = targets[impl];
            let s = performance.now();
            const info = await t.startProcess({ command: "sleep", args: ["600"] });
            const startMs = performance.now() - s;
            expect(info.status === "running", "process running");
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
      const create = { package: [], cli: [], dockerode: [] };
      const destroy = { package: [], cli: [], dockerode: [] };
      const makers = {
        package: () => pkgPath.createSandbox({ image: IMAGE, id: newSandboxId("pkg"), ports: [PORT], files: initialFiles }),
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
        if (want("createSandbox")) record("createSandbox", create);
        if (want("destroy")) record("destroy", destroy);
        for (const key of ["createSandbox", "destroy"]) if (want(key)) result.operations[key].wallSeconds = (performance.now() - t0) / 1000;
      } catch (error) {
        failed("createSandbox", error);
      }
    }

    if (o.extras) {
      // ---------------------------------------------------------- execStream throughput
      const streamBytes = o.streamMiB * 1024 * 1024;
      const streamCmd = { command: "head", args: ["-c", `${streamBytes}`, "/dev/zero"], timeoutMs: 300_000 };
      const streamers = {
        package: async () => {
          let n = 0;
          let res;
          for await (const ev of shared.execStream(streamCmd)) {
            if (ev.type === "stdout") n += ev.data.byteLength;
            else if (ev.type === "result") res = ev.result;
          }
          expect(res?.exitCode === 0, "stream exit 0");
          return n;
        },
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
      if (wantExtra("execStream")) try {
        const stream = { bytes: streamBytes, runs: o.streamRuns };
        const mibps = { package: [], cli: [], dockerode: [] };
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
        result.extras.execStream = stream;
        log(`execStream ${o.streamMiB} MiB: package ${stream.package.median.toFixed(0)} MiB/s, CLI ${stream.cli.median.toFixed(0)} MiB/s, dockerode ${stream.dockerode.median.toFixed(0)} MiB/s`);
      } catch (error) {
        failed("execStream", error);
      }

      // ---------------------------------------------------------- RSS and descriptors
      // Before the event-loop test: its bursts of 64 requests leave idle connections in
      // the package's (and dockerode's) pools, which would inflate the first reading.
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
        const settle = async () => {
          for (let i = 0; i < 3; i++) {
            globalThis.gc();
            await sleep(50);
          }
        };
        const reading = () => {
          const m = process.memoryUsage();
          return { rssBytes: m.rss, heapUsedBytes: m.heapUsed, externalBytes: m.external, arrayBuffersBytes: m.arrayBuffers, openFds: fdCount() };
        };
        log(`leak test: ${o.leakWarmup} warm-up execs, then ${o.leakExecs} execs (${o.leakConcurrency} in flight)`);
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
          `leak test: RSS ${(before.rssBytes / 2 ** 20).toFixed(1)} -> ${(after.rssBytes / 2 ** 20).toFixed(1)} MiB, fds ${before.openFds} -> ${after.openFds}, ` +
            `${(o.leakExecs / seconds).toFixed(1)} exec/s`,
        );
      } catch (error) {
        failed("leak", error);
      }
      // ---------------------------------------------------------- event-loop delay
      // A fresh histogram per round: a re-enabled one would record the whole time it was
      // disabled as one delay (it keeps the timestamp of its last sample).
      if (wantExtra("eventLoopDelay")) try {
        const eld = { concurrency: o.concurrency, rounds: o.eldRounds, resolutionMs: 1 };
        const rounds = { package: [], cli: [], dockerode: [] };
        const idleRounds = [];
        const busyRounds = [];
        for (let i = 0; i < o.eldRounds; i++) {
          for (const impl of rotate(IMPLS, i)) {
            await sleep(200);
            const h = monitorEventLoopDelay({ resolution: 1 });
            const s = performance.now();
            h.enable();
            const all = await Promise.all(Array.from({ length: o.concurrency }, () => targets[impl].exec({ command: "true" })));
            h.disable();
            const wallMs = performance.now() - s;
            expect(all.every((r) => r.exitCode === 0), "all concurrent execs exit 0");
            rounds[impl].push({ p50Ms: h.percentile(50) / 1e6, p99Ms: h.percentile(99) / 1e6, maxMs: h.max / 1e6, samples: h.count, wallMs });
          }
          // Controls: this loop idle on a quiet engine (the machine's own noise), and this
          // loop idle while another process makes the engine run the same 64 execs (what
          // the engine's work alone does to any process on this machine).
          await sleep(200);
          const idle = monitorEventLoopDelay({ resolution: 1 });
          idle.enable();
          await sleep(rounds.package[rounds.package.length - 1].wallMs);
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
            rounds: r,
          };
        }
        result.extras.eventLoopDelay = eld;
        log(
          `event-loop delay with ${o.concurrency} execs at once (worst of ${o.eldRounds}): package p99 ${eld.package.p99Ms.toFixed(2)} ms (max ${eld.package.maxMs.toFixed(1)}), ` +
            `CLI p99 ${eld.cli.p99Ms.toFixed(2)} ms, dockerode p99 ${eld.dockerode.p99Ms.toFixed(2)} ms`,
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
  if (ops.execTrue?.ratios) {
    const c = ops.execTrue.ratios.cliOverPackage;
    const d = ops.execTrue.ratios.dockerodeOverPackage;
    add("exec true vs CLI", ">= 1.70x faster", `${fmtX(c.median)}`, c.median >= 1.7, `95% CI ${fmtX(c.ci95[0])}..${fmtX(c.ci95[1])}`);
    add("exec true vs dockerode", "no slower (>= 1.00x)", `${fmtX(d.median)}`, d.median >= 1.0, `95% CI ${fmtX(d.ci95[0])}..${fmtX(d.ci95[1])}`);
  }
  if (ops.writeTextFileSmall?.ratios) {
    const c = ops.writeTextFileSmall.ratios.cliOverPackage;
    add("writeTextFile 1 KiB vs CLI", ">= 2.00x faster", fmtX(c.median), c.median >= 2, `95% CI ${fmtX(c.ci95[0])}..${fmtX(c.ci95[1])}`);
  }
  if (ops.createSandbox?.ratios) {
    const c = ops.createSandbox.ratios.cliOverPackage;
    add("createSandbox (3 files) vs CLI", ">= 3.00x faster", fmtX(c.median), c.median >= 3, `95% CI ${fmtX(c.ci95[0])}..${fmtX(c.ci95[1])}`);
  }
  if (ex.eventLoopDelay?.package) {
    const e = ex.eventLoopDelay.package;
    add(`event-loop delay p99, ${ex.eventLoopDelay.concurrency} execs at once`, "< 5 ms", `${e.p99Ms.toFixed(2)} ms`, e.p99Ms < 5, `worst of ${ex.eventLoopDelay.rounds} rounds; median round ${e.medianRoundP99Ms.toFixed(2)} ms; max ${e.maxMs.toFixed(1)} ms; control (engine busy, loop idle) ${ex.eventLoopDelay.busyEngineIdleLoop?.p99Ms.toFixed(2)} ms`);
  }
  if (ex.leak) {
    const l = ex.leak;
    add(`RSS growth after ${l.execs} execs`, "< 5 MiB", `${(l.rssGrowthBytes / 2 ** 20).toFixed(2)} MiB`, l.rssGrowthBytes < 5 * 2 ** 20, `heap ${(l.heapGrowthBytes / 2 ** 20).toFixed(2)} MiB`);
    add(`open descriptors after ${l.execs} execs`, "no growth", `${l.fdGrowth >= 0 ? "+" : ""}${l.fdGrowth}`, l.fdGrowth <= 0, `${l.before.openFds} -> ${l.after.openFds}`);
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
  const header = ["operation", "runs", "this package", "docker CLI", "dockerode", "CLI/pkg", "dockerode/pkg"];
  const rows = [header, ["", "", "median / p95 ms", "median / p95 ms", "median / p95 ms", "(pairs)", "(pairs)"]];
  for (const [key, entry] of Object.entries(result.operations)) {
    if (entry.error !== undefined && entry.package === undefined) {
      rows.push([entry.label, `${entry.runs}`, "error", "", "", "", ""]);
      continue;
    }
    if (entry.package === undefined) continue;
    const cell = (s) => `${fmtMs(s.median)} / ${fmtMs(s.p95)}`;
    rows.push([entry.label, `${entry.runs}`, cell(entry.package), cell(entry.cli), cell(entry.dockerode), fmtX(entry.ratios.cliOverPackage.median), fmtX(entry.ratios.dockerodeOverPackage.median)]);
    void key;
  }
  if (rows.length > 2) {
    const widths = header.map((_, c) => Math.max(...rows.map((r) => r[c].length)));
    const fmtRow = (r) => r.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]) : cell.padStart(widths[c]))).join("  ");
    lines.push(fmtRow(rows[0]));
    lines.push(fmtRow(rows[1]));
    lines.push(widths.map((w) => "-".repeat(w)).join("  "));
    for (const r of rows.slice(2)) lines.push(fmtRow(r));
    lines.push("");
  }
  const ex = result.extras;
  if (ex.execStream) {
    const s = ex.execStream;
    lines.push(`execStream ${s.bytes / 2 ** 20} MiB (median of ${s.runs}): this package ${s.package.median.toFixed(0)} MiB/s, docker CLI ${s.cli.median.toFixed(0)} MiB/s, dockerode ${s.dockerode.median.toFixed(0)} MiB/s`);
  }
  if (ex.eventLoopDelay) {
    const e = ex.eventLoopDelay;
    const one = (x) => `p99 ${x.p99Ms.toFixed(2)} ms, max ${x.maxMs.toFixed(1)} ms (median round p99 ${x.medianRoundP99Ms.toFixed(2)} ms; wall ${fmtMs(x.wallMs.median)} ms)`;
    lines.push(`event-loop delay, ${e.concurrency} execs at once, worst of ${e.rounds} rounds:`);
    for (const impl of IMPLS) lines.push(`  ${IMPL_LABEL[impl].padEnd(13)} ${one(e[impl])}`);
    if (e.busyEngineIdleLoop) {
      const b = e.busyEngineIdleLoop;
      lines.push(`  ${"control".padEnd(13)} p99 ${b.p99Ms.toFixed(2)} ms, max ${b.maxMs.toFixed(1)} ms (median round p99 ${b.medianRoundP99Ms.toFixed(2)} ms): this loop idle while another process runs the ${e.concurrency} execs`);
    }
    if (e.idle) lines.push(`  ${"idle".padEnd(13)} p99 ${e.idle.p99Ms.toFixed(2)} ms, max ${e.idle.maxMs.toFixed(1)} ms: this loop idle, engine idle (the machine's own noise)`);
  }
  if (ex.leak) {
    const l = ex.leak;
    lines.push(
      `${l.execs} execs (${l.concurrency} in flight, ${l.execsPerSecond.toFixed(1)}/s): RSS ${(l.before.rssBytes / 2 ** 20).toFixed(1)} -> ${(l.after.rssBytes / 2 ** 20).toFixed(1)} MiB, ` +
        `heap ${(l.before.heapUsedBytes / 2 ** 20).toFixed(1)} -> ${(l.after.heapUsedBytes / 2 ** 20).toFixed(1)} MiB, open fds ${l.before.openFds} -> ${l.after.openFds}`,
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
