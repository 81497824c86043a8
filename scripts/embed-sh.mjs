#!/usr/bin/env node
// Embeds the scripts the addon runs inside sandboxes (src/<layer>/sh/*.sh) in C: each
// NAME.sh becomes src/<layer>/sh/NAME_sh.h, one `static const char NAME_SH[]` holding the
// script as `sh -c` runs it, its comment lines and blank lines left out (the shebang and
// the shellcheck directives are comments). A line `#@include OTHER.sh` puts OTHER.sh's
// script there; a file whose name starts with `_` is only included, never run alone: its
// header defines a macro of string literals that the includers' headers put in place.
// The embedded text ends without a newline (sh -c needs none, and the original's
// keep-alive command, kept byte for byte, has none).
//
// scripts/build.sh runs this before every build, so an edited script is what the next
// build embeds; the headers are committed, so that a build without build.sh (an install
// from the npm package, the fuzz and C-driver Makefiles) has them too.
//
//   node scripts/embed-sh.mjs            writes the headers that changed, removes orphans
//   node scripts/embed-sh.mjs --check    exit status 1 when a header is not current
//   node scripts/embed-sh.mjs --print F  prints the embedded text of script F
import { existsSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { basename, dirname, join, relative, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const src = join(root, "src");

// Every src/<layer>/sh/ folder.
function shDirs() {
  const out = [];
  for (const layer of readdirSync(src).sort()) {
    const dir = join(src, layer, "sh");
    if (existsSync(dir) && statSync(dir).isDirectory()) out.push(dir);
  }
  return out;
}

// The script of `file` as embedded: comment and blank lines out, includes in (its lines).
export function scriptOf(file, seen = []) {
  if (seen.includes(file)) throw new Error(`${relative(root, file)}: includes itself (${seen.map((f) => basename(f)).join(" -> ")})`);
  const lines = [];
  for (const line of readFileSync(file, "utf8").split("\n")) {
    const inc = /^#@include\s+(\S+)\s*$/.exec(line);
    if (inc) {
      const other = join(dirname(file), inc[1]);
      if (!existsSync(other)) throw new Error(`${relative(root, file)}: includes ${inc[1]}, which is not there`);
      lines.push(...scriptOf(other, [...seen, file]));
    } else if (line.trim() !== "" && !/^\s*#/.test(line)) {
      if (/\t/.test(line)) throw new Error(`${relative(root, file)}: a tab (indent with spaces)`);
      lines.push(line);
    }
  }
  return lines;
}

// A C string literal per line; `??` split so that no trigraph forms.
const cLiteral = (s) =>
  `"${s.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\?\?/g, '?\\?').replace(/[\x00-\x1f\x7f]/g, (c) => `\\${c.charCodeAt(0).toString(8).padStart(3, "0")}`)}"`;

// The embedded text of `file` as C: string literals, and for each `#@include OTHER.sh` the
// macro of OTHER's own header (`_OTHER_sh.h`, included), so an included script is written
// once. The returned includes are the headers to include.
function piecesOf(file) {
  const pieces = [];
  const includes = [];
  for (const line of readFileSync(file, "utf8").split("\n")) {
    const inc = /^#@include\s+(\S+)\s*$/.exec(line);
    if (inc) {
      if (!inc[1].startsWith("_")) throw new Error(`${relative(root, file)}: includes ${inc[1]}, whose name does not start with _`);
      scriptOf(join(dirname(file), inc[1]), [file]); // there, and no include cycle
      includes.push(basename(inc[1], ".sh"));
      pieces.push({ macro: macroOf(inc[1]) });
    } else if (line.trim() !== "" && !/^\s*#/.test(line)) {
      pieces.push({ line });
    }
  }
  return { pieces, includes };
}

const macroOf = (name) => `${basename(name, ".sh").replace(/^_+/, "").toUpperCase()}_SH_TEXT`;
const guardOf = (file, name) => `SBX_${basename(dirname(dirname(file))).toUpperCase()}_SH_${name.replace(/^_+/, "").toUpperCase()}_H`;

function headerOf(file) {
  const name = basename(file, ".sh");
  const included = name.startsWith("_");
  const layer = basename(dirname(dirname(file)));
  const { pieces, includes } = piecesOf(file);
  if (!pieces.some((p) => p.line !== undefined)) throw new Error(`${relative(root, file)}: no script in it`);
  // The whole text ends without a newline; an included part is always followed by more.
  if (pieces[pieces.length - 1].macro) throw new Error(`${relative(root, file)}: ends with an include`);
  const body = pieces
    .map((p, i) => (p.macro ? `    ${p.macro}` : `    ${cLiteral(included || i < pieces.length - 1 ? `${p.line}\n` : p.line)}`))
    .join(included ? " \\\n" : "\n");
  const includeLines = includes.map((n) => `#include "${layer}/sh/${n}_sh.h"\n`).join("");
  const what = included
    ? `Its lines, without
 * comment and blank lines, each with its newline, as ${macroOf(name)}: string literals
 * that the headers of the scripts including it put in place.`
    : `The script as \`sh -c\` runs it,
 * without its comment and blank lines.`;
  const decl = included ? `#define ${macroOf(name)} \\\n${body}` : `static const char ${name.toUpperCase()}_SH[] =\n${body};`;
  return `/*
 * ${name}_sh.h - generated by scripts/embed-sh.mjs from ${name}.sh (what it does, its
 * arguments and exit codes are said there): do not edit. ${what}
 */
#ifndef ${guardOf(file, name)}
#define ${guardOf(file, name)}

${includeLines ? `${includeLines}\n` : ""}${decl}

#endif
`;
}

function main() {
  const args = process.argv.slice(2);
  if (args[0] === "--print") {
    process.stdout.write(scriptOf(resolve(args[1])).join("\n"));
    return;
  }
  const check = args.includes("--check");
  const stale = [];
  for (const dir of shDirs()) {
    const scripts = readdirSync(dir).filter((n) => n.endsWith(".sh")).sort();
    const wanted = new Set();
    for (const name of scripts) {
      const out = join(dir, `${basename(name, ".sh")}_sh.h`);
      wanted.add(basename(out));
      const text = headerOf(join(dir, name));
      const current = existsSync(out) ? readFileSync(out, "utf8") : null;
      if (current === text) continue;
      stale.push(relative(root, out));
      if (!check) writeFileSync(out, text);
    }
    for (const name of readdirSync(dir)) {
      if (!name.endsWith("_sh.h") || wanted.has(name)) continue;
      stale.push(`${relative(root, join(dir, name))} (its script is gone)`);
      if (!check) rmSync(join(dir, name));
    }
  }
  if (check && stale.length) {
    console.error(`embed-sh: not current (run node scripts/embed-sh.mjs): ${stale.join(", ")}`);
    process.exit(1);
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) main();
