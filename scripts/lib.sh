# Shared by the set-up scripts. Sourced, not run.
# shellcheck shell=bash

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STATE="$ROOT/.state"
mkdir -p "$STATE"

# The images the tests and the demo use, built locally (no registry can be reached).
DEFAULT_IMAGE="${ANVIA_TEST_IMAGE:-anvia-sandbox/bookworm:local}"
BUSYBOX_IMAGE="${ANVIA_BUSYBOX_IMAGE:-anvia-sandbox/busybox:local}"

say() { printf '\033[1m[setup]\033[0m %s\n' "$*" >&2; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"
  elif command -v sudo >/dev/null 2>&1; then sudo "$@"
  else
    echo "This step needs root: $*" >&2
    return 1
  fi
}

engine_answers() {
  # /_ping through the CLI: any engine the docker CLI would use (DOCKER_HOST, context).
  docker version --format '{{.Server.APIVersion}}' >/dev/null 2>&1
}
