// PROTOCOL.md says what the codec does: its frame types, error kinds and every message's
// table (offset, type, field) are checked against the table the C codec is made from
// (src/codec/agent_wire.h: AW_FRAME_TYPES, AW_ERROR_KINDS, AW_MESSAGES), as
// test/agent/lib/table.js reads it. A message is documented by a table right after a
// `<!-- wire: NAME -->` line.
import test from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { KINDS, evaluate, fieldSize, readTable, table } from "../agent/lib/table.js";

const DOC = readFileSync(fileURLToPath(new URL("../../src/agent/PROTOCOL.md", import.meta.url)), "utf8");

// The rows of the first markdown table at or after `from`: arrays of trimmed cells.
function tableAt(text, from) {
  const lines = text.slice(from).split("\n");
  let i = lines.findIndex((l) => l.startsWith("|"));
  assert.ok(i >= 0, "a table follows");
  const out = [];
  for (i += 2; i < lines.length && lines[i].startsWith("|"); i++) out.push(lines[i].split("|").slice(1, -1).map((c) => c.trim()));
  return out;
}

// What a message's table must say, from its fields.
function expectedRows(msg) {
  let offset = 0;
  return msg.fields.map((f) => {
    const size = fieldSize(f.kind);
    const type = f.kind === "BLOB" ? `blob(${f.a})` : KINDS[f.kind].doc;
    const row = [offset === null ? "…" : String(offset), type, f.kind.startsWith("ZERO") ? "reserved" : `\`${f.member}\``];
    offset = offset === null || size === null ? null : offset + size;
    return row;
  });
}

test("every message of the table has its table in PROTOCOL.md, field by field", () => {
  const documented = new Set();
  for (const m of DOC.matchAll(/^<!-- wire: (\w+) -->$/gm)) {
    const msg = table.messages.get(m[1]);
    assert.ok(msg, `PROTOCOL.md documents ${m[1]}, which the table does not have`);
    assert.ok(!documented.has(m[1]), `${m[1]} is documented twice`);
    documented.add(m[1]);
    const rows = tableAt(DOC, m.index).map((r) => r.slice(0, 3));
    assert.deepEqual(rows, expectedRows(msg), `PROTOCOL.md's table of ${m[1]}`);
  }
  assert.deepEqual([...table.messages.keys()].filter((n) => !documented.has(n)), [], "messages without their table");
});

test("PROTOCOL.md's frame types are the table's: code, name and sender", () => {
  const at = DOC.indexOf("| type | name | sent by |");
  assert.ok(at > 0);
  const rows = tableAt(DOC, at).map(([code, name, sender]) => ({ code: Number(code.replaceAll("`", "")), name: name.replaceAll("`", ""), sender: sender.toUpperCase() }));
  assert.deepEqual(rows, Object.values(table.types));
});

test("PROTOCOL.md's error kinds are the table's", () => {
  const rows = tableAt(DOC, DOC.indexOf("## Errors"));
  const kinds = ["unknown"];
  for (const [kind, name] of rows) kinds[Number(kind)] = name.replaceAll("`", "");
  assert.deepEqual(kinds, table.errors);
});

test("the reading of the table fails loudly on what it cannot read", () => {
  assert.equal(evaluate("(AW_A | 0x10) + 07", (id) => (id === "AW_A" ? 1 : undefined)), 24);
  assert.equal(evaluate("AW_NOPE + 1", () => undefined), undefined);
  assert.throws(() => readTable(fileURLToPath(new URL("../../package.json", import.meta.url))), /has no AW_FRAME_TYPES/);
  // Every field of every message is a kind the codecs know, with numeric bounds.
  for (const msg of table.messages.values()) {
    for (const f of msg.fields) {
      assert.ok(KINDS[f.kind], `${msg.name}.${f.member}: ${f.kind}`);
      if (KINDS[f.kind].bounded) assert.ok(Number.isFinite(f.a) && Number.isFinite(f.b), `${msg.name}.${f.member} bounds`);
    }
  }
  assert.equal(table.messages.size, 30);
});
