// Endpoint resolution as the docker CLI does it: explicit host, DOCKER_HOST (unix, tcp,
// TLS), DOCKER_CONTEXT, currentContext in config.json, the default socket.
import test from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtempSync, mkdirSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { native } from "../helpers/native.js";

const resolve = (host, env = {}) => native.resolveEndpoint(host, env);

function makeConfig(t) {
  const dir = mkdtempSync(join(tmpdir(), "anvia-endpoint-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const addContext = (name, host, { tls = false, skipVerify = false } = {}) => {
    const hash = createHash("sha256").update(name).digest("hex");
    mkdirSync(join(dir, "contexts", "meta", hash), { recursive: true });
    writeFileSync(
      join(dir, "contexts", "meta", hash, "meta.json"),
      JSON.stringify({ Name: name, Metadata: {}, Endpoints: { docker: { Host: host, SkipTLSVerify: skipVerify } } }),
    );
    if (tls) mkdirSync(join(dir, "contexts", "tls", hash, "docker"), { recursive: true });
    return hash;
  };
  return { dir, addContext };
}

test("default socket when nothing is configured", () => {
  const ep = resolve(undefined, { HOME: "/nonexistent-home" });
  assert.equal(ep.kind, "unix");
  assert.equal(ep.socketPath, "/var/run/docker.sock");
  assert.equal(ep.display, "unix:///var/run/docker.sock");
  assert.equal(ep.source, "default");
});

test("explicit host wins over DOCKER_HOST and contexts", () => {
  const ep = resolve("unix:///tmp/x.sock", { DOCKER_HOST: "tcp://1.2.3.4:2375", DOCKER_CONTEXT: "remote" });
  assert.equal(ep.socketPath, "/tmp/x.sock");
  assert.equal(ep.source, "host option");
});

test("DOCKER_HOST: unix and tcp, default ports, IPv6, TLS from DOCKER_TLS_VERIFY and DOCKER_CERT_PATH", () => {
  assert.equal(resolve(undefined, { DOCKER_HOST: "unix:///run/other.sock" }).socketPath, "/run/other.sock");
  let ep = resolve(undefined, { DOCKER_HOST: "tcp://docker.example:2375" });
  assert.deepEqual([ep.kind, ep.host, ep.port, ep.tls, ep.display], ["tcp", "docker.example", 2375, false, "tcp://docker.example:2375"]);
  ep = resolve(undefined, { DOCKER_HOST: "tcp://10.0.0.1" });
  assert.equal(ep.port, 2375);
  ep = resolve(undefined, { DOCKER_HOST: "tcp://10.0.0.1", DOCKER_TLS_VERIFY: "1", DOCKER_CERT_PATH: "/certs" });
  assert.deepEqual([ep.port, ep.tls, ep.tlsVerify, ep.caFile, ep.certFile, ep.keyFile], [2376, true, true, "/certs/ca.pem", "/certs/cert.pem", "/certs/key.pem"]);
  ep = resolve(undefined, { DOCKER_HOST: "tcp://h:1", DOCKER_TLS: "1", HOME: "/home/u" });
  assert.deepEqual([ep.tls, ep.tlsVerify, ep.caFile], [true, false, "/home/u/.docker/ca.pem"]);
  ep = resolve(undefined, { DOCKER_HOST: "tcp://[::1]:2375" });
  assert.deepEqual([ep.host, ep.display], ["::1", "tcp://[::1]:2375"]);
  ep = resolve(undefined, { DOCKER_HOST: "https://h:9" });
  assert.deepEqual([ep.tls, ep.tlsVerify], [true, true]);
});

test("ssh:// as the docker CLI reads it: user, port, the remote socket path; no password, query or fragment", (t) => {
  let ep = resolve(undefined, { DOCKER_HOST: "ssh://user@box.example:2222" });
  assert.deepEqual([ep.kind, ep.user, ep.host, ep.port, ep.display, ep.source], ["ssh", "user", "box.example", 2222, "ssh://user@box.example:2222", "DOCKER_HOST"]);
  assert.equal(ep.remoteSocketPath, undefined);
  ep = resolve("ssh://box");
  assert.deepEqual([ep.kind, ep.user, ep.host, ep.port, ep.display], ["ssh", undefined, "box", undefined, "ssh://box"]);
  ep = resolve(undefined, { DOCKER_HOST: "ssh://me@[fd00::1]:22/run/user/1000/podman/podman.sock" });
  assert.deepEqual([ep.host, ep.port, ep.remoteSocketPath, ep.display], ["fd00::1", 22, "/run/user/1000/podman/podman.sock", "ssh://me@[fd00::1]:22/run/user/1000/podman/podman.sock"]);
  // A trailing slash alone is no path; percent-escapes in the user and the path are decoded.
  assert.equal(resolve("ssh://box/").remoteSocketPath, undefined);
  assert.equal(resolve("ssh://a%2Db@box/x%20y.sock").user, "a-b");
  assert.equal(resolve("ssh://a%2Db@box/x%20y.sock").remoteSocketPath, "/x y.sock");
  // TLS settings do not apply to ssh.
  assert.equal(resolve(undefined, { DOCKER_HOST: "ssh://box", DOCKER_TLS_VERIFY: "1" }).tls, false);
  for (const bad of ["ssh://u:pw@box", "ssh://box?x=1", "ssh://box#f", "ssh://", "ssh://@box", "ssh://-oProxyCommand=x", "ssh://-l@box", "ssh://box:0", "ssh://box:x", "ssh://bo x"]) {
    assert.throws(() => resolve(bad), TypeError, bad);
    assert.throws(() => resolve(undefined, { DOCKER_HOST: bad }), (e) => e.code === "docker_unavailable", bad);
  }
  // A context whose endpoint is ssh.
  const { dir, addContext } = makeConfig(t);
  addContext("remote-ssh", "ssh://deploy@build.example");
  ep = resolve(undefined, { DOCKER_CONFIG: dir, DOCKER_CONTEXT: "remote-ssh" });
  assert.deepEqual([ep.kind, ep.user, ep.host, ep.source], ["ssh", "deploy", "build.example", "context remote-ssh"]);
});

test("an ssh:// user name holds only what ssh and POSIX user names allow", () => {
  // Issue 23, item 9: only a leading '-' was refused.
  for (const user of ["deploy", "a.b_c-d", "User9", "_svc", "host$", "a%2Db"]) {
    assert.equal(resolve(`ssh://${user}@box`).user, decodeURIComponent(user), user);
  }
  for (const user of ["a%20b", "a%22b", "a%27b", "a;b", "%24", "a$b", "$", "a%25b", "a%40b", "%E2%82%ACuro", "a*b", "a%2Fb", "-x", "%2Dx"]) {
    assert.throws(
      () => resolve(`ssh://${user}@box`),
      (e) =>
        e instanceof TypeError &&
        e.message === `Docker host ssh URL has an invalid user name (letters, digits, '.', '_' and '-', not first, and '$' only last): ssh://${user}@box`,
      user,
    );
  }
});

test("a malformed DOCKER_HOST is docker_unavailable", () => {
  assert.throws(() => resolve(undefined, { DOCKER_HOST: "ftp://user@box" }), (e) => e.code === "docker_unavailable");
  assert.throws(() => resolve(undefined, { DOCKER_HOST: "ssh://user:pw@box" }), (e) => e.code === "docker_unavailable");
  assert.throws(() => resolve(undefined, { DOCKER_HOST: "tcp://h:notaport" }), (e) => e.code === "docker_unavailable");
});

test("DOCKER_CONTEXT and currentContext select a context directory by the sha256 of its name", (t) => {
  const { dir, addContext } = makeConfig(t);
  addContext("remote", "tcp://ctx.example:2376", { tls: true });
  addContext("local-sock", "unix:///run/ctx.sock");
  let ep = resolve(undefined, { DOCKER_CONFIG: dir, DOCKER_CONTEXT: "remote" });
  const hash = createHash("sha256").update("remote").digest("hex");
  assert.deepEqual([ep.host, ep.port, ep.tls, ep.tlsVerify, ep.source], ["ctx.example", 2376, true, true, "context remote"]);
  assert.equal(ep.caFile, join(dir, "contexts", "tls", hash, "docker", "ca.pem"));
  writeFileSync(join(dir, "config.json"), JSON.stringify({ currentContext: "local-sock" }));
  ep = resolve(undefined, { DOCKER_CONFIG: dir });
  assert.equal(ep.socketPath, "/run/ctx.sock");
  // DOCKER_HOST beats the context; DOCKER_CONTEXT beats currentContext.
  assert.equal(resolve(undefined, { DOCKER_CONFIG: dir, DOCKER_HOST: "unix:///a.sock" }).socketPath, "/a.sock");
  assert.equal(resolve(undefined, { DOCKER_CONFIG: dir, DOCKER_CONTEXT: "remote" }).host, "ctx.example");
  // "default" means the default socket.
  assert.equal(resolve(undefined, { DOCKER_CONFIG: dir, DOCKER_CONTEXT: "default" }).socketPath, "/var/run/docker.sock");
});

test("the config directory defaults to ~/.docker", (t) => {
  const home = mkdtempSync(join(tmpdir(), "anvia-home-"));
  t.after(() => rmSync(home, { recursive: true, force: true }));
  const hash = createHash("sha256").update("h").digest("hex");
  mkdirSync(join(home, ".docker", "contexts", "meta", hash), { recursive: true });
  writeFileSync(join(home, ".docker", "contexts", "meta", hash, "meta.json"), JSON.stringify({ Endpoints: { docker: { Host: "unix:///home.sock" } } }));
  writeFileSync(join(home, ".docker", "config.json"), JSON.stringify({ currentContext: "h" }));
  assert.equal(resolve(undefined, { HOME: home }).socketPath, "/home.sock");
});

test("a missing or broken context is docker_unavailable naming it", (t) => {
  const { dir, addContext } = makeConfig(t);
  assert.throws(() => resolve(undefined, { DOCKER_CONFIG: dir, DOCKER_CONTEXT: "ghost" }), (e) => e.code === "docker_unavailable" && /ghost/.test(e.message));
  addContext("weird", "ftp://x");
  assert.throws(() => resolve(undefined, { DOCKER_CONFIG: dir, DOCKER_CONTEXT: "weird" }), (e) => e.code === "docker_unavailable");
});
