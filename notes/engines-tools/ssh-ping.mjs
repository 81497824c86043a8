// Cost of reaching an engine through `ssh HOST docker system dial-stdio` (issue 15), to
// decide whether the C side may spawn one ssh per connection or must multiplex over one.
//   eval "$(bash scripts/sshd.sh env)"; node notes/engines-tools/ssh-ping.mjs [N]
// Measures, N times each (medians, p90, min, max in ms):
//   setup:  spawn ssh ... dial-stdio, send GET /_ping, until the reply's head arrives
//   ssh:    spawn ssh ... true, until it exits (the ssh handshake and login alone)
//   local:  spawn `docker system dial-stdio` without ssh, until /_ping answers
//   mux:    as setup, but as a new channel on an ssh ControlMaster that is already logged in
//           (OpenSSH connection sharing: no handshake, but still the remote shell and the
//           remote `docker system dial-stdio` per connection)
//   open:   one /_ping over an already-open dial-stdio connection (keep-alive), 10*N times
//   unix:   one /_ping over an already-open unix socket connection to the engine, 10*N times
import { spawn } from "node:child_process";
import net from "node:net";

const N = Number(process.argv[2] ?? 20);
const m = /^ssh:\/\/(?:([^@]+)@)?([^:/]+)(?::(\d+))?/.exec(process.env.DOCKER_HOST ?? "");
if (!m) throw new Error("DOCKER_HOST must be ssh://[user@]host[:port] (eval \"$(bash scripts/sshd.sh env)\")");
const [, user, host, port] = m;
const sshArgs = [...(user ? ["-l", user] : []), ...(port ? ["-p", port] : []), "-T", "--", host];
const PING = "GET /_ping HTTP/1.1\r\nHost: docker\r\n\r\n";
const now = () => Number(process.hrtime.bigint()) / 1e6;

function stats(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p) => s[Math.min(s.length - 1, Math.floor(p * s.length))];
  return { n: s.length, median: +q(0.5).toFixed(2), p90: +q(0.9).toFixed(2), min: +s[0].toFixed(2), max: +s[s.length - 1].toFixed(2) };
}

// A duplex "connection" over a child's stdio; resolves each reply's head + body "OK".
function pinger(write, onData) {
  let buf = "";
  let waiting = null;
  onData((c) => {
    buf += c.toString("latin1");
    const i = buf.indexOf("\r\n\r\n");
    if (i >= 0 && buf.length >= i + 4 + 2 && waiting) {
      const head = buf.slice(0, i);
      buf = buf.slice(i + 4 + 2);
      const w = waiting; waiting = null; w(head);
    }
  });
  return () => new Promise((resolve) => { waiting = resolve; write(PING); });
}

async function firstPing(cmd, args) {
  const t0 = now();
  const child = spawn(cmd, args, { stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (c) => (stderr += c));
  const ping = pinger((s) => child.stdin.write(s), (f) => child.stdout.on("data", f));
  const head = await Promise.race([ping(), new Promise((_, rej) => child.on("exit", (c) => rej(new Error(`exit ${c}: ${stderr}`))))]);
  const t = now() - t0;
  child.stdin.end();
  await new Promise((r) => child.on("close", r));
  return { t, head };
}

async function run(cmd, args) {
  const t0 = now();
  const child = spawn(cmd, args, { stdio: "ignore" });
  await new Promise((r) => child.on("close", r));
  return now() - t0;
}

const setup = [], sshOnly = [], local = [];
let version;
for (let i = 0; i < N; i++) {
  const r = await firstPing("ssh", [...sshArgs, "docker", "system", "dial-stdio"]);
  setup.push(r.t);
  version ??= /Api-Version: *(\S+)/i.exec(r.head)?.[1];
  sshOnly.push(await run("ssh", [...sshArgs, "true"]));
  local.push((await firstPing("docker", ["-H", "unix:///var/run/docker.sock", "system", "dial-stdio"])).t);
}

// Channels on a master connection (ssh -M), one dial-stdio per channel.
const { mkdtempSync, rmSync } = await import("node:fs");
const { tmpdir } = await import("node:os");
const cmDir = mkdtempSync(`${tmpdir()}/anvia-ssh-cm-`);
const cm = ["-o", `ControlPath=${cmDir}/cm`];
const master = spawn("ssh", [...cm, "-o", "ControlMaster=yes", "-N", ...sshArgs], { stdio: "ignore" });
for (let i = 0; i < 100; i++) {
  const ok = await new Promise((r) => spawn("ssh", [...cm, "-O", "check", ...sshArgs], { stdio: "ignore" }).on("close", (c) => r(c === 0)));
  if (ok) break;
  await new Promise((r) => setTimeout(r, 50));
}
const mux = [];
for (let i = 0; i < N; i++) mux.push((await firstPing("ssh", [...cm, "-o", "ControlMaster=no", ...sshArgs, "docker", "system", "dial-stdio"])).t);
master.kill();
await new Promise((r) => master.on("close", r));
rmSync(cmDir, { recursive: true, force: true });

// Pings over one open dial-stdio connection.
const child = spawn("ssh", [...sshArgs, "docker", "system", "dial-stdio"], { stdio: ["pipe", "pipe", "inherit"] });
const overSsh = pinger((s) => child.stdin.write(s), (f) => child.stdout.on("data", f));
await overSsh();
const open = [];
for (let i = 0; i < 10 * N; i++) { const t0 = now(); await overSsh(); open.push(now() - t0); }
child.stdin.end();
await new Promise((r) => child.on("close", r));

const sock = net.connect("/var/run/docker.sock");
await new Promise((r) => sock.on("connect", r));
const overUnix = pinger((s) => sock.write(s), (f) => sock.on("data", f));
await overUnix();
const unix = [];
for (let i = 0; i < 10 * N; i++) { const t0 = now(); await overUnix(); unix.push(now() - t0); }
sock.end();

const os = await import("node:os");
console.log(JSON.stringify({
  engine_api_version: version, load: os.loadavg().map((x) => +x.toFixed(1)),
  "setup: ssh + dial-stdio to first /_ping reply": stats(setup),
  "ssh login alone (ssh ... true)": stats(sshOnly),
  "local docker system dial-stdio to first /_ping (no ssh)": stats(local),
  "mux: new channel on a logged-in ControlMaster + dial-stdio to first /_ping": stats(mux),
  "one /_ping over an open dial-stdio connection": stats(open),
  "one /_ping over an open unix socket connection": stats(unix),
}, null, 1));
