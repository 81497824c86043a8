// Resolving a container user "user[:group]" to numeric ids from the image's own
// /etc/passwd and /etc/group (src/userspec.c), with runc's rules, through
// native.userspecResolve.
import assert from "node:assert/strict";
import { test } from "node:test";

import { DockerSandboxError, native } from "../helpers/native.js";

const passwd = [
  "root:x:0:0:root:/root:/bin/bash",
  "daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin",
  "# a comment line: skipped",
  "",
  "   ",
  "broken line without colons",
  "short:x:5",
  "nonnumeric:x:abc:1:::",
  "negative:x:-3:1:::",
  "plus:x:+7:1:::",
  "toolarge:x:4294967295:1:::",
  ":x:77:77::/:/bin/sh",
  "node:x:1000:1000::/home/node:/bin/sh",
  "node:x:2000:2000:a second node entry, never used:/:/bin/sh",
  "app:x:1001:1002",
  "  spaced:x:1003:1004:trimmed line:/:/bin/sh  ",
  "crlf:x:1005:1006::/:/bin/sh\r",
  "1234:x:1500:1501:a user named with digits:/:/bin/sh",
  "max:x:4294967294:4294967294:::",
  "zeros:x:0042:007:::",
].join("\n");

const group = [
  "root:x:0:",
  "daemon:x:1:",
  "# comment",
  "staff:x:50:node,app",
  "bad:x:abc:",
  "tooshort:x",
  "node:x:1000:",
  "dupe:x:60:",
  "dupe:x:61:",
  "4000:x:4001:",
  "nomembers:x:70",
  "crlf:x:80:\r",
].join("\n");

const ok = [
  // spec, uid, gid
  ["", 0, 0],
  ["root", 0, 0],
  ["0", 0, 0],
  ["daemon", 1, 1],
  ["node", 1000, 1000],
  ["app", 1001, 1002],
  ["spaced", 1003, 1004],
  ["crlf", 1005, 1006],
  ["max", 4294967294, 4294967294],
  ["zeros", 42, 7],
  // numeric users: looked up by uid (first entry wins), else used as is with gid 0
  ["1000", 1000, 1000],
  ["2000", 2000, 2000],
  ["1001", 1001, 1002],
  ["4242", 4242, 0],
  ["0042", 42, 7],
  ["4294967294", 4294967294, 4294967294],
  ["1234", 1234, 0], // a number is always a uid, never a name
  ["1500", 1500, 1501],
  // explicit groups
  ["node:staff", 1000, 50],
  ["node:root", 1000, 0],
  ["root:node", 0, 1000],
  ["node:dupe", 1000, 60],
  ["node:nomembers", 1000, 70],
  ["node:crlf", 1000, 80],
  ["node:77", 1000, 77],
  ["node:0", 1000, 0],
  ["node:4294967294", 1000, 4294967294],
  ["node:4000", 1000, 4000], // numeric group: a gid, not a name
  ["4242:4243", 4242, 4243],
  ["4242:staff", 4242, 50],
  [":staff", 0, 50],
  [":99", 0, 99],
  ["node:", 1000, 1000],
];

test("resolves user[:group] specs against passwd and group", () => {
  for (const [spec, uid, gid] of ok) {
    assert.deepEqual(native.userspecResolve(spec, passwd, group), { uid, gid }, `spec ${JSON.stringify(spec)}`);
  }
});

const userMissing = (name) => `Sandbox user cannot be found in the image: ${name}`;
const groupMissing = (name) => `Sandbox group cannot be found in the image: ${name}`;

const bad = [
  // spec, message
  ["nobody", userMissing("nobody")],
  ["NODE", userMissing("NODE")],
  ["nod", userMissing("nod")],
  ["short", userMissing("short")],
  ["nonnumeric", userMissing("nonnumeric")],
  ["negative", userMissing("negative")],
  ["plus", userMissing("plus")],
  ["toolarge", userMissing("toolarge")],
  ["#", userMissing("#")],
  ["broken line without colons", userMissing("broken line without colons")],
  ["-1", userMissing("-1")],
  ["+5", userMissing("+5")],
  [" 5", userMissing(" 5")],
  ["1e3", userMissing("1e3")],
  ["0x10", userMissing("0x10")],
  ["4294967295", userMissing("4294967295")],
  ["99999999999999999999", userMissing("99999999999999999999")],
  ["node:nogroup", groupMissing("nogroup")],
  ["node:bad", groupMissing("bad")],
  ["node:tooshort", groupMissing("tooshort")],
  ["node:-1", groupMissing("-1")],
  ["node:4294967295", groupMissing("4294967295")],
  ["node:staff:extra", groupMissing("staff:extra")],
  ["nobody:staff", userMissing("nobody")],
];

test("unknown names and out-of-range numbers are invalid_state errors", () => {
  for (const [spec, message] of bad) {
    assert.throws(
      () => native.userspecResolve(spec, passwd, group),
      (error) => {
        assert.ok(error instanceof DockerSandboxError, `spec ${JSON.stringify(spec)}: ${error}`);
        assert.equal(error.code, "invalid_state");
        assert.equal(error.message, message, `spec ${JSON.stringify(spec)}`);
        return true;
      },
    );
  }
});

test("without passwd or group files, numbers are used as they are and names are unknown", () => {
  assert.deepEqual(native.userspecResolve("1000", null, null), { uid: 1000, gid: 0 });
  assert.deepEqual(native.userspecResolve("1000:1000", null, null), { uid: 1000, gid: 1000 });
  assert.deepEqual(native.userspecResolve("", null, null), { uid: 0, gid: 0 });
  assert.deepEqual(native.userspecResolve("node", passwd, null), { uid: 1000, gid: 1000 });
  assert.deepEqual(native.userspecResolve("node:5", passwd, null), { uid: 1000, gid: 5 });
  assert.throws(() => native.userspecResolve("root", null, null), { code: "invalid_state", message: userMissing("root") });
  assert.throws(() => native.userspecResolve("node:staff", passwd, null), {
    code: "invalid_state",
    message: groupMissing("staff"),
  });
  assert.throws(() => native.userspecResolve("1000:staff", null, null), { code: "invalid_state" });
});

test("empty files and files without a final newline", () => {
  assert.deepEqual(native.userspecResolve("0", "", ""), { uid: 0, gid: 0 });
  assert.throws(() => native.userspecResolve("root", "", ""), { code: "invalid_state" });
  assert.deepEqual(native.userspecResolve("last", "a:x:1:1\nlast:x:9:8", ""), { uid: 9, gid: 8 });
  assert.deepEqual(native.userspecResolve("last:g", "last:x:9:8", "g:x:3"), { uid: 9, gid: 3 });
  assert.deepEqual(native.userspecResolve("u", "\n\n\nu:x:5:6\n\n", null), { uid: 5, gid: 6 });
});

test("a root entry that is not uid 0 does not change the default user", () => {
  const odd = "root:x:5:5:::\ntoor:x:0:9:::\n";
  assert.deepEqual(native.userspecResolve("", odd, null), { uid: 0, gid: 9 });
  assert.deepEqual(native.userspecResolve("root", odd, null), { uid: 5, gid: 5 });
});

test("argument checks", () => {
  assert.throws(() => native.userspecResolve(1000, null, null), TypeError);
  assert.throws(() => native.userspecResolve(), TypeError);
});
