// Names in URLs (issue 13, item 8). A volume or image name a caller gives is checked by
// the engine's own rules before any request; every name that goes into a URL is escaped
// byte by byte outside RFC 3986's unreserved set, so no name can add a path segment, and
// "." or ".." cannot be collapsed by libcurl into another endpoint. The fake engine
// records every request as it arrived (`fullPath`, before its own decoding).
import test from "node:test";
import assert from "node:assert/strict";
import { HANG_MS, DockerSandboxClient, expectCode, fakeSandbox, startFakeEngine } from "../helpers/fake-engine.js";

const T = { timeout: HANG_MS }; // a hang fails after minutes; no test races a timer
const base = { image: "fake:latest", workspace: { type: "ephemeral" }, network: { mode: "none" } };

async function client(t) {
  const fake = await startFakeEngine();
  t.after(() => fake.close());
  return { fake, client: new DockerSandboxClient({ host: fake.host }) };
}

test("a volume name outside Docker's pattern is refused before any request", T, async (t) => {
  const { fake, client: c } = await client(t);
  fake.addContainer("victim");
  for (const name of ["../containers/anvia-sandbox-victim", "..", ".", "a/b", "a%2Fb", "a b", "a", "-lead", "x?y", "ü1"]) {
    await assert.rejects(c.createSandbox({ ...base, workspace: { type: "docker-volume", name } }), {
      name: "TypeError",
      message: "workspace.name is not a valid Docker volume name.",
    });
  }
  // The original's own messages stay for what it refused.
  await assert.rejects(c.createSandbox({ ...base, workspace: { type: "docker-volume", name: "" } }), {
    message: "workspace.name must be a non-empty string.",
  });
  assert.equal(fake.requests.length, 0, "no request was made");
  assert.ok(fake.state.containers.has("anvia-sandbox-victim"));
});

test("a valid volume name reaches /volumes/<name> unchanged", T, async (t) => {
  const { fake, client: c } = await client(t);
  fake.state.volumes.set("my_vol.1-2", { Name: "my_vol.1-2" });
  await c.createSandbox({ ...base, id: "vol1", workspace: { type: "docker-volume", name: "my_vol.1-2" } });
  const checks = fake.requests.filter((r) => r.method === "GET" && r.path.startsWith("/volumes/"));
  assert.deepEqual(
    checks.map((r) => r.fullPath),
    ["/v1.41/volumes/my_vol.1-2"],
  );
});

test("an image name outside the reference grammar fails as an image the engine does not have, before any request", T, async (t) => {
  const { fake, client: c } = await client(t);
  fake.addContainer("victim");
  for (const image of ["../containers/anvia-sandbox-victim", "../../containers/anvia-sandbox-victim/json?", "..", "a/../b", "Ubuntu", "a b", "x:", "x@sha256:short", "a%2F..%2Fb"]) {
    await expectCode(c.createSandbox({ ...base, image }), "image_not_found", new RegExp(`^Docker image is not available locally: ${image.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`));
  }
  assert.equal(fake.requests.length, 0, "no request was made");
  assert.ok(fake.state.containers.has("anvia-sandbox-victim"));
});

test("an image reference with a registry, port, tag and digest reaches /images/<name>/json as one segment", T, async (t) => {
  const { fake, client: c } = await client(t);
  const image = "registry.local:5000/team/app:1.0@sha256:" + "0".repeat(64);
  await c.createSandbox({ ...base, id: "img1", image });
  const inspect = fake.requests.find((r) => r.method === "GET" && r.path.startsWith("/images/"));
  assert.equal(inspect.path, `/images/${image}/json`);
  assert.equal(inspect.fullPath, `/v1.41/images/${encodeURIComponent(image)}/json`);
  const created = fake.state.containers.get("anvia-sandbox-img1");
  assert.equal(created.Config.Image, image);
});

test("a hostile sandbox id never reaches the engine", T, async (t) => {
  const { fake, client: c } = await client(t);
  for (const id of ["../victim", "..", "a/../../x"]) {
    await assert.rejects(c.resumeSandbox({ id }), TypeError);
    await assert.rejects(c.createSandbox({ ...base, id }), TypeError);
  }
  assert.equal(fake.requests.length, 0);
});

test("an exec id the engine answers with cannot send the exec's requests elsewhere", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t, { id: "hx" });
  fake.addContainer("victim", { running: true });
  for (const hostile of ["../containers/anvia-sandbox-victim", ".."]) {
    const before = fake.requests.length;
    fake.route("POST", "/containers/:name/exec", { status: 201, json: { Id: hostile } }, { times: 1 });
    await runtime.exec({ command: "true" }).catch(() => undefined);
    const later = fake.requests.slice(before + 1); // after the exec create
    assert.ok(later.length > 0, "the exec went on");
    for (const r of later) {
      if (r.method === "POST" && r.path === "/containers/anvia-sandbox-hx/exec") continue; // a kill-tree exec
      // As sent: under /exec/, and no "." or ".." segment an HTTP stack would collapse.
      assert.ok(r.target.startsWith("/v1.41/exec/"), `${r.method} ${r.target} stays under /exec/`);
      assert.ok(!r.target.split("?")[0].split("/").some((seg) => seg === "." || seg === ".."), `${r.method} ${r.target} has no dot segment`);
    }
  }
  assert.equal(fake.state.containers.get("anvia-sandbox-victim").State.Running, true);
});

test("a volume named by a sandbox's labels is removed at /volumes/<name>, never elsewhere", T, async (t) => {
  const fake = await startFakeEngine();
  t.after(() => fake.close());
  fake.addContainer("victim");
  fake.addContainer("hv", { labels: { "anvia.sandbox.workspace.volume": "../containers/anvia-sandbox-victim" } });
  const c = new DockerSandboxClient({ host: fake.host });
  const sandbox = await c.resumeSandbox({ id: "hv" });
  await sandbox.destroy().catch(() => undefined);
  const deletes = fake.requests.filter((x) => x.method === "DELETE");
  assert.ok(deletes.some((r) => r.target.startsWith("/v1.41/volumes/")), "the volume was removed at /volumes/");
  for (const r of deletes) assert.ok(!r.target.startsWith("/v1.41/containers/anvia-sandbox-victim"), `${r.method} ${r.target}`);
  assert.ok(fake.state.containers.has("anvia-sandbox-victim"), "the other container is still there");
});
