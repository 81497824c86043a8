#!/usr/bin/env bash
# Stops what setup.sh started, and only that: the dockerd it launched (if it did).
set -uo pipefail
source "$(dirname "$0")/lib.sh"
if [ -f "$STATE/dockerd.pid" ]; then
  pid="$(cat "$STATE/dockerd.pid")"
  if kill -0 "$pid" 2>/dev/null; then
    say "stopping the dockerd setup started (pid $pid)"
    as_root kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 30); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
  fi
  rm -f "$STATE/dockerd.pid"
fi
