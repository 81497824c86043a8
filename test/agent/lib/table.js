// The agent protocol's table, read from src/codec/agent_wire.h, where the C codec is made
// from it (AW_FRAME_TYPES, AW_ERROR_KINDS, AW_MESSAGES and each message's FIELDS). The
// tests' codec (wire.js) and the check of PROTOCOL.md (test/unit/agent-protocol.test.js)
// use this reading, so the layout of every message is written once.
//
//   import { table } from "./table.js";
//   table.types.EXEC            // { name: "EXEC", code: 0x23, sender: "HOST" }
//   table.messages.get("exec")  // { name, type, sender, fields: [{ kind, member, a, b }], check }
//   table.errors[6]             // "not_found"
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

export const HEADER_PATH = fileURLToPath(new URL("../../../src/codec/agent_wire.h", import.meta.url));

// The field kinds of agent_wire.h's table: bytes on the wire (null: variable), the type
// PROTOCOL.md's tables name, and whether the row's a and b are numeric bounds.
export const KINDS = {
  U8: { size: 1, doc: "u8", bounded: true }, MASK8: { size: 1, doc: "u8", bounded: true },
  ZERO8: { size: 1, doc: "u8", bounded: false }, U16: { size: 2, doc: "u16", bounded: true },
  MASK16: { size: 2, doc: "u16", bounded: true }, ZERO16: { size: 2, doc: "u16", bounded: false },
  U32: { size: 4, doc: "u32", bounded: true }, U32L: { size: 4, doc: "u32", bounded: true },
  MASK32: { size: 4, doc: "u32", bounded: true }, I32: { size: 4, doc: "i32", bounded: true },
  U64: { size: 8, doc: "u64", bounded: false }, I64: { size: 8, doc: "i64", bounded: false },
  BLOB: { size: null, doc: "blob", bounded: true }, ARGV: { size: null, doc: "list", bounded: true },
  ENVS: { size: null, doc: "list", bounded: true },
};

// The header with comments gone and continued lines joined.
function source(path) {
  return readFileSync(path, "utf8")
    .replace(/\/\*[\s\S]*?\*\//g, " ")
    .replace(/\\\n/g, " ");
}

// `#define NAME value` lines whose value is a number or an expression of other constants.
function constants(text) {
  const raw = new Map();
  for (const m of text.matchAll(/^#define\s+([A-Z][A-Z0-9_]*)\s+([^\n]+)$/gm)) raw.set(m[1], m[2].trim());
  // enum { A = 1, B, ... } (the generated ones, made by macros, are the tables themselves).
  for (const m of text.matchAll(/\benum\s*\{([^}]*)\}/g)) {
    let prev = null;
    for (const item of m[1].split(",").map((s) => s.trim()).filter(Boolean)) {
      const e = /^([A-Z][A-Z0-9_]*)(?:\s*=\s*(.+))?$/.exec(item);
      if (!e) continue;
      raw.set(e[1], e[2] ?? (prev === null ? "0" : `${prev} + 1`));
      prev = e[1];
    }
  }
  const known = new Map([
    ["INT32_MIN", -0x80000000],
    ["INT32_MAX", 0x7fffffff],
  ]);
  const value = (name, seen = new Set()) => {
    if (known.has(name)) return known.get(name);
    const expr = raw.get(name);
    if (expr === undefined || seen.has(name)) return undefined;
    seen.add(name);
    const v = evaluate(expr, (id) => value(id, seen));
    if (v !== undefined) known.set(name, v);
    return v;
  };
  for (const name of raw.keys()) value(name);
  return { value: (name) => value(name), all: known };
}

// A C constant expression of numbers, names, ( ) + - | and <<; undefined when it is not one.
export function evaluate(expr, lookup) {
  let bad = false;
  const js = expr.replace(/\b(0[xX][0-9a-fA-F]+|0[0-7]+|\d+)[uUlL]*\b|\b([A-Za-z_]\w*)\b/g, (m, num, id) => {
    if (num !== undefined) return /^0[0-7]+$/.test(num) ? String(parseInt(num, 8)) : String(Number(num));
    const v = lookup(id);
    if (v === undefined) bad = true;
    return `(${v})`;
  });
  if (bad || !/^[\s\d()+\-|<>x.]*$/.test(js)) return undefined;
  return Function(`"use strict"; return (${js});`)();
}

// The arguments of every `NAME(...)` call in `body` (no nested parentheses but in values).
function rows(body, macro) {
  const out = [];
  const re = new RegExp(`\\b${macro}\\(`, "g");
  let m;
  while ((m = re.exec(body)) !== null) {
    let depth = 1;
    let i = re.lastIndex;
    for (; i < body.length && depth > 0; i++) {
      if (body[i] === "(") depth++;
      else if (body[i] === ")") depth--;
    }
    out.push(body.slice(re.lastIndex, i - 1).split(",").map((s) => s.trim()));
    re.lastIndex = i;
  }
  return out;
}

// The body of `#define NAME(X) ...`.
function macroBody(text, name) {
  const m = new RegExp(`^#define\\s+${name}\\((\\w+)\\)([^\\n]*)$`, "m").exec(text);
  if (!m) throw new Error(`agent_wire.h has no ${name}`);
  return { param: m[1], body: m[2] };
}

export function readTable(path = HEADER_PATH) {
  const text = source(path);
  const c = constants(text);
  const number = (s) => {
    const v = evaluate(s, (id) => c.value(id));
    if (v === undefined) throw new Error(`agent_wire.h: cannot evaluate ${s}`);
    return v;
  };

  const types = {};
  const { param: tp, body: tb } = macroBody(text, "AW_FRAME_TYPES");
  for (const [name, code, sender] of rows(tb, tp)) types[name] = { name, code: number(code), sender };

  const errors = ["unknown"];
  const { param: ep, body: eb } = macroBody(text, "AW_ERROR_KINDS");
  for (const [, code, wire] of rows(eb, ep)) errors[number(code)] = JSON.parse(wire);

  // A FIELDS macro, with the FIELDS macros it names expanded in place.
  const fieldsOf = (name) => {
    const { param, body } = macroBody(text, name);
    const fields = [];
    for (const m of body.matchAll(new RegExp(`\\b(AW_\\w+_FIELDS)\\(${param}\\)|\\b${param}\\(([^()]*(?:\\([^()]*\\)[^()]*)*)\\)`, "g"))) {
      if (m[1]) fields.push(...fieldsOf(m[1]));
      else {
        const [kind, member, a, b] = m[2].split(",").map((s) => s.trim());
        if (!KINDS[kind]) throw new Error(`agent_wire.h: ${name}.${member} has an unknown kind ${kind}`);
        const f = { kind, member, a: a, b: b };
        if (KINDS[kind].bounded) {
          f.a = number(a);
          f.b = number(b);
        }
        fields.push(f);
      }
    }
    return fields;
  };

  const messages = new Map();
  const { param: mp, body: mb } = macroBody(text, "AW_MESSAGES");
  for (const [name, type, sender, decType, encType, fields, check] of rows(mb, mp)) {
    if (!types[type]) throw new Error(`message ${name}: unknown frame type ${type}`);
    messages.set(name, { name, type, sender, decType, encType, fields: fieldsOf(fields), check });
  }
  return { types, errors, messages, constant: (name) => c.value(name) };
}

export const table = readTable();

// C member names as the tests' objects spell them: version_min -> versionMin.
export const camel = (member) => member.replace(/_([a-z0-9])/g, (_, ch) => ch.toUpperCase());

// The bytes a field takes, or null for a variable-length one.
export const fieldSize = (kind) => KINDS[kind].size;
