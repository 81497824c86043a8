// The package's install script. npm runs it only where install scripts are allowed; the
// package works without it whenever the prebuilt binary fits (see lib/native.js). Here:
// nothing to do when the prebuilt binary for this platform loads; otherwise build the
// addon from source with node-gyp (the one npm ships), offline when the Node headers are
// installed (/usr/include/node).
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const prebuilt = join(root, "prebuilds", `${process.platform}-${process.arch}`, "anvia_sandbox.napi.node");

if (process.env.ANVIA_SANDBOX_FORCE_BUILD !== "1" && existsSync(prebuilt)) {
  try {
    createRequire(import.meta.url)(prebuilt);
    process.exit(0);
  } catch (error) {
    console.warn(`@anvia/sandbox: the prebuilt binary does not load here (${error.message.split("\n")[0]}); building from source.`);
  }
}

function nodeGyp() {
  const candidates = [
    process.env.npm_config_node_gyp,
    join(dirname(process.execPath), "..", "lib", "node_modules", "npm", "node_modules", "node-gyp", "bin", "node-gyp.js"),
    "/usr/lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js",
    "/usr/share/nodejs/node-gyp/bin/node-gyp.js",
  ];
  return candidates.find((c) => c && existsSync(c));
}

const gyp = nodeGyp();
if (gyp === undefined) {
  console.error("@anvia/sandbox: node-gyp was not found; it ships with npm. Reinstall npm or build by hand.");
  process.exit(1);
}
const args = [gyp, "rebuild", "--release", "--jobs=max"];
if (existsSync("/usr/include/node/node_api.h")) args.push("--nodedir=/usr");
const result = spawnSync(process.execPath, args, { cwd: root, stdio: "inherit" });
if (result.status !== 0) {
  console.error(
    "@anvia/sandbox: building the native addon failed. It needs a C compiler, make, python3 and the\n" +
      "development packages of libcurl, libarchive and jansson; on Debian and Ubuntu:\n" +
      "  apt-get install build-essential python3 libcurl4-openssl-dev libssl-dev libarchive-dev libjansson-dev",
  );
  process.exit(result.status ?? 1);
}
