// An image that carries the package's reserved labels (issue 23, item 5) on a real engine,
// Docker's and Podman's: the engine merges an image's labels into its containers', so an
// image built with `LABEL anvia.sandbox.fork.image=<another image's id>` once made
// destroy() and pruneSandboxes delete that other image. The images here are made by the
// engine's own commit (POST /commit with a LABEL change), as `docker build` would make them.
// What must hold: every reserved label is the package's on the container, destroy, fork
// and prune delete no image but a fork's own, and the victim survives all of them.
import test, { after, before } from "node:test";
import assert from "node:assert/strict";
import { DockerSandboxClient } from "../../lib/index.js";
import { BUSYBOX_IMAGE, api, baseOptions, inspectContainer, uniqueId } from "../helpers/docker.js";

const T = { timeout: 180_000 };
const client = new DockerSandboxClient();
const tag = uniqueId("hostile").toLowerCase();
const repo = (name) => `anvia-test/${name}`;
let victim, hostile, helper;

/** An image committed from `helper` with `changes` (Dockerfile lines), as repo:tag. */
async function commit(name, changes = []) {
  const q = new URLSearchParams({ container: helper, repo: repo(name), tag });
  for (const c of changes) q.append("changes", c);
  const r = await api("POST", `/commit?${q}`, {}); // Podman needs a body: the config, unchanged
  assert.equal(r.status, 201, r.text);
  return r.json.Id;
}

const imageExists = async (id) => (await api("GET", `/images/${encodeURIComponent(id)}/json`)).status === 200;

before(async () => {
  const c = await api("POST", `/containers/create?name=${tag}-helper`, { Image: BUSYBOX_IMAGE, Cmd: ["true"] });
  assert.equal(c.status, 201, c.text);
  helper = c.json.Id;
  victim = await commit("victim");
  // Every reserved label the package reads back, pointing at the victim.
  hostile = await commit("image", [
    `LABEL anvia.sandbox.fork.image=${victim}`,
    `LABEL anvia.sandbox.fork.base-image=${victim}`,
    `LABEL anvia.sandbox.fork.parent=someone-else`,
    `LABEL anvia.sandbox.id=not-this-sandbox`,
  ]);
});
after(async () => {
  if (helper) await api("DELETE", `/containers/${helper}?force=1`);
  for (const id of [hostile, victim]) if (id) await api("DELETE", `/images/${id}?force=1`);
});

test("a sandbox of an image carrying reserved labels: the labels are the package's, and destroy deletes no image", T, async () => {
  const sandbox = await client.createSandbox(baseOptions({ image: `${repo("image")}:${tag}` }));
  const labels = (await inspectContainer(`anvia-sandbox-${sandbox.id}`)).Config.Labels;
  assert.equal(labels["anvia.sandbox.id"], sandbox.id);
  for (const k of ["anvia.sandbox.fork.image", "anvia.sandbox.fork.base-image", "anvia.sandbox.fork.parent"])
    assert.ok(labels[k] === undefined || labels[k] === "", `${k} is ${labels[k]}`);
  await sandbox.stop();
  // A resume reads the labels back: the image's values choose nothing.
  const resumed = await client.resumeSandbox({ id: sandbox.id });
  await resumed.destroy();
  assert.ok(await imageExists(victim), "the victim image survives destroy()");
  assert.ok(await imageExists(hostile), "the sandbox's own image is not deleted by its destroy()");
});

test("a fork of such a sandbox: its copy runs the parent's image, its destroy deletes only its own image", T, async () => {
  const parent = await client.createSandbox(baseOptions({ image: `${repo("image")}:${tag}` }));
  try {
    const fork = await parent.fork({ id: uniqueId("fork") });
    const f = await inspectContainer(`anvia-sandbox-${fork.id}`);
    const own = f.Image;
    assert.notEqual(own, victim, "the fork runs an image of its own");
    assert.equal(f.Config.Labels["anvia.sandbox.fork.parent"], parent.id);
    // Docker's inspect says sha256:<hex>, Podman's either form: the same id.
    const bare = (id) => String(id).replace(/^sha256:/, "");
    assert.equal(bare(f.Config.Labels["anvia.sandbox.fork.image"]), bare(own), "the fork's image label is its own image (a forged one is written over)");
    await fork.destroy();
    assert.ok(!(await imageExists(own)), "the fork's own image is deleted with it");
    assert.ok(await imageExists(victim), "the victim image survives the fork's destroy()");
  } finally {
    await parent.destroy();
  }
  assert.ok(await imageExists(victim));
});

test("pruneSandboxes of a stopped sandbox of such an image deletes no image", T, async () => {
  const team = uniqueId("prune");
  const sandbox = await client.createSandbox(baseOptions({ image: `${repo("image")}:${tag}`, labels: { team } }));
  await sandbox.stop();
  const result = await client.pruneSandboxes({ labels: { team } });
  assert.deepEqual(
    result.removed.map((r) => r.id),
    [sandbox.id],
  );
  assert.ok(await imageExists(victim), "the victim image survives pruneSandboxes");
  assert.ok(await imageExists(hostile));
});
