# Start and stop a Docker daemon of our own, leaving the host's network as we found it.
# Sourced by docker/smoke-test and bench/docker_bench.sh: `dockerd_start DATA_ROOT`, then
# `trap dockerd_stop EXIT`. There is no systemd here (see ../shared/docs/CONTAINERS.md): the daemon
# is started by hand, remembered by its PID and stopped by it.
#
# dockerd changes host networking when it starts: net.ipv4.ip_forward, iptables chains (DOCKER,
# DOCKER-USER, DOCKER-ISOLATION-*, NAT rules) and a docker0 bridge, plus one bridge per compose
# network. We save the iptables rules and ip_forward first and put them back after it stops.

DOCKER=${DOCKER:-/usr/bin/docker}  # another `docker` client may come first on PATH
_dockerd_pid=""
_dockerd_state=""

dockerd_start() {
  local data_root=$1
  if "$DOCKER" info >/dev/null 2>&1; then
    echo "== a Docker daemon is already running; using it (it will be left running)"
    return 0
  fi
  _dockerd_state=$(mktemp -d)
  sysctl -n net.ipv4.ip_forward >"$_dockerd_state/ip_forward"
  # Listing the filter and nat tables first makes iptables-save include them even when they are empty,
  # so that iptables-restore then flushes dockerd's chains out of them.
  iptables -t filter -S >/dev/null 2>&1 || true
  iptables -t nat -S >/dev/null 2>&1 || true
  iptables-save >"$_dockerd_state/iptables" 2>/dev/null || true
  ip -o link show type bridge 2>/dev/null | awk -F': ' '{print $2}' >"$_dockerd_state/bridges"
  mkdir -p "$data_root"
  echo "== starting dockerd (data root $data_root)"
  setsid dockerd --data-root "$data_root" --exec-root "$_dockerd_state/exec" \
    --pidfile "$_dockerd_state/dockerd.pid" >"$_dockerd_state/dockerd.log" 2>&1 &
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
  # The bridges dockerd made (docker0, br-<network id>) that were not there before.
  for bridge in $(ip -o link show type bridge 2>/dev/null | awk -F': ' '{print $2}'); do
    grep -qx "$bridge" "$_dockerd_state/bridges" || ip link delete "$bridge" 2>/dev/null || true
  done
  if [ -s "$_dockerd_state/iptables" ]; then
    iptables-restore <"$_dockerd_state/iptables" 2>/dev/null || true
  fi
  sysctl -q -w net.ipv4.ip_forward="$(cat "$_dockerd_state/ip_forward")" || true
  if [ -n "${DOCKERD_LOG_KEEP:-}" ]; then cp "$_dockerd_state/dockerd.log" "$DOCKERD_LOG_KEEP" 2>/dev/null || true; fi
  rm -rf "$_dockerd_state"
  _dockerd_pid=""
}
