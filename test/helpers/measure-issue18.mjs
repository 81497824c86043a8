// Measurements reported in README.md for issue 18, on the real engine:
//   node test/helpers/measure-issue18.mjs [--runs N]
// 1. sandbox.fork() with a small workspace and with a 500 MiB one (median, min, max of N);
// 2. the cost of activity tracking: `exec true` on a sandbox with an idle limit and on one
//    without, interleaved (median per operation), and one signal's own time at the engine
//    (the signals per operation are counted by test/fake/lifetime-fork.test.js);
// 3. sandbox.stats() (median), and its two parts apart: the stats request and the `du`.
import { performance } from "node:perf_hooks";
import http from "node:http";
import { DockerSandboxClient } from "../../lib/index.js";
import { IMAGE } from "./docker.js";

const runs = Number(process.argv[process.argv.indexOf("--runs") + 1]) || 5;
const client = new DockerSandboxClient();
const base = { image: IMAGE, workspace: { type: "ephemeral" }, network: { mode: "none" } };
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (xs) => `median ${median(xs).toFixed(0)} ms (min ${Math.min(...xs).toFixed(0)}, max ${Math.max(...xs).toFixed(0)}, n=${xs.length})`;

async function timed(fn) {
  const t = performance.now();
  const value = await fn();
  return [performance.now() - t, value];
}

function post(path) {
  return new Promise((resolve, reject) => {
    const t = performance.now();
    const req = http.request({ socketPath: "/var/run/docker.sock", method: "POST", path: `/v1.41${path}` }, (res) => {
      res.resume();
      res.on("end", () => resolve(performance.now() - t));
    });
    req.on("error", reject);
    req.end();
  });
}

async function measureFork(label, setup) {
  const parent = await client.createSandbox(base);
  try {
    await setup(parent);
    const times = [];
    for (let i = 0; i < runs; i++) {
      const [ms, fork] = await timed(() => parent.fork());
      times.push(ms);
      await fork.destroy();
    }
    console.log(`fork, ${label}: ${fmt(times)}`);
  } finally {
    await parent.destroy();
  }
}

async function measureActivity() {
  const limited = await client.createSandbox({ ...base, lifetime: { idleTimeoutMs: 60_000 } });
  const plain = await client.createSandbox(base);
  try {
    const a = [];
    const b = [];
    for (let i = 0; i < 40; i++) {
      const [x] = await timed(() => limited.runtime.exec({ command: "true" }));
      const [y] = await timed(() => plain.runtime.exec({ command: "true" }));
      a.push(x);
      b.push(y);
    }
    console.log(`exec true, idle limit 60 s: ${fmt(a)}`);
    console.log(`exec true, no limit:        ${fmt(b)}`);
    const kill = [];
    for (let i = 0; i < 20; i++) kill.push(await post(`/containers/anvia-sandbox-${limited.id}/kill?signal=SIGUSR1`));
    console.log(`one activity signal (POST /kill?signal=SIGUSR1), engine round trip: ${fmt(kill)}`);
  } finally {
    await limited.destroy();
    await plain.destroy();
  }
}

async function measureStats() {
  const sandbox = await client.createSandbox(base);
  try {
    await sandbox.runtime.exec({ command: "sh", args: ["-c", "mkdir d && cd d && for i in $(seq 1 2000); do echo $i > f$i; done"] });
    const total = [];
    for (let i = 0; i < runs; i++) total.push((await timed(() => sandbox.stats()))[0]);
    console.log(`stats() (2000 files in the workspace): ${fmt(total)}`);
    const du = [];
    for (let i = 0; i < runs; i++) du.push((await timed(() => sandbox.runtime.exec({ command: "du", args: ["-s", "-k", "/workspace"] })))[0]);
    console.log(`  of which du -sk /workspace as one exec: ${fmt(du)}`);
    const req = [];
    for (let i = 0; i < runs; i++) {
      const t = performance.now();
      await new Promise((resolve, reject) =>
        http
          .get({ socketPath: "/var/run/docker.sock", path: `/v1.41/containers/anvia-sandbox-${sandbox.id}/stats?stream=false` }, (res) => {
            res.resume();
            res.on("end", resolve);
          })
          .on("error", reject),
      );
      req.push(performance.now() - t);
    }
    console.log(`  of which GET /stats?stream=false: ${fmt(req)}`);
  } finally {
    await sandbox.destroy();
  }
}

await measureFork("small workspace (3 files)", (p) => p.runtime.exec({ command: "sh", args: ["-c", "echo a > a; echo b > b; echo c > /root/c"] }));
await measureFork("500 MiB workspace", (p) =>
  p.runtime.exec({ command: "sh", args: ["-c", "dd if=/dev/urandom of=big.bin bs=1M count=500 2>/dev/null"], timeoutMs: 300_000 }),
);
await measureActivity();
await measureStats();
