// The image profile of `anvia-sandbox create-image` and the build context made from it:
// the input is checked and completed into a spec (runtimes a feature or a package needs
// are added, duplicates dropped, defaults filled in), and the spec is rendered into the
// files of a Docker build context (Dockerfile, .dockerignore, pyproject.toml,
// package.json) plus the anvia-sandbox.json manifest that lets a later run recognise and
// regenerate the directory. Pure: nothing here reads or writes files.
//
// The files are the original package's, byte for byte, for the same input and generator
// version (test/unit/cli-generate.test.js holds them against outputs captured from it).

export const RUNTIMES = ["node", "bun", "python"];
export const FEATURES = ["artifacts", "playwright"];
// Every file a context may hold; nothing else is ever written or removed.
export const GENERATED_FILE_NAMES = new Set([".dockerignore", "Dockerfile", "anvia-sandbox.json", "package.json", "pyproject.toml"]);

export const DEFAULT_VERSIONS = Object.freeze({
  node: "24.18.0",
  pnpm: "11.0.4",
  bun: "1.3.14",
  python: "3.13.14",
  uv: "0.11.29",
  playwright: "1.61.0",
});

// What the "artifacts" feature installs with uv (charts, PDFs, spreadsheets, documents).
export const ARTIFACT_PYTHON_PACKAGES = Object.freeze([
  "matplotlib==3.11.1",
  "seaborn==0.13.2",
  "Pillow==12.3.0",
  "ReportLab==5.0.0",
  "pypdf==6.14.2",
  "pandas==3.0.3",
  "openpyxl==3.1.5",
  "XlsxWriter==3.2.9",
  "python-docx==1.2.0",
]);

const BASE_APT_PACKAGES = ["bash", "ca-certificates", "findutils", "libstdc++6", "procps"];
const NAME_RE = /^[a-z0-9][a-z0-9-]{0,62}$/;

export const NAME_HINT = "Use 1-63 lowercase letters, numbers, or hyphens.";

export function isValidName(name) {
  return NAME_RE.test(name);
}

export function unknownRuntimeMessage(value) {
  return `Unknown runtime: ${value}. Expected node, bun, or python.`;
}

export function unknownFeatureMessage(value) {
  return `Unknown feature: ${value}. Expected artifacts or playwright.`;
}

const dedupe = (values) => [...new Set(values)];
// Below U+0020, judged on the first UTF-16 unit of each code point.
const hasControl = (value) => [...value].some((ch) => ch.charCodeAt(0) < 32);
const quote = (value) => `'${value.replaceAll("'", `'"'"'`)}'`;

/** Splits "name@version" ("@scope/name@version"); a bare name is "latest". Throws on a bad spec. */
export function parseNpmSpec(spec) {
  if (/\s/.test(spec) || hasControl(spec)) throw new Error(`Invalid npm package spec: ${spec}`);
  const at = spec.startsWith("@") ? spec.indexOf("@", spec.indexOf("/") + 1) : spec.indexOf("@");
  const name = at === -1 ? spec : spec.slice(0, at);
  const version = at === -1 ? "latest" : spec.slice(at + 1);
  if (version === "" || !/^(?:@[a-z0-9][a-z0-9._-]*\/)?[a-z0-9][a-z0-9._-]*$/i.test(name)) {
    throw new Error(`Invalid npm package spec: ${spec}`);
  }
  if (/[\s'"`$;&|<>\\]/.test(version) || hasControl(version)) throw new Error(`Invalid npm package version in: ${spec}`);
  return { name, version };
}

function checkInput(name, runtimes, features, packages) {
  if (!isValidName(name)) {
    throw new Error("Image name must be 1-63 lowercase letters, numbers, or hyphens and cannot start with a hyphen.");
  }
  for (const r of runtimes) if (!RUNTIMES.includes(r)) throw new Error(unknownRuntimeMessage(r));
  for (const f of features) if (!FEATURES.includes(f)) throw new Error(unknownFeatureMessage(f));
  for (const p of packages.apt) if (!/^[a-zA-Z0-9][a-zA-Z0-9.+:~=-]*$/.test(p)) throw new Error(`Invalid apt package: ${p}`);
  for (const p of packages.npm) parseNpmSpec(p);
  for (const p of packages.uv) {
    if (p === "" || p.startsWith("-") || hasControl(p)) throw new Error(`Invalid uv package requirement: ${p}`);
  }
}

/**
 * The complete spec of an input { name, tag?, runtimes?, features?, packages?: { apt, npm,
 * uv }, versions? }: runtimes in the order node, bun, python, with python added for the
 * artifacts feature or any uv package, node for playwright, and node for npm packages
 * when neither node nor bun was chosen. Throws an Error with the original's message.
 */
export function resolveImageSpec(input) {
  const packages = {
    apt: dedupe(input.packages?.apt ?? []),
    npm: dedupe(input.packages?.npm ?? []),
    uv: dedupe(input.packages?.uv ?? []),
  };
  const runtimes = new Set(input.runtimes ?? []);
  const features = new Set(input.features ?? []);
  checkInput(input.name, runtimes, features, packages);

  if (features.has("artifacts") || packages.uv.length > 0) runtimes.add("python");
  if (features.has("playwright")) runtimes.add("node");
  if (packages.npm.length > 0 && !runtimes.has("node") && !runtimes.has("bun")) runtimes.add("node");
  if (runtimes.size === 0) throw new Error("Select at least one runtime or feature.");

  const versions = { ...DEFAULT_VERSIONS, ...input.versions };
  for (const [what, version] of Object.entries(versions)) {
    if (!/^[a-zA-Z0-9][a-zA-Z0-9._-]*$/.test(version)) throw new Error(`Invalid ${what} version: ${version}`);
  }
  const tag = input.tag ?? `anvia-sandbox-${input.name}:latest`;
  if (tag === "" || tag.startsWith("-") || tag.includes("@") || /\s/.test(tag) || hasControl(tag)) {
    throw new Error(`Invalid Docker image tag: ${tag}`);
  }
  return {
    name: input.name,
    tag,
    runtimes: RUNTIMES.filter((r) => runtimes.has(r)),
    features: FEATURES.filter((f) => features.has(f)),
    packages,
    versions,
  };
}

/** Custom packages whose version is not pinned (an npm package without a version, a uv requirement without ==, === or a URL). */
export function unpinnedPackages(spec) {
  return [
    ...spec.packages.npm.filter((p) => parseNpmSpec(p).version === "latest"),
    ...spec.packages.uv.filter((p) => !/===|==|@\s*https?:/i.test(p)),
  ];
}

// The npm dependencies of the image: playwright for the feature, then the custom
// packages, sorted by name (a name given twice is an error).
function npmDependencies(spec) {
  const deps = new Map();
  if (spec.features.includes("playwright")) deps.set("playwright", spec.versions.playwright);
  for (const p of spec.packages.npm) {
    const { name, version } = parseNpmSpec(p);
    if (deps.has(name)) throw new Error(`Duplicate npm package: ${name}`);
    deps.set(name, version);
  }
  return new Map([...deps].sort(([a], [b]) => a.localeCompare(b)));
}

function dockerfile(spec, pythonRequirements, npmDeps) {
  const has = (r) => spec.runtimes.includes(r);
  const playwright = spec.features.includes("playwright");
  // The stage the image starts from: Playwright's image, else the first of python,
  // node, bun; the other runtimes are copied into it.
  const final = playwright ? null : has("python") ? "python" : has("node") ? "node" : "bun";
  const copied = (r) => has(r) && final !== r;
  const v = spec.versions;
  const out = ["# Generated by @anvia/sandbox. Edit the manifest and regenerate instead of editing this file."];

  if (has("node")) out.push(`FROM node:${v.node}-bookworm-slim AS node-runtime`);
  if (has("python")) out.push(`FROM python:${v.python}-slim-bookworm AS python-runtime`);
  if (has("bun")) out.push(`FROM oven/bun:${v.bun}-slim AS bun-runtime`);
  if (has("python")) out.push(`FROM ghcr.io/astral-sh/uv:${v.uv} AS uv-runtime`);
  out.push(playwright ? `FROM mcr.microsoft.com/playwright:v${v.playwright}-noble AS final` : `FROM ${final}-runtime AS final`);
  out.push("", "USER root");

  if (copied("python")) out.push("COPY --from=python-runtime /usr/local/ /usr/local/");
  if (copied("node")) {
    out.push("COPY --from=node-runtime /usr/local/bin/ /usr/local/bin/");
    out.push("COPY --from=node-runtime /usr/local/lib/node_modules/ /usr/local/lib/node_modules/");
  }
  if (copied("bun")) {
    out.push("COPY --from=bun-runtime /usr/local/bin/bun /usr/local/bin/bun");
    out.push("RUN ln -sf /usr/local/bin/bun /usr/local/bin/bunx");
  }
  if (has("python")) out.push("COPY --from=uv-runtime /uv /uvx /usr/local/bin/");

  const apt = [...BASE_APT_PACKAGES];
  if (spec.features.includes("artifacts")) apt.push("fonts-dejavu-core");
  apt.push(...spec.packages.apt);
  out.push(
    "",
    "RUN apt-get update \\",
    `  && apt-get install -y --no-install-recommends ${dedupe(apt).sort().map(quote).join(" ")} \\`,
    "  && rm -rf /var/lib/apt/lists/*",
  );

  if (has("node")) {
    out.push("", `RUN npm install --global ${quote(`pnpm@${v.pnpm}`)} --no-audit --no-fund \\`, "  && npm cache clean --force");
  }
  if (pythonRequirements.length > 0) {
    out.push(
      "",
      "COPY pyproject.toml /opt/anvia-python/pyproject.toml",
      "RUN cd /opt/anvia-python \\",
      "  && uv sync --no-dev --no-cache --no-install-project",
      "ENV VIRTUAL_ENV=/opt/anvia-python/.venv",
      "ENV PATH=/opt/anvia-python/.venv/bin:$PATH",
    );
  }
  if (npmDeps.size > 0) {
    out.push("", "COPY package.json /opt/anvia-js/package.json");
    out.push(
      ...(has("node")
        ? [
            "RUN npm install --prefix /opt/anvia-js --omit=dev --no-audit --no-fund \\",
            "  && ln -s /opt/anvia-js/node_modules /node_modules \\",
            "  && npm cache clean --force",
          ]
        : ["RUN cd /opt/anvia-js \\", "  && bun install --production --no-save \\", "  && ln -s /opt/anvia-js/node_modules /node_modules"]),
      "ENV NODE_PATH=/opt/anvia-js/node_modules",
      "ENV PATH=/opt/anvia-js/node_modules/.bin:$PATH",
    );
  }

  out.push("");
  if (playwright) out.push("ENV PLAYWRIGHT_BROWSERS_PATH=/ms-playwright");
  out.push(
    "RUN mkdir -p /workspace",
    "WORKDIR /workspace",
    "ENTRYPOINT []",
    `CMD ["sh", "-c", "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done"]`,
  );
  return `${out.join("\n")}\n`;
}

function dockerignore(withPython, withNpm) {
  const lines = ["**", "!Dockerfile", "!.dockerignore", "!anvia-sandbox.json"];
  if (withPython) lines.push("!pyproject.toml");
  if (withNpm) lines.push("!package.json");
  return `${lines.join("\n")}\n`;
}

function pyproject(spec, requirements) {
  // As the original: a version without a minor part reads ">=3.undefined".
  const [major, minor] = spec.versions.python.split(".");
  const lines = [
    "[project]",
    `name = ${JSON.stringify(`anvia-sandbox-${spec.name}`)}`,
    'version = "0.0.0"',
    `requires-python = ${JSON.stringify(`>=${major}.${minor}`)}`,
    "dependencies = [",
    ...requirements.map((r) => `  ${JSON.stringify(r)},`),
    "]",
  ];
  return `${lines.join("\n")}\n`;
}

const json = (value) => `${JSON.stringify(value, null, 2)}\n`;

/**
 * The build context of a spec: { manifest, files } where files maps each file name to its
 * text, in the order the original writes them (Dockerfile, .dockerignore, pyproject.toml,
 * package.json, anvia-sandbox.json last). `generatorVersion` goes into the manifest.
 */
export function renderImageContext(spec, generatorVersion) {
  const python = spec.features.includes("artifacts") ? [...ARTIFACT_PYTHON_PACKAGES, ...spec.packages.uv] : [...spec.packages.uv];
  const npm = npmDependencies(spec);
  const files = new Map();
  files.set("Dockerfile", dockerfile(spec, python, npm));
  files.set(".dockerignore", dockerignore(python.length > 0, npm.size > 0));
  if (python.length > 0) files.set("pyproject.toml", pyproject(spec, dedupe(python)));
  if (npm.size > 0) {
    files.set("package.json", json({ private: true, description: `Generated dependencies for ${spec.name}`, dependencies: Object.fromEntries(npm) }));
  }
  const manifest = {
    schemaVersion: 1,
    generatedBy: { package: "@anvia/sandbox", version: generatorVersion },
    ...spec,
    generatedFiles: [...files.keys(), "anvia-sandbox.json"].sort(),
  };
  files.set("anvia-sandbox.json", json(manifest));
  return { manifest, files };
}

/** A manifest read back from disk is ours when it says so and names only files we write. */
export function isGeneratedManifest(value) {
  if (typeof value !== "object" || value === null) return false;
  const files = value.generatedFiles;
  return (
    value.schemaVersion === 1 &&
    value.generatedBy?.package === "@anvia/sandbox" &&
    Array.isArray(files) &&
    files.every((f) => typeof f === "string" && GENERATED_FILE_NAMES.has(f))
  );
}
