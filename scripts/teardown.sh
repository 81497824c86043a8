#!/usr/bin/env bash
# Stops what setup.sh started, and only that: the dockerd it launched (if it did).
set -uo pipefail
bash "$(dirname "$0")/dockerd.sh" stop
