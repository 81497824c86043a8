// Which engine the suites run against (issue 15), for tests whose expectations differ per
// engine. Set by scripts/test-engine.sh; a plain `node --test` runs against Docker.
//   ANVIA_TEST_ENGINE=docker   the local Docker engine (DOCKER_HOST unix:// or the default)
//   ANVIA_TEST_ENGINE=podman   Podman's Docker-compatible API (scripts/podman.sh)
//   ANVIA_TEST_ENGINE=ssh      Docker reached through ssh://, i.e. `ssh HOST docker system
//                              dial-stdio` (scripts/sshd.sh); the remote engine is the local
//                              Docker, so test/helpers/docker.js checks it on its socket
//
//   import { ENGINE, DOCKER_HOST, isPodman, skipUnless } from "../helpers/engines.js";
//   test("...", { skip: skipOn("podman", "Podman reports caps differently") }, async () => {});
//   assert.equal(image, imageName(IMAGE));   // "localhost/..." on Podman
export const ENGINES = ["docker", "podman", "ssh"];

export const ENGINE = (() => {
  const value = process.env.ANVIA_TEST_ENGINE ?? "docker";
  if (!ENGINES.includes(value)) {
    throw new Error(`ANVIA_TEST_ENGINE must be one of ${ENGINES.join(", ")} (got ${value})`);
  }
  return value;
})();

// The endpoint the library is pointed at (what `new DockerSandboxClient()` reads).
export const DOCKER_HOST = process.env.DOCKER_HOST ?? "unix:///var/run/docker.sock";

export const isDocker = ENGINE === "docker";
export const isPodman = ENGINE === "podman";
export const isSsh = ENGINE === "ssh";

// The engine's implementation behind the endpoint: Docker for docker and ssh.
export const IMPLEMENTATION = isPodman ? "podman" : "docker";

if (isSsh && !DOCKER_HOST.startsWith("ssh://")) {
  throw new Error(`ANVIA_TEST_ENGINE=ssh needs DOCKER_HOST=ssh://... (got ${DOCKER_HOST}); see scripts/sshd.sh env`);
}
if (isPodman && !DOCKER_HOST.startsWith("unix://")) {
  throw new Error(`ANVIA_TEST_ENGINE=podman needs DOCKER_HOST=unix://... (got ${DOCKER_HOST}); see scripts/podman.sh env`);
}

// For node:test's `skip` / `todo` options: a reason string on the named engines, else false.
export function skipOn(engines, reason) {
  const list = Array.isArray(engines) ? engines : [engines];
  return list.includes(ENGINE) || list.includes(IMPLEMENTATION) ? `${ENGINE}: ${reason}` : false;
}
export function skipUnless(engines, reason) {
  const list = Array.isArray(engines) ? engines : [engines];
  return list.includes(ENGINE) || list.includes(IMPLEMENTATION) ? false : `${ENGINE}: ${reason}`;
}

// The name an engine's inspection reports for a locally loaded image: Podman qualifies
// short names with localhost/ ("anvia-sandbox/bookworm:local" -> "localhost/anvia-...").
export function imageName(name) {
  if (IMPLEMENTATION !== "podman") return name;
  const first = name.split("/")[0];
  const qualified = name.includes("/") && (first.includes(".") || first.includes(":") || first === "localhost");
  return qualified ? name : `localhost/${name}`;
}
