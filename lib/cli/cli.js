// `anvia-sandbox create-image`: reads the flags (or asks, through the interactive wizard
// when a terminal is attached and the flags do not say enough), writes the generated
// build context into its directory under the manifest's rules, and builds the image
// through the Engine API (./build.js). Every message, the help text and the exit codes
// (0 done, 1 failed, 130 cancelled) are the original CLI's.
//
// runCli(argv, cwd, io, dependencies) is the whole command; bin/anvia-sandbox.js calls
// it. `io` receives the output (log/warn/error lines, stdout/stderr bytes of the build);
// `dependencies` replaces the terminal check, the package version, the wizard and the
// build, as the tests need.
import { lstat, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import {
  FEATURES,
  GENERATED_FILE_NAMES,
  NAME_HINT,
  RUNTIMES,
  isGeneratedManifest,
  isValidName,
  renderImageContext,
  resolveImageSpec,
  unknownFeatureMessage,
  unknownRuntimeMessage,
  unpinnedPackages,
} from "./image-context.js";

export const HELP_TEXT = `Usage:
  pnpm dlx @anvia/sandbox create-image [options]

Options:
  --name <slug>                  Image profile name
  --runtime <node|bun|python>    Runtime to include; repeatable
  --feature <artifacts|playwright>
                                 Curated feature to include; repeatable
  --apt <package>                Additional apt package; repeatable
  --npm <package[@version]>      Additional npm package; repeatable
  --uv <requirement>             Additional Python package installed with uv; repeatable
  --tag <tag>                    Local image tag
  --output <directory>           Generated context directory
  --node-version <version>       Override Node.js version
  --pnpm-version <version>       Override pnpm version
  --bun-version <version>        Override Bun version
  --python-version <version>     Override Python version
  --uv-version <version>         Override uv version
  --playwright-version <version> Override Playwright and browser image version
  --docker-path <path>           Docker CLI path (default: docker)
  --no-build                     Generate files without building
  --dry-run                      Print generated files without writing or building
  --force                        Regenerate a context previously created by this CLI
  -h, --help                     Show this help

Examples:
  pnpm dlx @anvia/sandbox create-image
  pnpm dlx @anvia/sandbox create-image --name reports --feature artifacts
  pnpm dlx @anvia/sandbox create-image --name browser --runtime bun --feature playwright`;

// The wizard's suggestions for each package manager.
const APT_CHOICES = [
  { value: "git", label: "Git", hint: "Source control and repository operations" },
  { value: "curl", label: "curl", hint: "HTTP downloads and API debugging" },
  { value: "jq", label: "jq", hint: "JSON processing from the shell" },
  { value: "ffmpeg", label: "FFmpeg", hint: "Audio and video processing" },
  { value: "imagemagick", label: "ImageMagick", hint: "Image conversion and editing" },
  { value: "poppler-utils", label: "Poppler tools", hint: "PDF inspection and conversion" },
  { value: "libreoffice", label: "LibreOffice", hint: "Large; office document conversion" },
];
const NPM_CHOICES = [
  { value: "pdfkit@0.19.1", label: "PDFKit", hint: "Generate PDF documents" },
  { value: "sharp@0.35.3", label: "Sharp", hint: "Resize and transform images" },
  { value: "exceljs@4.4.0", label: "ExcelJS", hint: "Read and write Excel workbooks" },
  { value: "docx@9.7.1", label: "docx", hint: "Generate Word documents" },
  { value: "pptxgenjs@4.0.1", label: "PptxGenJS", hint: "Generate PowerPoint presentations" },
];
const UV_CHOICES = [
  { value: "httpx==0.28.1", label: "HTTPX", hint: "Modern HTTP client" },
  { value: "beautifulsoup4==4.15.0", label: "Beautiful Soup", hint: "HTML and XML parsing" },
  { value: "scipy==1.18.0", label: "SciPy", hint: "Scientific computing" },
  { value: "scikit-learn==1.9.0", label: "scikit-learn", hint: "Machine learning utilities" },
  { value: "polars==1.42.1", label: "Polars", hint: "Fast dataframe processing" },
];
const CAPABILITY_CHOICES = [
  { value: "node", label: "Node.js", hint: "Includes npm and pnpm" },
  { value: "bun", label: "Bun", hint: "Includes bun and bunx" },
  { value: "python", label: "Python", hint: "Includes uv and uvx" },
  { value: "artifacts", label: "Reporting and artifacts", hint: "Adds Python automatically" },
  { value: "playwright", label: "Playwright + Chromium", hint: "Adds Node.js automatically" },
];

const VERSION_FLAGS = {
  "--node-version": "node",
  "--pnpm-version": "pnpm",
  "--bun-version": "bun",
  "--python-version": "python",
  "--uv-version": "uv",
  "--playwright-version": "playwright",
};
const LIST_FLAGS = { "--apt": "apt", "--npm": "npm", "--uv": "uv" };
const SWITCHES = new Set(["--no-build", "--dry-run", "--force"]);

export const defaultIo = {
  log: console.log,
  warn: console.warn,
  error: console.error,
  stdout: (chunk) => process.stdout.write(chunk),
  stderr: (chunk) => process.stderr.write(chunk),
};

const messageOf = (error) => (error instanceof Error ? error.message : "Unknown sandbox CLI error");

function present(value, message) {
  if (value === undefined || value === "") throw new Error(message);
  return value;
}

export function parseArgs(argv) {
  const o = {
    command: undefined,
    runtimes: [],
    features: [],
    apt: [],
    npm: [],
    uv: [],
    versions: {},
    dockerPath: "docker",
    build: true,
    buildExplicit: false,
    dryRun: false,
    force: false,
    help: false,
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? "";
    if (!arg.startsWith("-")) {
      if (o.command !== undefined) throw new Error(`Unexpected argument: ${arg}`);
      o.command = arg;
      continue;
    }
    const eq = arg.indexOf("=");
    const flag = eq === -1 ? arg : arg.slice(0, eq);
    const inline = eq === -1 ? undefined : arg.slice(eq + 1);
    // An inline value is taken as it is (even empty); a separate one must be non-empty.
    const value = () => inline ?? present(argv[++i], `${flag} requires a value.`);
    if (SWITCHES.has(flag) && inline !== undefined) throw new Error(`${flag} does not accept a value.`);
    if (flag === "-h" || flag === "--help") o.help = true;
    else if (flag === "--name") o.name = value();
    else if (flag === "--tag") o.tag = value();
    else if (flag === "--output") o.output = value();
    else if (flag === "--docker-path") o.dockerPath = value();
    else if (flag === "--runtime") {
      const r = value();
      if (!RUNTIMES.includes(r)) throw new Error(unknownRuntimeMessage(r));
      o.runtimes.push(r);
    } else if (flag === "--feature") {
      const f = value();
      if (!FEATURES.includes(f)) throw new Error(unknownFeatureMessage(f));
      o.features.push(f);
    } else if (Object.hasOwn(LIST_FLAGS, flag)) o[LIST_FLAGS[flag]].push(value());
    else if (Object.hasOwn(VERSION_FLAGS, flag)) o.versions[VERSION_FLAGS[flag]] = value();
    else if (flag === "--no-build") {
      o.build = false;
      o.buildExplicit = true;
    } else if (flag === "--dry-run") o.dryRun = true;
    else if (flag === "--force") o.force = true;
    else throw new Error(`Unknown option: ${flag}`);
  }
  return o;
}

const needsWizard = (o) => o.name === undefined || (o.runtimes.length === 0 && o.features.length === 0 && o.npm.length === 0 && o.uv.length === 0);

/** The command: resolves to the exit code (0, 1, or 130 when the wizard was cancelled). */
export async function runCli(argv = process.argv.slice(2), cwd = process.cwd(), io = defaultIo, dependencies = {}) {
  let o;
  try {
    o = parseArgs(argv);
  } catch (error) {
    io.error(messageOf(error));
    io.log(HELP_TEXT);
    return 1;
  }
  if (o.help || o.command === undefined) {
    io.log(HELP_TEXT);
    return 0;
  }
  if (o.command !== "create-image") {
    io.error(`Unknown command: ${o.command}`);
    io.log(HELP_TEXT);
    return 1;
  }

  try {
    if (needsWizard(o)) {
      const tty = dependencies.isTTY ?? (process.stdin.isTTY && process.stdout.isTTY);
      if (!tty) throw new Error("Non-interactive create-image requires --name and at least one --runtime or --feature.");
      const a = await (dependencies.prompt ?? runWizard)(o);
      if (a === undefined) return 130;
      // The answers replace the flags; a tag or directory left unanswered keeps the flag's.
      const { name, runtimes, features, apt, npm, uv, build } = a;
      o = { ...o, name, runtimes, features, apt, npm, uv, build, buildExplicit: true };
      if (a.tag !== undefined) o.tag = a.tag;
      if (a.output !== undefined) o.output = a.output;
    }

    const input = {
      name: present(o.name, "Image name is required."),
      runtimes: o.runtimes,
      features: o.features,
      packages: { apt: o.apt, npm: o.npm, uv: o.uv },
      versions: o.versions,
    };
    if (o.tag !== undefined) input.tag = o.tag;
    const spec = resolveImageSpec(input);
    const version = dependencies.packageVersion ?? (await ownVersion());
    const context = renderImageContext(spec, version);
    const outputPath = path.resolve(cwd, o.output ?? path.join(".anvia", "sandbox-images", spec.name));
    const shown = displayPath(cwd, outputPath);
    const unpinned = unpinnedPackages(spec);
    if (unpinned.length > 0) io.warn(`Unpinned custom packages may change on rebuild: ${unpinned.join(", ")}`);

    if (o.dryRun) {
      io.log(`Would create ${shown}`);
      for (const [name, text] of context.files) {
        io.log("");
        io.log(`--- ${name}`);
        io.log(text.trimEnd());
      }
      io.log("");
      io.log(`Would build ${spec.tag}`);
      return 0;
    }

    await writeContext(outputPath, context, o.force);
    io.log(`Created ${shown}`);
    if (!o.build) {
      io.log("");
      io.log("Build later:");
      io.log(`  ${[o.dockerPath, "build", "--tag", spec.tag, shown].map(shellWord).join(" ")}`);
      printSnippet(spec.tag, io);
      return 0;
    }
    const build = dependencies.buildImage ?? (await import("./build.js")).buildImage;
    await build({ contextPath: outputPath, tag: spec.tag, dockerPath: o.dockerPath, files: context.manifest.generatedFiles, io });
    io.log(`Built ${spec.tag}`);
    printSnippet(spec.tag, io);
    return 0;
  } catch (error) {
    io.error(messageOf(error));
    return 1;
  }
}

function printSnippet(tag, io) {
  for (const line of [
    "",
    "Use with @anvia/sandbox:",
    '  import { DockerSandboxClient } from "@anvia/sandbox";',
    "",
    "  const client = new DockerSandboxClient();",
    "  await using sandbox = await client.createSandbox({",
    `    image: ${JSON.stringify(tag)},`,
    '    workspace: { type: "ephemeral" },',
    '    network: { mode: "none" },',
    "  });",
  ])
    io.log(line);
}

// Relative to the working directory when inside it, else absolute.
function displayPath(cwd, target) {
  const rel = path.relative(cwd, target);
  return rel !== "" && !rel.startsWith("..") ? rel : target;
}

function shellWord(word) {
  return /^[a-zA-Z0-9_./:@+-]+$/.test(word) ? word : `'${word.replaceAll("'", `'"'"'`)}'`;
}

async function ownVersion() {
  const pkg = JSON.parse(await readFile(new URL("../../package.json", import.meta.url), "utf8"));
  return typeof pkg.version === "string" ? pkg.version : "unknown";
}

async function lstatOrNone(target) {
  try {
    return await lstat(target);
  } catch (error) {
    if (error?.code === "ENOENT") return undefined;
    throw error;
  }
}

async function refuseSymlink(target) {
  if ((await lstatOrNone(target))?.isSymbolicLink()) throw new Error(`Refusing to replace symlink: ${target}`);
}

// The manifest of an earlier run, or undefined when the directory has none. A manifest
// that is a link, not a file, not JSON or not ours is refused.
async function previousManifest(dir) {
  const file = path.join(dir, "anvia-sandbox.json");
  const st = await lstatOrNone(file);
  if (st === undefined) return undefined;
  if (st.isSymbolicLink() || !st.isFile()) throw new Error(`Invalid generated manifest: ${file}`);
  let value;
  try {
    value = JSON.parse(await readFile(file, "utf8"));
  } catch (error) {
    throw new Error(`Unable to read generated manifest: ${file}`, { cause: error });
  }
  if (!isGeneratedManifest(value)) throw new Error(`Output manifest is not recognized as an @anvia/sandbox manifest: ${file}`);
  return value;
}

// Writes the context. The directory is made when missing; an existing one must be a real
// directory holding a manifest of ours and --force must be given: then the files that
// manifest lists are removed first (files it does not list are left alone). No link is
// ever written through or replaced.
async function writeContext(dir, context, force) {
  const st = await lstatOrNone(dir);
  if (st?.isSymbolicLink()) throw new Error(`Refusing to write through symlink: ${dir}`);
  if (st === undefined) {
    await mkdir(dir, { recursive: true });
  } else {
    if (!st.isDirectory()) throw new Error(`Output path is not a directory: ${dir}`);
    const previous = await previousManifest(dir);
    if (previous === undefined) throw new Error(`Output directory already exists but was not generated by @anvia/sandbox: ${dir}`);
    if (!force) throw new Error("Output directory already exists. Use --force to regenerate it.");
    for (const name of previous.generatedFiles) {
      const target = path.join(dir, name);
      await refuseSymlink(target);
      if ((await lstatOrNone(target)) !== undefined) await rm(target);
    }
  }
  for (const [name, text] of context.files) {
    if (!GENERATED_FILE_NAMES.has(name)) throw new Error(`Unexpected generated filename: ${name}`);
    const target = path.join(dir, name);
    await refuseSymlink(target);
    await writeFile(target, text, "utf8");
  }
  if (!context.files.has("anvia-sandbox.json") || context.manifest.generatedFiles.length !== context.files.size) {
    throw new Error("Generated image context manifest is inconsistent.");
  }
}

// ---- the wizard ---------------------------------------------------------------------

// Asks for what the flags left open, with @clack/prompts (loaded only now). Resolves to
// the answers, or undefined when cancelled (Ctrl-C, Escape, or "no" at the last step).
async function runWizard(o) {
  const [major = 0, minor = 0] = process.versions.node.split(".").map(Number);
  if (major < 20 || (major === 20 && minor < 12)) throw new Error("The interactive create-image wizard requires Node.js 20.12 or newer.");
  const p = await import("@clack/prompts");
  const cancelled = () => {
    p.cancel("Image creation cancelled.");
    return undefined;
  };
  p.intro("Create an Anvia sandbox image");

  const name = o.name ?? (await p.text({ message: "Image name", placeholder: "reports", validate: (v) => (isValidName(v ?? "") ? undefined : NAME_HINT) }));
  if (p.isCancel(name)) return cancelled();
  mustBe(name, "string", "Image name");

  let runtimes = [...o.runtimes];
  let features = [...o.features];
  if (runtimes.length === 0 && features.length === 0 && o.npm.length === 0 && o.uv.length === 0) {
    const picked = await p.multiselect({ message: "Select runtimes and features", required: true, options: CAPABILITY_CHOICES });
    if (p.isCancel(picked)) return cancelled();
    runtimes = picked.filter((v) => RUNTIMES.includes(v));
    features = picked.filter((v) => FEATURES.includes(v));
  }

  // Each package list: the suggestions, with those already given on the command line
  // pre-selected; the answer is what was given plus what was picked.
  const lists = {};
  for (const [key, message, choices] of [
    ["apt", "Select common apt tools (optional)", APT_CHOICES],
    ["npm", "Select common npm libraries (optional)", NPM_CHOICES],
    ["uv", "Select common Python libraries with uv (optional)", UV_CHOICES],
  ]) {
    const offered = new Set(choices.map((c) => c.value));
    const picked = await p.multiselect({ message, required: false, options: [...choices], initialValues: o[key].filter((v) => offered.has(v)) });
    if (p.isCancel(picked)) return cancelled();
    lists[key] = [...new Set([...o[key], ...picked])];
  }

  const tag = o.tag ?? (await p.text({ message: "Docker image tag", initialValue: `anvia-sandbox-${name}:latest` }));
  if (p.isCancel(tag)) return cancelled();
  const output = o.output ?? (await p.text({ message: "Generated source directory", initialValue: path.join(".anvia", "sandbox-images", name) }));
  if (p.isCancel(output)) return cancelled();
  const build = o.buildExplicit ? o.build : await p.confirm({ message: "Build the image now?", initialValue: true });
  if (p.isCancel(build)) return cancelled();
  const go = await p.confirm({ message: "Create this sandbox image?", initialValue: true });
  if (p.isCancel(go) || !go) return cancelled();
  p.outro("Configuration ready");
  return {
    name,
    runtimes,
    features,
    ...lists,
    tag: mustBe(tag, "string", "Docker image tag"),
    output: mustBe(output, "string", "Generated source directory"),
    build: mustBe(build, "boolean", "Build selection"),
  };
}

function mustBe(value, type, what) {
  if (typeof value !== type) throw new TypeError(`${what} must be a ${type}.`);
  return value;
}
