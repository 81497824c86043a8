#!/usr/bin/env python3
# Runs a command in a pseudo-terminal and types into it, for tests of interactive
# prompts (test/unit/cli-wizard.test.js). One argument, a JSON object:
#   { "argv": [...], "cwd": "...", "env": {...}, "columns": 120, "rows": 40,
#     "timeout": 30, "steps": [{ "wait": "<regex>", "send": "<text>" }, ...] }
# Each step waits until its regex matches the terminal output written since the previous
# step's match (escape sequences removed), then types `send`. After the last step the
# output is read to the end. Prints one JSON line: { "code": <exit code, or 128 + signal>,
# "output": "<everything written, escapes removed>", "timedOut": <bool>, "failedStep": <index or null> }.
# With "raw": true the terminal does no output processing ("\n" stays "\n") and the line
# also holds "rawBase64", the bytes exactly as the program wrote them.
import base64
import fcntl
import json
import os
import pty
import re
import select
import signal
import struct
import sys
import termios
import time

ESCAPES = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>78]")


def main():
    spec = json.loads(sys.argv[1])
    deadline = time.monotonic() + spec.get("timeout", 30)
    pid, fd = pty.fork()
    if pid == 0:
        # The terminal's size and output mode are set before the program starts.
        fcntl.ioctl(1, termios.TIOCSWINSZ, struct.pack("HHHH", spec.get("rows", 40), spec.get("columns", 120), 0, 0))
        if spec.get("raw"):
            attrs = termios.tcgetattr(1)
            attrs[1] &= ~termios.OPOST
            termios.tcsetattr(1, termios.TCSANOW, attrs)
        os.chdir(spec["cwd"])
        os.execvpe(spec["argv"][0], spec["argv"], spec.get("env", dict(os.environ)))
    raw = b""
    eof = False

    def pump(wait):
        nonlocal raw, eof
        if eof:
            return
        ready, _, _ = select.select([fd], [], [], wait)
        if not ready:
            return
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            chunk = b""
        if not chunk:
            eof = True
        raw += chunk

    def text():
        return ESCAPES.sub("", raw.decode("utf-8", "replace"))

    seen = 0
    failed = None
    for index, step in enumerate(spec["steps"]):
        pattern = re.compile(step["wait"])
        while True:
            found = pattern.search(text(), seen)
            if found:
                seen = found.end()
                break
            if eof or time.monotonic() > deadline:
                failed = index
                break
            pump(0.05)
        if failed is not None:
            break
        os.write(fd, step["send"].encode("utf-8"))
    while not eof and time.monotonic() < deadline:
        pump(0.05)
    timed_out = not eof
    if timed_out:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code < 0:
        code = 128 - code
    result = {"code": code, "output": text(), "timedOut": timed_out, "failedStep": failed}
    if spec.get("raw"):
        result["rawBase64"] = base64.b64encode(raw).decode("ascii")
    print(json.dumps(result))


main()
