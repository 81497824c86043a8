// Container states as each engine words them: Podman's compatible API passes some of its
// own through ("stopping", "stopped", "configured", "initialized"). A sandbox in one of
// them is listed with the state Docker would report for it, never left out (issue 21: a
// sandbox Podman was still stopping vanished from listSandboxes).
import test from "node:test";
import assert from "node:assert/strict";
import { HANG_MS, DockerSandboxClient, startFakeEngine } from "../helpers/fake-engine.js";

const entry = (id, State) => ({
  Id: `x${id}`,
  Names: [`/anvia-sandbox-${id}`],
  Image: "img",
  Created: 1700000000,
  State,
  Status: "",
  Labels: { "anvia.sandbox.schema": "1", "anvia.sandbox.id": id, "anvia.sandbox.workdir": "/w" },
  Ports: [],
});

test("listSandboxes maps Docker's and Podman's states; an unknown state is left out", { timeout: HANG_MS }, async (t) => {
  const fake = await startFakeEngine();
  t.after(() => fake.close());
  const states = {
    exited: "stopped",
    created: "stopped",
    running: "running",
    paused: "paused",
    restarting: "restarting",
    removing: "removing",
    dead: "dead",
    stopping: "running",
    stopped: "stopped",
    configured: "stopped",
    initialized: "stopped",
  };
  const list = Object.keys(states).map((s) => entry(`s-${s}`, s));
  list.push(entry("s-unknown", "unknown"), entry("s-empty", ""));
  fake.route("GET", "/containers/json", { status: 200, json: list }, { times: 1 });
  const got = await new DockerSandboxClient({ host: fake.host }).listSandboxes();
  assert.deepEqual(
    Object.fromEntries(got.map((s) => [s.id.slice(2), s.state])),
    states,
  );
});
