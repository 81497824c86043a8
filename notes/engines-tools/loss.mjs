// The "silent output loss", measured two ways against the engine DOCKER_HOST names
// (unix:// only): through the library (runtime.exec with `input`), and through a raw
// hijacked /exec/{id}/start on a socket (write all input, half-close, read to the end; the
// exit code from /exec/{id}/json), so the engine's own behaviour is seen apart from ours.
// The command prints "out" and exits 3 without reading stdin.
//   DOCKER_HOST=unix://... node notes/engines-tools/loss.mjs [N] [sizes...]
// Needs ANVIA_SANDBOX_ADDON or a build; leaves nothing behind.
import net from "node:net";
import { randomBytes } from "node:crypto";
import { DockerSandboxClient } from "../../lib/index.js";
import { api, IMAGE } from "../../test/helpers/docker.js";

const N = Number(process.argv[2] ?? 100);
const sizes = process.argv.length > 3 ? process.argv.slice(3).map(Number) : [1, 64 * 1024, 1024 * 1024];
const sock = (process.env.DOCKER_HOST ?? "unix:///var/run/docker.sock").replace(/^unix:\/\//, "");

function rawExec(container, input) {
  return new Promise(async (resolve) => {
    const created = await api("POST", `/containers/${container}/exec`, {
      AttachStdin: true, AttachStdout: true, AttachStderr: true, Cmd: ["sh", "-c", "echo out; exit 3"],
    });
    const id = created.json.Id;
    const body = JSON.stringify({ Detach: false, Tty: false });
    const s = net.connect(sock);
    let buf = Buffer.alloc(0);
    let headDone = false;
    let error;
    s.on("error", (e) => { error = e.code ?? e.message; });
    // The engine's end of output is the end of the exec: stop sending input then (as the
    // docker CLI does). Docker keeps the stdin FIFO open in the shim, so input the command
    // does not read is never refused there, only left unread.
    s.on("end", () => s.destroy());
    const timer = setTimeout(() => { error = "no end after 20 s"; s.destroy(); }, 20_000);
    s.on("data", (c) => {
      buf = Buffer.concat([buf, c]);
      if (!headDone) {
        const i = buf.indexOf("\r\n\r\n");
        if (i < 0) return;
        headDone = true;
        buf = buf.subarray(i + 4);
        s.write(input);
        s.end();
      }
    });
    s.on("close", async () => {
      clearTimeout(timer);
      let stdout = "", stderr = "";
      for (let i = 0; i + 8 <= buf.length; ) {
        const len = buf.readUInt32BE(i + 4);
        const d = buf.subarray(i + 8, i + 8 + len).toString("latin1");
        if (buf[i] === 2) stderr += d; else stdout += d;
        i += 8 + len;
      }
      // The exit code once the exec has ended.
      let info;
      for (let k = 0; k < 50; k++) {
        info = (await api("GET", `/exec/${id}/json`)).json;
        if (info && info.Running === false) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      resolve({ stdout, stderr, error, exitCode: info?.ExitCode });
    });
    s.write(`POST /v1.41/exec/${id}/start HTTP/1.1\r\nHost: d\r\nContent-Type: application/json\r\nConnection: Upgrade\r\nUpgrade: tcp\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
  });
}

function tally(results) {
  const t = { runs: results.length, ok: 0, empty: 0, rejected: 0, exitWrong: 0, stderrFromEngine: 0, errors: {} };
  for (const r of results) {
    if (r.rejected) { t.rejected++; t.errors[r.rejected] = (t.errors[r.rejected] ?? 0) + 1; continue; }
    if (r.stdout === "out\n") t.ok++; else if (r.stdout === "") t.empty++;
    if (r.exitCode !== 3) t.exitWrong++;
    if (r.stderr) { t.stderrFromEngine++; const k = `stderr: ${r.stderr.replace(/@->\S+/, "@-><sock>").trim()}`; t.errors[k] = (t.errors[k] ?? 0) + 1; }
    if (r.error) { const k = `socket error after output: ${r.error}`; t.errors[k] = (t.errors[k] ?? 0) + 1; }
  }
  return t;
}

const client = new DockerSandboxClient();
const sandbox = await client.createSandbox({ image: IMAGE, workspace: { type: "ephemeral" }, network: { mode: "none" } });
const container = `anvia-sandbox-${sandbox.id}`;
try {
  const version = (await api("GET", "/version")).json;
  console.log(`engine: ${version.Components?.[0]?.Name ?? "?"} ${version.Version}, ${N} runs per size, load ${(await import("node:os")).loadavg().map((x) => x.toFixed(1)).join(" ")}`);
  for (const size of sizes) {
    const input = randomBytes(size);
    const lib = [], raw = [];
    for (let i = 0; i < N; i++) {
      try {
        const r = await sandbox.runtime.exec({ command: "sh", args: ["-c", "echo out; exit 3"], input, timeoutMs: 20_000 });
        lib.push({ stdout: Buffer.from(r.stdout).toString("latin1"), stderr: Buffer.from(r.stderr).toString("latin1"), exitCode: r.exitCode });
      } catch (e) {
        lib.push({ rejected: `${e.code}: ${e.message}` });
      }
      raw.push(await rawExec(container, input));
    }
    console.log(JSON.stringify({ size, library: tally(lib), raw: tally(raw) }));
  }
} finally {
  await sandbox.destroy();
}
