#!/usr/bin/env bash
# The issue's "silent output loss", measured with the docker CLI against whatever engine
# DOCKER_HOST names: `docker exec -i` of a command that prints and exits 3 without reading
# its stdin, fed 1 B, 64 KiB and 1 MiB of input, N runs each. Counts per size: output right
# ("out" on stdout), output empty, exit code wrong, and the CLI's error messages.
#   DOCKER_HOST=unix://... bash notes/engines-tools/loss-cli.sh [N]
set -uo pipefail
N="${1:-100}"
IMAGE="${ANVIA_TEST_IMAGE:-anvia-sandbox/bookworm:local}"
name="anvia-loss-$$"
docker run -d --name "$name" --network none "$IMAGE" sleep 3600 >/dev/null
trap 'docker rm -f "$name" >/dev/null 2>&1' EXIT
tmp="$(mktemp -d)"
trap 'docker rm -f "$name" >/dev/null 2>&1; rm -rf "$tmp"' EXIT
for size in 1 65536 1048576; do
  head -c "$size" /dev/urandom > "$tmp/in"
  ok=0 empty=0 badcode=0 other=0
  : > "$tmp/errors"; : > "$tmp/codes"
  for _ in $(seq 1 "$N"); do
    docker exec -i "$name" sh -c 'echo out; exit 3' < "$tmp/in" > "$tmp/out" 2> "$tmp/err"
    code=$?
    out="$(cat "$tmp/out")"
    if [ "$out" = out ]; then ok=$((ok + 1)); elif [ -z "$out" ]; then empty=$((empty + 1)); else other=$((other + 1)); fi
    [ "$code" = 3 ] || badcode=$((badcode + 1))
    echo "$code" >> "$tmp/codes"
    [ -s "$tmp/err" ] && { sed 's/[0-9a-f]\{64\}/<id>/g; s/:[0-9]\+->/:<port>->/g' "$tmp/err" | head -1 >> "$tmp/errors"; }
  done
  echo "size=$size runs=$N output_ok=$ok output_empty=$empty output_other=$other exit_code_not_3=$badcode (CLI exit codes: $(sort "$tmp/codes" | uniq -c | awk '{printf "%s%sx%s", sep, $1, $2; sep=", "}'))"
  sort "$tmp/errors" | uniq -c | sed 's/^/    stderr: /'
done
