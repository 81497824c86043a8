// A tcp endpoint with TLS, as DOCKER_HOST=tcp://... with DOCKER_TLS_VERIFY and
// DOCKER_CERT_PATH set it up: every request (libcurl) and every exec's upgraded
// connection (our own TLS session on memory BIOs) goes through TLS with a client
// certificate. The engine here listens on a unix socket only, so the test puts a
// TLS-terminating proxy in front of it (node:tls, certificates made with openssl), which
// also passes half-closes on, as dockerd's own TLS listener does.
import test from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync, copyFileSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import tls from "node:tls";
import { DockerSandboxClient, DockerSandboxError } from "../../lib/index.js";
import { baseOptions } from "../helpers/docker.js";

const enginePath = process.env.DOCKER_HOST?.startsWith("unix://") ? process.env.DOCKER_HOST.slice(7) : "/var/run/docker.sock";
const dir = mkdtempSync(path.join(os.tmpdir(), "anvia-tls-"));
const openssl = (...args) => execFileSync("openssl", args, { cwd: dir, stdio: ["ignore", "ignore", "pipe"] });

// A CA, a server certificate for localhost and 127.0.0.1, a client certificate; and a
// second CA that signed nothing we trust, for the verification failure.
function makeCa(name) {
  openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
    "-subj", `/CN=${name}`, "-keyout", `${name}-key.pem`, "-out", `${name}.pem`);
}
function makeCert(name, ca, ext) {
  writeFileSync(path.join(dir, `${name}.ext`), ext);
  openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-subj", `/CN=${name}`,
    "-keyout", `${name}-key.pem`, "-out", `${name}.csr`);
  openssl("x509", "-req", "-in", `${name}.csr`, "-CA", `${ca}.pem`, "-CAkey", `${ca}-key.pem`, "-CAcreateserial",
    "-days", "2", "-extfile", `${name}.ext`, "-out", `${name}.pem`);
}
makeCa("ca");
makeCa("otherca");
makeCert("server", "ca", "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n");
makeCert("client", "ca", "extendedKeyUsage=clientAuth\n");
makeCert("stranger", "otherca", "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n");
const read = (name) => readFileSync(path.join(dir, name));

// DOCKER_CERT_PATH layouts: the right CA with the client certificate, the right CA
// without one, and the wrong CA.
function certDir(name, files) {
  const d = path.join(dir, name);
  mkdirSync(d);
  for (const [to, from] of Object.entries(files)) copyFileSync(path.join(dir, from), path.join(d, to));
  return d;
}
const goodCerts = certDir("good", { "ca.pem": "ca.pem", "cert.pem": "client.pem", "key.pem": "client-key.pem" });
const noClientCert = certDir("noclient", { "ca.pem": "ca.pem" });
const wrongCa = certDir("wrongca", { "ca.pem": "otherca.pem", "cert.pem": "client.pem", "key.pem": "client-key.pem" });

const serverContext = (certName) => ({ key: read(`${certName}-key.pem`), cert: read(`${certName}.pem`) });

// The proxy: TLS with a required client certificate in front, the engine's socket behind.
let handshakes = 0;
const sockets = new Set();
// fault, for the fault cases: "cut" drops the next new connection before its handshake;
// "hang-up" closes the next connection whose first request is an exec start (an exec's
// own connection, after the handshake). Each applies once.
let fault = null;
// The exec connections open at the proxy, by request line.
const openExecs = new Set();
// Waits until no exec connection has been open for a quarter second (a failed exec may
// still end its command's tree with an exec of its own, in the background). One the
// library leaves open fails the test after 10 s.
async function settle() {
  const deadline = Date.now() + 10_000;
  for (let quiet = 0; quiet < 5; ) {
    assert.ok(Date.now() < deadline, `exec connections still open: ${[...openExecs].join(", ")}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
    quiet = openExecs.size === 0 ? quiet + 1 : 0;
  }
}
const isExecStart = (chunk) => /^POST \/v[\d.]+\/exec\/[^/]+\/start /.test(chunk.toString("latin1"));
const server = tls.createServer(
  { ...serverContext("server"), ca: read("ca.pem"), requestCert: true, rejectUnauthorized: true, allowHalfOpen: true },
  (client) => {
    handshakes++;
    const engine = net.connect({ path: enginePath, allowHalfOpen: true });
    for (const s of [client, engine]) {
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
      s.on("error", () => {
        client.destroy();
        engine.destroy();
      });
    }
    client.once("data", (first) => {
      if (isExecStart(first)) {
        const line = first.toString("latin1").split("\r\n")[0];
        openExecs.add(line);
        client.on("close", () => openExecs.delete(line));
      }
      if (fault === "hang-up" && isExecStart(first)) {
        fault = null;
        client.destroy();
        engine.destroy();
        return;
      }
      engine.write(first);
      client.pipe(engine);
    });
    engine.pipe(client);
    // When the engine ends its side (an exec's command is over), it reads no more stdin;
    // dockerd closes such a connection. Stop forwarding and drain, so stdin still in
    // flight (a command that never read its 3 MiB) cannot hold the proxy's socket open.
    engine.on("end", () => {
      client.unpipe(engine);
      engine.end();
      client.resume();
    });
  },
);
server.on("connection", (raw) => {
  if (fault !== "cut") return;
  fault = null;
  raw.destroy();
});
// TCP connections the proxy accepted, TLS or not (a client that fails before connecting
// adds none).
let connections = 0;
server.on("connection", () => connections++);
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const port = server.address().port;
// The same proxy for an engine that asks for no client certificate.
const openServer = tls.createServer({ ...serverContext("server"), allowHalfOpen: true }, server.listeners("secureConnection")[0]);
await new Promise((resolve) => openServer.listen(0, "127.0.0.1", resolve));
const openPort = openServer.address().port;

test.after(() => {
  for (const s of sockets) s.destroy();
  server.close();
  openServer.close();
  rmSync(dir, { recursive: true, force: true });
});

// A client resolves its endpoint (DOCKER_HOST, DOCKER_TLS_VERIFY, DOCKER_CERT_PATH, ...)
// at its first call, as the CLI does at each command: the environment is set for each
// client before that call, and restored when the file is done.
const TLS_VARS = ["DOCKER_TLS_VERIFY", "DOCKER_TLS", "DOCKER_CERT_PATH"];
const savedEnv = Object.fromEntries(TLS_VARS.map((k) => [k, process.env[k]]));
test.after(() => {
  for (const [k, v] of Object.entries(savedEnv)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
});
function tlsClient(host, env, transport) {
  for (const k of TLS_VARS) delete process.env[k];
  Object.assign(process.env, env);
  return new DockerSandboxClient(transport ? { host, transport } : { host });
}

const text = (bytes) => new TextDecoder().decode(bytes);

// Both transports: the engine's (each exec its own TLS connection) and the in-sandbox
// agent's (one long-lived exec connection, through the same TLS code).
for (const transport of ["engine", "agent"]) test(`everything works over TLS with a client certificate (transport ${transport}): requests, exec with stdin, streams, processes`, { timeout: 180_000 }, async (t) => {
  const client = tlsClient(`tcp://localhost:${port}`, { DOCKER_TLS_VERIFY: "1", DOCKER_CERT_PATH: goodCerts }, transport);
  const before = handshakes;
  const sandbox = await client.createSandbox(
    baseOptions({ files: { "hello.txt": "over TLS\n" }, runtime: { maxOutputBytes: 8 * 1024 * 1024 } }),
  );
  t.after(() => sandbox.destroy());
  const rt = sandbox.runtime;
  assert.equal(text(await rt.readFile({ path: "hello.txt" })), "over TLS\n");

  const echo = await rt.exec({ command: "sh", args: ["-c", "echo out; echo err >&2; exit 3"] });
  assert.deepEqual([echo.status, echo.exitCode, text(echo.stdout), text(echo.stderr)], ["exited", 3, "out\n", "err\n"]);

  // stdin: 3 MiB in, the count and a digest back; then a command that never reads it.
  const input = new Uint8Array(3 * 1024 * 1024).map((_, i) => (i * 31) & 0xff);
  const counted = await rt.exec({ command: "sh", args: ["-c", "wc -c | tr -d ' '"], input });
  assert.equal(text(counted.stdout), `${input.length}\n`);
  const ignored = await rt.exec({ command: "true", input });
  assert.equal(ignored.exitCode, 0);

  // ~5 MiB out through the TLS session, whole and in order.
  const big = await rt.exec({ command: "seq", args: ["1", "700000"], timeoutMs: 60_000 });
  const expected = Array.from({ length: 700000 }, (_, i) => `${i + 1}\n`).join("");
  assert.equal(big.stdoutTruncated, false);
  assert.equal(big.stdout.length, expected.length);
  assert.ok(text(big.stdout) === expected, "the output differs from seq's");

  const events = [];
  for await (const event of rt.execStream({ command: "sh", args: ["-c", "echo a; echo b >&2; echo c"] })) events.push(event);
  assert.deepEqual(events.filter((e) => e.type === "stdout").map((e) => text(e.data)).join(""), "a\nc\n");
  assert.equal(events.at(-1).type, "result");

  // A timeout still ends the command's whole tree (the kill runs as another exec).
  const slow = await rt.exec({ command: "sleep", args: ["30"], timeoutMs: 500 });
  assert.equal(slow.status, "timed_out");

  const proc = await rt.startProcess({ command: "sh", args: ["-c", "echo started; sleep 60"] });
  const stopped = await rt.stopProcess({ processId: proc.id, gracePeriodMs: 500 });
  assert.equal(stopped.status, "stopped");
  const ps = await rt.exec({ command: "ps", args: ["-eo", "args"] });
  assert.doesNotMatch(text(ps.stdout), /sleep (30|60)/);

  // Engine: each exec made its own TLS connection to the proxy (requests reuse libcurl's,
  // which may already be open), and closed it when done. Agent: one exec connection
  // carried every call, processes included.
  t.diagnostic(`TLS handshakes at the proxy: ${handshakes - before}`);
  if (transport === "engine") assert.ok(handshakes - before >= 6, `only ${handshakes - before} TLS connections were made`);
  else assert.ok(handshakes - before >= 1 && handshakes - before <= 3, `${handshakes - before} TLS connections were made`);
  // The agent's connection lives as long as the sandbox: destroying it ends it.
  if (transport === "agent") await sandbox.destroy();
  await settle();
});

test("without DOCKER_TLS_VERIFY (DOCKER_TLS only) an unknown server certificate is accepted", { timeout: 120_000 }, async (t) => {
  server.setSecureContext({ ...serverContext("stranger"), ca: read("ca.pem") });
  t.after(() => server.setSecureContext({ ...serverContext("server"), ca: read("ca.pem") }));
  const client = tlsClient(`tcp://127.0.0.1:${port}`, { DOCKER_TLS: "1", DOCKER_CERT_PATH: goodCerts });
  const sandbox = await client.createSandbox(baseOptions());
  t.after(() => sandbox.destroy());
  const r = await sandbox.runtime.exec({ command: "echo", args: ["unverified"], input: "x" });
  assert.equal(text(r.stdout), "unverified\n");
});

test("a server certificate from another CA is docker_unavailable, for requests and for exec connections", { timeout: 120_000 }, async (t) => {
  const client = tlsClient(`tcp://localhost:${port}`, { DOCKER_TLS_VERIFY: "1", DOCKER_CERT_PATH: wrongCa });
  await assert.rejects(client.pullImage({ image: "anvia-sandbox/bookworm:local" }), (e) => {
    assert.ok(e instanceof DockerSandboxError);
    assert.equal(e.code, "docker_unavailable");
    assert.match(e.message, new RegExp(`tcp://localhost:${port}`));
    return true;
  });

  // The exec connection verifies on its own: the requests go over a connection made while
  // the right certificate was served, the exec's new connection meets the wrong one.
  const good = tlsClient(`tcp://localhost:${port}`, { DOCKER_TLS_VERIFY: "1", DOCKER_CERT_PATH: goodCerts });
  const sandbox = await good.createSandbox(baseOptions());
  t.after(() => sandbox.destroy());
  server.setSecureContext({ ...serverContext("stranger"), ca: read("ca.pem") });
  try {
    await assert.rejects(sandbox.runtime.exec({ command: "true" }), (e) => {
      t.diagnostic(e.message);
      assert.equal(e.code, "docker_unavailable");
      assert.match(e.message, /certificate/i);
      return true;
    });
  } finally {
    server.setSecureContext({ ...serverContext("server"), ca: read("ca.pem") });
  }
  const after = await sandbox.runtime.exec({ command: "echo", args: ["again"] });
  assert.equal(text(after.stdout), "again\n");
});

test("an engine that requires a client certificate refuses a client without one", { timeout: 60_000 }, async () => {
  const before = handshakes;
  const client = tlsClient(`tcp://localhost:${port}`, { DOCKER_TLS_VERIFY: "1", DOCKER_CERT_PATH: noClientCert });
  await assert.rejects(client.pullImage({ image: "anvia-sandbox/bookworm:local" }), (e) => {
    assert.ok(e instanceof DockerSandboxError);
    assert.ok(["docker_unavailable", "docker_command_failed"].includes(e.code), e.code);
    return true;
  });
  assert.equal(handshakes, before, "a connection without a client certificate reached the engine");
});

test("a client certificate that cannot be loaded fails before any connection", { timeout: 60_000 }, async () => {
  const broken = certDir("broken", { "ca.pem": "ca.pem", "cert.pem": "client.pem" });
  writeFileSync(path.join(broken, "key.pem"), "not a key\n");
  const client = tlsClient(`tcp://localhost:${port}`, { DOCKER_TLS_VERIFY: "1", DOCKER_CERT_PATH: broken });
  await assert.rejects(client.pullImage({ image: "anvia-sandbox/bookworm:local" }), (e) => e.code === "docker_unavailable");
});

test("an exec connection cut during the TLS handshake, or hung up on after its request: clean errors, the next exec works", { timeout: 120_000 }, async (t) => {
  // The engine path's own exec connections (the agent's is tested where it dies).
  const client = tlsClient(`tcp://localhost:${port}`, { DOCKER_TLS_VERIFY: "1", DOCKER_CERT_PATH: goodCerts }, "engine");
  const sandbox = await client.createSandbox(baseOptions());
  t.after(() => sandbox.destroy());
  // libcurl's requests keep their warm connection; the exec's own connection is the next
  // new one, and meets the fault.
  fault = "cut";
  await assert.rejects(sandbox.runtime.exec({ command: "true" }), (e) => {
    t.diagnostic(e.message);
    assert.ok(e instanceof DockerSandboxError);
    assert.equal(e.code, "docker_unavailable");
    return true;
  });
  assert.equal(fault, null, "the fault was not met");
  await settle();
  fault = "hang-up";
  await assert.rejects(sandbox.runtime.exec({ command: "true", input: "x" }), (e) => {
    t.diagnostic(e.message);
    assert.ok(e instanceof DockerSandboxError);
    assert.equal(e.code, "docker_command_failed");
    return true;
  });
  assert.equal(fault, null, "the fault was not met");
  const after = await sandbox.runtime.exec({ command: "echo", args: ["fine"] });
  assert.equal(text(after.stdout), "fine\n");
});

// The TLS files are read at a client's first call, before any connection, by one check for
// both paths (libcurl's requests and the exec connections' own sessions): a CA file that
// cannot be read (when verifying), or a client certificate or key that exists but cannot
// be read, fails every call with one docker_unavailable error naming the file. Client
// certificate files that do not exist mean no client certificate, as for the docker CLI.
const badLayouts = [
  ["no ca.pem", { "cert.pem": "client.pem", "key.pem": "client-key.pem" }, {}, "ca.pem", /No such file or directory/],
  ["ca.pem is a directory", { "cert.pem": "client.pem", "key.pem": "client-key.pem" }, { "ca.pem": "dir" }, "ca.pem", /Is a directory/],
  ["ca.pem holds no certificate", { "cert.pem": "client.pem", "key.pem": "client-key.pem" }, { "ca.pem": "not a certificate\n" }, "ca.pem", /no PEM certificate/],
  ["cert.pem holds no certificate", { "ca.pem": "ca.pem", "key.pem": "client-key.pem" }, { "cert.pem": "not a certificate\n" }, "cert.pem", /no PEM certificate/],
  ["key.pem holds no key", { "ca.pem": "ca.pem", "cert.pem": "client.pem" }, { "key.pem": "not a key\n" }, "key.pem", /no PEM private key/],
  ["key.pem is a directory", { "ca.pem": "ca.pem", "cert.pem": "client.pem" }, { "key.pem": "dir" }, "key.pem", /Is a directory/],
  ["cert.pem without key.pem", { "ca.pem": "ca.pem", "cert.pem": "client.pem" }, {}, "key.pem", /No such file or directory/],
  ["key.pem without cert.pem", { "ca.pem": "ca.pem", "key.pem": "client-key.pem" }, {}, "cert.pem", /No such file or directory/],
  ["a key that is not the certificate's", { "ca.pem": "ca.pem", "cert.pem": "client.pem", "key.pem": "server-key.pem" }, {}, "key.pem", /does not match/],
];
let layouts = 0;
function layoutDir(copies, extra) {
  const d = certDir(`layout${layouts++}`, copies);
  for (const [name, content] of Object.entries(extra)) {
    if (content === "dir") mkdirSync(path.join(d, name));
    else writeFileSync(path.join(d, name), content);
  }
  return d;
}

for (const [name, copies, extra, file, why] of badLayouts) {
  test(`TLS files: ${name} fails every call before any connection, naming the file`, { timeout: 30_000 }, async () => {
    const d = layoutDir(copies, extra);
    const client = tlsClient(`tcp://localhost:${port}`, { DOCKER_TLS_VERIFY: "1", DOCKER_CERT_PATH: d });
    const before = connections;
    const messages = [];
    for (const call of [() => client.pullImage({ image: "anvia-sandbox/bookworm:local" }), () => client.createSandbox(baseOptions())]) {
      await assert.rejects(call(), (e) => {
        assert.ok(e instanceof DockerSandboxError);
        assert.equal(e.code, "docker_unavailable");
        assert.ok(e.message.includes(path.join(d, file)), e.message);
        assert.match(e.message, why);
        assert.match(e.message, new RegExp(`tcp://localhost:${port}`));
        messages.push(e.message);
        return true;
      });
    }
    assert.equal(messages[0], messages[1]);
    assert.equal(connections, before, "a connection was made");
  });
}

test("TLS files: without DOCKER_TLS_VERIFY the CA file is not read", { timeout: 120_000 }, async (t) => {
  const d = layoutDir({ "cert.pem": "client.pem", "key.pem": "client-key.pem" }, { "ca.pem": "dir" });
  const client = tlsClient(`tcp://localhost:${port}`, { DOCKER_TLS: "1", DOCKER_CERT_PATH: d });
  const sandbox = await client.createSandbox(baseOptions());
  t.after(() => sandbox.destroy());
  const r = await sandbox.runtime.exec({ command: "echo", args: ["unverified"], input: "x" });
  assert.equal(text(r.stdout), "unverified\n");
});

test("TLS files: no cert.pem and no key.pem means no client certificate, for requests and exec connections alike", { timeout: 120_000 }, async (t) => {
  const client = tlsClient(`tcp://localhost:${openPort}`, { DOCKER_TLS_VERIFY: "1", DOCKER_CERT_PATH: noClientCert });
  const sandbox = await client.createSandbox(baseOptions());
  t.after(() => sandbox.destroy());
  const r = await sandbox.runtime.exec({ command: "cat", input: "no client certificate\n" });
  assert.equal(text(r.stdout), "no client certificate\n");
});

test("TLS files: the exec connections use the CA the requests were checked with, never the system store", { timeout: 120_000 }, async (t) => {
  const good = tlsClient(`tcp://localhost:${port}`, { DOCKER_TLS_VERIFY: "1", DOCKER_CERT_PATH: goodCerts });
  const sandbox = await good.createSandbox(baseOptions());
  t.after(() => sandbox.destroy());
  // A second client resumes it (requests only), then its ca.pem goes away before its
  // first command: the command's connection verifies with the CA read at the first call.
  const d = layoutDir({ "ca.pem": "ca.pem", "cert.pem": "client.pem", "key.pem": "client-key.pem" }, {});
  const client = tlsClient(`tcp://localhost:${port}`, { DOCKER_TLS_VERIFY: "1", DOCKER_CERT_PATH: d });
  const resumed = await client.resumeSandbox({ id: sandbox.id });
  rmSync(path.join(d, "ca.pem"));
  const before = handshakes;
  const r = await resumed.runtime.exec({ command: "cat", input: "same CA\n" });
  assert.equal(text(r.stdout), "same CA\n");
  assert.ok(handshakes > before, "the command made no TLS connection of its own");
});
