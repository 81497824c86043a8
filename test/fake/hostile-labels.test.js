// Issue 23, item 5: an image's labels must not choose what destroy, prune and fork do.
// The engine merges an image's labels into its containers' (the fake's create below does
// the same), so an image built with `LABEL anvia.sandbox.fork.image=<victim>` made the
// container look like a fork owning the victim: pruneSandboxes and, after a resume,
// destroy() deleted it; `anvia.sandbox.fork.base-image` chose the image the fork's copy
// helper ran as root. Now every anvia.sandbox.* label is the package's (a create writes
// an empty value over any the image carries and the create does not set), the fork
// labels count only on a container made from the image they name (no image can carry its
// own id), and an image is deleted only when its own id label says it is the fork's (as
// volumes are). A create from an image without such labels is byte for byte as before.
import test from "node:test";
import assert from "node:assert/strict";
import { HANG_MS, DockerSandboxClient, startFakeEngine, answerFork } from "../helpers/fake-engine.js";

const T = { timeout: HANG_MS };
const base = { image: "hostile:latest", workspace: { type: "ephemeral" }, network: { mode: "none" } };

const HOSTILE = {
  "anvia.sandbox.fork.image": "sha256:victim",
  "anvia.sandbox.fork.parent": "someone",
  "anvia.sandbox.fork.base-image": "sha256:evil",
  "anvia.sandbox.lifetime.idle-timeout-ms": "5000",
  "anvia.sandbox.lifetime.max-lifetime-ms": "nope",
  "anvia.sandbox.id": "forged",
  "anvia.sandbox.workspace.volume": "victim-volume",
  "anvia.sandbox.made-up": "x",
  "org.example.ordinary": "kept",
};

/** A fake whose images carry `imageLabels` and whose create merges them as the engine does. */
async function engineWithImageLabels(t, imageLabels) {
  const fake = await startFakeEngine();
  t.after(() => fake.close());
  fake.route("GET", "/images/:name*/json", (req, res) =>
    res.json(200, { Id: "sha256:hostile", Config: { User: "", Labels: imageLabels } }),
  );
  fake.route("POST", "/containers/create", async (req, res, ctx) => {
    await ctx.next();
    const c = fake.state.containers.get(req.query.name);
    if (c) {
      c.Config.Labels = { ...imageLabels, ...c.Config.Labels };
      c.Image = "sha256:hostile";
    }
  });
  fake.route("DELETE", "/images/:name*", { status: 200, json: [{ Deleted: "x" }] });
  return fake;
}

const createBodies = (fake) => fake.seen("POST", "/containers/create").map((r) => r.json());

test("create: every anvia.sandbox.* label an image carries is written over; the rest of the body is as from a plain image", T, async (t) => {
  const fake = await engineWithImageLabels(t, HOSTILE);
  const client = new DockerSandboxClient({ host: fake.host });
  const sandbox = await client.createSandbox({ ...base, id: "victimizer" });
  const [body] = createBodies(fake);
  const labels = body.Labels;
  assert.equal(labels["anvia.sandbox.fork.image"], "");
  assert.equal(labels["anvia.sandbox.fork.parent"], "");
  assert.equal(labels["anvia.sandbox.fork.base-image"], "");
  assert.equal(labels["anvia.sandbox.lifetime.idle-timeout-ms"], "");
  assert.equal(labels["anvia.sandbox.lifetime.max-lifetime-ms"], "");
  assert.equal(labels["anvia.sandbox.made-up"], "");
  assert.equal(labels["anvia.sandbox.id"], "victimizer");
  assert.match(labels["anvia.sandbox.workspace.volume"], /^anvia-sandbox-victimizer-workspace-/);
  assert.equal("org.example.ordinary" in labels, false, "an image's own labels are the engine's to merge");

  // The same create from an image with no labels: the same body but for those empty ones.
  const plain = await startFakeEngine();
  t.after(() => plain.close());
  await new DockerSandboxClient({ host: plain.host }).createSandbox({ ...base, id: "victimizer" });
  const [plainBody] = createBodies(plain);
  const masked = Object.keys(HOSTILE).filter((k) => k.startsWith("anvia.sandbox.") && !(k in plainBody.Labels));
  const expected = structuredClone(plainBody);
  for (const k of masked) expected.Labels[k] = "";
  const volume = (b) => b.Labels["anvia.sandbox.workspace.volume"];
  expected.Labels["anvia.sandbox.workspace.volume"] = volume(body);
  expected.HostConfig.Mounts[0].Source = volume(body);
  assert.deepEqual(body, expected);
  assert.deepEqual(Object.keys(plainBody.Labels).filter((k) => !k.startsWith("anvia.sandbox.")), []);

  // The sandbox owns no image: destroy deletes none, before or after a resume.
  const resumed = await client.resumeSandbox({ id: "victimizer" });
  await resumed.runtime.exec({ command: "true" });
  assert.deepEqual(fake.seen("POST", /\/kill$/), [], "no idle limit: no activity signal");
  fake.route("GET", "/containers/json", (req, res) =>
    res.json(
      200,
      [...fake.state.containers.values()].map((c) => ({
        Names: [c.Name],
        Image: "hostile:latest",
        ImageID: c.Image,
        Created: 1700000000,
        State: "exited",
        Status: "Exited (0) 2 days ago",
        Labels: c.Config.Labels,
      })),
    ),
  );
  const [listed] = await client.listSandboxes();
  assert.equal(listed.forkOf, undefined);
  assert.equal(listed.lifetime, undefined);
  assert.deepEqual((await client.pruneSandboxes()).removed.map((s) => s.id), ["victimizer"]);
  await resumed.destroy();
  await sandbox.destroy();
  assert.deepEqual(fake.seen(undefined, "/images/").map((r) => `${r.method} ${r.path}`), ["GET /images/hostile:latest/json"]);
});

/** A container as the original (rc.10) or an earlier build made it from a hostile image: its labels hold the image's. */
function hostileContainer(fake, id, { image = "sha256:base", labels = {} } = {}) {
  const c = fake.addContainer(id, {
    running: true,
    labels: { "anvia.sandbox.fork.image": "sha256:victim", "anvia.sandbox.fork.base-image": "sha256:evil", ...labels },
  });
  c.Image = image;
  return c;
}

test("resume: fork labels on a container not made from the image they name own nothing; destroy deletes no image", T, async (t) => {
  const fake = await startFakeEngine();
  t.after(() => fake.close());
  fake.route("DELETE", "/images/:name*", { status: 200, json: [{ Deleted: "sha256:victim" }] });
  hostileContainer(fake, "old");
  const client = new DockerSandboxClient({ host: fake.host });
  const sandbox = await client.resumeSandbox({ id: "old" });
  await sandbox.destroy();
  assert.deepEqual(fake.seen(undefined, "/images/"), []);
});

test("resume: a fork's own image is deleted only when its id label says it is this fork's", T, async (t) => {
  for (const [owner, deleted] of [
    ["kid", true],
    ["someone-else", false],
    [undefined, false],
  ]) {
    const fake = await startFakeEngine();
    t.after(() => fake.close());
    fake.route("GET", "/images/:name*/json", (req, res) =>
      req.params.name === "sha256:own"
        ? res.json(200, { Id: "sha256:own", Config: { Labels: owner === undefined ? null : { "anvia.sandbox.id": owner } } })
        : res.json(404, { message: "No such image" }),
    );
    fake.route("DELETE", "/images/:name*", { status: 200, json: [{ Deleted: "sha256:own" }] });
    hostileContainer(fake, "kid", { image: "sha256:own", labels: { "anvia.sandbox.fork.image": "sha256:own" } });
    const sandbox = await new DockerSandboxClient({ host: fake.host }).resumeSandbox({ id: "kid" });
    await sandbox.destroy();
    assert.equal(fake.seen("GET", "/images/sha256:own/json").length, 1, String(owner));
    assert.equal(fake.seen("DELETE", "/images/sha256:own").length, deleted ? 1 : 0, String(owner));
  }
});

test("fork: the copy helper runs the parent's image, not one a forged base-image label names", T, async (t) => {
  const fake = await startFakeEngine();
  t.after(() => fake.close());
  answerFork(fake);
  hostileContainer(fake, "par");
  const sandbox = await new DockerSandboxClient({ host: fake.host }).resumeSandbox({ id: "par" });
  const fork = await sandbox.fork({ id: "par-kid" });
  const helper = fake.seen("POST", "/containers/create").map((r) => r.json()).find((b) => b.HostConfig?.CapAdd?.includes("DAC_OVERRIDE"));
  assert.equal(helper.Image, "sha256:base");
  const body = fake.seen("POST", "/containers/create").find((r) => r.query.name === "anvia-sandbox-par-kid").json();
  assert.equal(body.Labels["anvia.sandbox.fork.base-image"], "sha256:base");
  assert.equal(body.Labels["anvia.sandbox.fork.image"], "sha256:committed");
  assert.equal(fork.id, "par-kid");
});

test("pruneSandboxes: an image goes only when the container was made from it and its id label is the sandbox's", T, async (t) => {
  const fake = await startFakeEngine();
  t.after(() => fake.close());
  const entry = (id, imageId, forkImage) => ({
    Names: [`/anvia-sandbox-${id}`],
    Image: "img",
    ImageID: imageId,
    Created: 1700000000,
    State: "exited",
    Status: "Exited (0) 2 days ago",
    Labels: {
      "anvia.sandbox.schema": "1",
      "anvia.sandbox.id": id,
      "anvia.sandbox.workspace.type": "docker-volume",
      "anvia.sandbox.workspace.volume": `vol-${id}`,
      "anvia.sandbox.fork.image": forkImage,
      "anvia.sandbox.fork.parent": "p",
    },
  });
  fake.route("GET", "/containers/json", {
    status: 200,
    json: [
      entry("forged", "sha256:hostile", "sha256:victim"), // an image's label: not its own image
      entry("liar", "sha256:liar", "sha256:liar"), // its own image, labelled for another sandbox
      entry("real", "sha256:real", "real"), // Podman's ids may lack the prefix
    ],
  });
  const images = { "sha256:liar": "someone-else", real: "real", "sha256:victim": "forged" };
  fake.route("GET", "/images/:name*/json", (req, res) =>
    req.params.name in images
      ? res.json(200, { Id: req.params.name, Config: { Labels: { "anvia.sandbox.id": images[req.params.name] } } })
      : res.json(404, { message: "No such image" }),
  );
  fake.route("DELETE", "/images/:name*", { status: 200, json: [] });
  for (const id of ["forged", "liar", "real"]) fake.addContainer(id);
  const client = new DockerSandboxClient({ host: fake.host });
  const listed = await client.listSandboxes();
  assert.deepEqual(listed.map((s) => [s.id, s.forkOf]), [["forged", undefined], ["liar", "p"], ["real", "p"]]);
  const result = await client.pruneSandboxes();
  assert.deepEqual(result.removed.map((s) => s.id), ["forged", "liar", "real"]);
  assert.deepEqual(fake.seen(undefined, "/images/").map((r) => `${r.method} ${r.path}`), [
    "GET /images/sha256:liar/json",
    "GET /images/real/json",
    "DELETE /images/real",
  ]);
});
