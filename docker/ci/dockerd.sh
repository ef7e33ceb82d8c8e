# Start and stop a Docker daemon of our own, leaving the host's network as we found it.
# Sourced by docker/smoke-test: `dockerd_start DATA_ROOT`, then `trap dockerd_stop EXIT`. There is no systemd
# here (see ../shared/docs/CONTAINERS.md): the daemon is started by hand, remembered by its PID and stopped by it.
#
# The daemon does not touch the host's firewall or forwarding at all (--iptables=false --ip-forward=false
# --ip-masq=false): the stack's containers only talk to each other on their compose bridge, and the host reaches
# the published port through docker-proxy, so neither NAT nor forwarding is needed. Builds reach Debian's mirror
# and PyPI through the host's own network (DOCKER_BUILD_NETWORK=host, used by docker/smoke-test). dockerd still
# makes bridges (docker0, one per compose network); docker/ci/hostnet.sh records the host's state first and puts
# it back afterwards, firewall included, in case anything else changed it.

DOCKER=${DOCKER:-/usr/bin/docker}  # another `docker` client may come first on PATH
DOCKER_BUILD_NETWORK=host
source "$(dirname "${BASH_SOURCE[0]}")/hostnet.sh"
_dockerd_pid=""
_dockerd_state=""

dockerd_start() {
  local data_root=$1
  if "$DOCKER" info >/dev/null 2>&1; then
    echo "== a Docker daemon is already running; using it (it will be left running)"
    return 0
  fi
  _dockerd_state=$(mktemp -d)
  hostnet_save "$_dockerd_state/network" || return 1
  mkdir -p "$data_root"
  echo "== starting dockerd (data root $data_root; no iptables rules, no forwarding)"
  setsid dockerd --data-root "$data_root" --exec-root "$_dockerd_state/exec" \
    --pidfile "$_dockerd_state/dockerd.pid" --iptables=false --ip6tables=false --ip-forward=false --ip-masq=false \
    >"$_dockerd_state/dockerd.log" 2>&1 &
  _dockerd_pid=$!
  for _ in $(seq 1 60); do
    "$DOCKER" info >/dev/null 2>&1 && return 0
    if ! kill -0 "$_dockerd_pid" 2>/dev/null; then break; fi
    sleep 0.5
  done
  echo "dockerd did not start; its log:" >&2
  tail -n 30 "$_dockerd_state/dockerd.log" >&2
  return 1
}

dockerd_stop() {
  [ -n "$_dockerd_pid" ] || return 0
  echo "== stopping dockerd (pid $_dockerd_pid) and restoring the host's network"
  kill "$_dockerd_pid" 2>/dev/null || true
  for _ in $(seq 1 40); do kill -0 "$_dockerd_pid" 2>/dev/null || break; sleep 0.5; done
  kill -9 "$_dockerd_pid" 2>/dev/null || true
  # containerd is dockerd's child in its own session: make sure nothing of it is left.
  pkill -f "containerd --config $_dockerd_state/exec" 2>/dev/null || true
  hostnet_restore "$_dockerd_state/network" || echo "some of the host's network could not be restored (see above)" >&2
  if [ -n "${DOCKERD_LOG_KEEP:-}" ]; then cp "$_dockerd_state/dockerd.log" "$DOCKERD_LOG_KEEP" 2>/dev/null || true; fi
  rm -rf "$_dockerd_state"
  _dockerd_pid=""
}
