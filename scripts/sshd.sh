#!/usr/bin/env bash
# A local sshd on 127.0.0.1, for reaching the local Docker engine as the docker CLI reaches a
# remote one: DOCKER_HOST=ssh://root@127.0.0.1:PORT, i.e. `ssh ... docker system dial-stdio`
# (issue 15). Everything lives in .state/ssh/: its config, host key, the client's key pair,
# known_hosts and ssh_config. The machine's /etc/ssh/sshd_config and ~/.ssh are not touched.
#
#   scripts/sshd.sh start   install openssh-server/-client if missing, start sshd on a free
#                           high port (kept across restarts while it stays free)
#   scripts/sshd.sh stop    stop the sshd that `start` started, and only that one
#   scripts/sshd.sh env     print what a test runner exports (eval it):
#                             PATH=.state/ssh/bin:$PATH   a wrapper `ssh` that runs
#                                                         /usr/bin/ssh -F .state/ssh/ssh_config
#                             DOCKER_HOST=ssh://root@127.0.0.1:PORT
#                             ANVIA_SSH_CONFIG=.state/ssh/ssh_config  (for `ssh -F` by hand)
#
# How the client uses our config without ~/.ssh: the docker CLI (and any program that runs
# plain `ssh` from PATH) finds the wrapper first on PATH; `ssh -F FILE` makes ssh read FILE
# instead of ~/.ssh/config and /etc/ssh/ssh_config, and FILE names our key, our known_hosts
# (strict checking) and BatchMode, so nothing asks a question.
#
# sshd needs its privilege-separation directory /run/sshd (compiled in, not configurable);
# it is created when missing (as the Debian package's service would) and left in place.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

S="$STATE/ssh"
PIDFILE="$S/sshd.pid"
PORTFILE="$S/port"
SSHD=/usr/sbin/sshd

log() { printf '\033[1m[sshd]\033[0m %s\n' "$*" >&2; }

install_packages() {
  local missing=() p
  for p in openssh-server openssh-client; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing ${missing[*]}"
  # The package starts the machine's ssh service unless an init policy forbids it.
  local made_policy=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    as_root sh -c 'printf "#!/bin/sh\nexit 101\n" > /usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d'
    made_policy=1
  fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
  [ $made_policy = 1 ] && as_root rm -f /usr/sbin/policy-rc.d
  return 0
}

free_port() {
  node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}
port_in_use() { ss -Hltn "sport = :$1" 2>/dev/null | grep -q .; }

our_pid() {
  [ -f "$PIDFILE" ] || return 1
  local pid; pid="$(cat "$PIDFILE")"
  kill -0 "$pid" 2>/dev/null || return 1
  tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$S/sshd_config" || return 1
  echo "$pid"
}

user_name() { echo "${ANVIA_SSH_USER:-root}"; }

client_works() {
  local port; port="$(cat "$PORTFILE")"
  "$S/bin/ssh" -p "$port" "$(user_name)@127.0.0.1" true 2>/dev/null
}

write_files() {
  mkdir -p "$S/bin"
  chmod 700 "$S"
  [ -f "$S/host_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C "anvia-test-host" -f "$S/host_ed25519"
  [ -f "$S/id_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C "anvia-test-client" -f "$S/id_ed25519"
  cp "$S/id_ed25519.pub" "$S/authorized_keys"
  chmod 600 "$S/authorized_keys"

  local port="$1" user; user="$(user_name)"
  # The remote side's docker CLI talks to the engine of its environment: pass on a unix
  # DOCKER_HOST when one is set (sshd gives the session a clean environment otherwise).
  local setenv=""
  case "${DOCKER_HOST:-}" in unix://*) setenv="DOCKER_HOST=$DOCKER_HOST" ;; esac
  # The session's HOME is a directory of ours: sshd runs every command through the user's
  # login shell, and bash then reads ~/.bashrc, whatever the machine put there (a pyenv
  # init whose rehash waits 60 s on a stale lock made every ssh session of a run wait).
  # The docker CLI on the ssh side reads its config from this HOME too, not the machine's.
  mkdir -p "$S/home"
  chmod 700 "$S/home"
  cat > "$S/sshd_config" <<EOF
# Written by scripts/sshd.sh; sshd is started with -f on this file only.
Port $port
ListenAddress 127.0.0.1
HostKey $S/host_ed25519
PidFile none
AuthorizedKeysFile $S/authorized_keys
# The key file lives in this checkout's scratch directory, which may sit under a
# world-writable directory (a clone in /tmp): sshd's StrictModes would refuse it there.
# The directory is this script's own (0700), and the sshd listens on 127.0.0.1 only.
StrictModes no
AuthenticationMethods publickey
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
AllowUsers $user
UsePAM no
PrintMotd no
PermitUserRC no
X11Forwarding no
AllowAgentForwarding no
AllowTcpForwarding no
# Every ssh:// connection is one ssh session; libcurl opens several at once and every exec
# opens its own: do not let sshd's default (10:30:100) drop concurrent unauthenticated ones.
MaxStartups 200:30:400
MaxSessions 100
LogLevel VERBOSE
SetEnv HOME=$S/home $setenv
EOF
  cat > "$S/ssh_config" <<EOF
# Written by scripts/sshd.sh; read through \`ssh -F\` (the wrapper in bin/ssh).
Host *
  IdentityFile $S/id_ed25519
  IdentitiesOnly yes
  UserKnownHostsFile $S/known_hosts
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
  BatchMode yes
  LogLevel ERROR
EOF
  printf '[127.0.0.1]:%s %s\n' "$port" "$(cut -d' ' -f1,2 "$S/host_ed25519.pub")" > "$S/known_hosts"
  cat > "$S/bin/ssh" <<EOF
#!/bin/sh
# Written by scripts/sshd.sh: plain \`ssh\` with the test client's config (first on PATH).
exec /usr/bin/ssh -F "$S/ssh_config" "\$@"
EOF
  chmod 755 "$S/bin/ssh"
}

start() {
  install_packages
  mkdir -p "$S"
  if our_pid >/dev/null && [ -f "$PORTFILE" ] && client_works; then
    return 0
  fi
  stop_quiet >/dev/null
  local port=""
  if [ -f "$PORTFILE" ] && ! port_in_use "$(cat "$PORTFILE")"; then port="$(cat "$PORTFILE")"; fi
  [ -n "$port" ] || port="$(free_port)"
  echo "$port" > "$PORTFILE"
  write_files "$port"
  [ -d /run/sshd ] || as_root install -d -m 0755 /run/sshd
  "$SSHD" -t -f "$S/sshd_config"
  # -D: stays in the foreground, so $! is sshd itself; -E: its own log file.
  setsid "$SSHD" -D -f "$S/sshd_config" -E "$S/sshd.log" < /dev/null > /dev/null 2>&1 &
  echo $! > "$PIDFILE"
  for _ in $(seq 1 50); do
    port_in_use "$port" && break
    kill -0 "$(cat "$PIDFILE")" 2>/dev/null || { tail -20 "$S/sshd.log" >&2; echo "sshd.sh: sshd exited" >&2; exit 1; }
    sleep 0.1
  done
  # A start that fails stops the sshd it started: nothing is left listening.
  if ! client_works; then
    tail -20 "$S/sshd.log" >&2
    echo "sshd.sh: key login to $(user_name)@127.0.0.1:$port fails" >&2
    stop_quiet >/dev/null
    exit 1
  fi
  if ! "$S/bin/ssh" -p "$port" "$(user_name)@127.0.0.1" docker version --format '{{.Server.APIVersion}}' >/dev/null 2>&1; then
    echo "sshd.sh: no Docker engine answers the docker CLI on the ssh side" >&2
    stop_quiet >/dev/null
    exit 1
  fi
  log "sshd (pid $(cat "$PIDFILE")) on 127.0.0.1:$port; eval \"\$(bash scripts/sshd.sh env)\""
}

stop_quiet() {
  local pid
  if pid="$(our_pid)"; then
    # Its sessions first (one sshd child per connection), then the listener.
    local kids; kids="$(pgrep -P "$pid" || true)"
    [ -n "$kids" ] && kill $kids 2>/dev/null || true
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 30); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null || true
    echo "$pid"
  fi
  rm -f "$PIDFILE"
}

stop() {
  [ -d "$S" ] || return 0
  local pid; pid="$(stop_quiet)"
  [ -n "$pid" ] && log "stopped sshd (pid $pid)"
  return 0
}

env_() {
  [ -f "$PORTFILE" ] || { echo "sshd.sh: not started (no $PORTFILE)" >&2; exit 1; }
  local port; port="$(cat "$PORTFILE")"
  echo "export PATH=\"$S/bin:\$PATH\""
  echo "export DOCKER_HOST=ssh://$(user_name)@127.0.0.1:$port"
  echo "export ANVIA_SSH_CONFIG=$S/ssh_config"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  env) env_ ;;
  *) echo "usage: $0 start|stop|env" >&2; exit 2 ;;
esac
