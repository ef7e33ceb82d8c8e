# Record the host's network state and put it back exactly: what a Docker daemon may change.
# Sourced by docker/ci/dockerd.sh and docker/smoke-test; tested in tests/test_hostnet.py inside its own network
# namespace. Functions:
#   hostnet_save DIR      record ip_forward, the firewall tables and the bridges into DIR
#   hostnet_restore DIR   put them back: delete what did not exist, restore the rest, drop new bridges
#   hostnet_state         print everything above in a form two runs can be compared by (diff)
#
# Why not only iptables-save/restore: on the nf_tables backend (Debian 12's default) a machine that never ran a
# firewall has no `ip filter` or `ip nat` table at all, and listing one (`iptables -S`) does not create it, so
# iptables-save prints nothing and a saved copy can restore nothing. "This table did not exist" must be recorded
# and undone by deleting the table. On the legacy backend a listing does load the table, so save/restore works.
#
# HOSTNET_IPTABLES picks the binaries (iptables, iptables-nft, iptables-legacy); the ip6 variants follow it.
# HOSTNET_NFT names nft.

HOSTNET_IPTABLES=${HOSTNET_IPTABLES:-iptables}
HOSTNET_NFT=${HOSTNET_NFT:-nft}
_HOSTNET_TABLES="filter nat mangle raw security"  # the tables iptables manages (nf_tables names them alike)

_hostnet_ip6() { echo "${HOSTNET_IPTABLES/iptables/ip6tables}"; }

# nf_tables or legacy, as the binary reports itself ("iptables v1.8.9 (nf_tables)").
hostnet_backend() {
  if ! command -v "$HOSTNET_IPTABLES" >/dev/null 2>&1; then
    echo none
  elif "$HOSTNET_IPTABLES" -V 2>/dev/null | grep -q nf_tables; then
    echo nf_tables
  else
    echo legacy
  fi
}

# The iptables tables that exist now, one "FAMILY NAME" a line (ip filter, ip6 nat, ...), nf_tables only.
_hostnet_nft_tables() {
  "$HOSTNET_NFT" list tables 2>/dev/null | awk -v names=" $_HOSTNET_TABLES " \
    '$1 == "table" && ($2 == "ip" || $2 == "ip6") && index(names, " " $3 " ") {print $2, $3}' | sort
}

_hostnet_bridges() { ip -o link show type bridge 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' | sort; }

hostnet_save() {
  local dir=$1 backend
  backend=$(hostnet_backend)
  mkdir -p "$dir"
  echo "$backend" >"$dir/backend"
  sysctl -n net.ipv4.ip_forward >"$dir/ip_forward"
  _hostnet_bridges >"$dir/bridges"
  : >"$dir/iptables"
  : >"$dir/ip6tables"
  : >"$dir/tables"
  case $backend in
    nf_tables)
      if ! command -v "$HOSTNET_NFT" >/dev/null 2>&1; then
        echo "hostnet: the nf_tables backend needs the nft command to record which tables exist (apt-get install nftables)" >&2
        return 1
      fi
      _hostnet_nft_tables >"$dir/tables"
      ;;
    legacy)
      # A listing loads the table, so that the saved copy holds it (empty) and its restore flushes it again.
      local table
      for table in filter nat; do
        "$HOSTNET_IPTABLES" -t "$table" -S >/dev/null 2>&1 || true
        "$(_hostnet_ip6)" -t "$table" -S >/dev/null 2>&1 || true
      done
      ;;
    none) return 0 ;;
  esac
  "$HOSTNET_IPTABLES-save" >"$dir/iptables" 2>/dev/null || true
  "$(_hostnet_ip6)-save" >"$dir/ip6tables" 2>/dev/null || true
}

hostnet_restore() {
  local dir=$1 backend status=0
  backend=$(cat "$dir/backend")
  if [ "$backend" = nf_tables ]; then
    # Tables that did not exist before: deleted whole (their chains and policies go with them).
    local family name
    while read -r family name; do
      [ -n "$family" ] || continue
      grep -qx "$family $name" "$dir/tables" || "$HOSTNET_NFT" delete table "$family" "$name" || status=1
    done < <(_hostnet_nft_tables)
  fi
  if [ "$backend" != none ]; then
    # Tables that existed: iptables-restore flushes each table named in the copy and writes it back.
    if [ -s "$dir/iptables" ]; then "$HOSTNET_IPTABLES-restore" <"$dir/iptables" || status=1; fi
    if [ -s "$dir/ip6tables" ]; then "$(_hostnet_ip6)-restore" <"$dir/ip6tables" || status=1; fi
  fi
  local bridge
  for bridge in $(_hostnet_bridges); do
    grep -qx "$bridge" "$dir/bridges" || ip link delete "$bridge" || status=1
  done
  sysctl -q -w net.ipv4.ip_forward="$(cat "$dir/ip_forward")" || status=1
  return $status
}

# Everything save/restore covers, for a before/after diff: which tables exist (nf_tables), then each table's chains,
# policies and rules as iptables-save prints them, without its comments and packet counters (traffic changes those).
hostnet_state() {
  echo "ip_forward $(sysctl -n net.ipv4.ip_forward)"
  local backend
  backend=$(hostnet_backend)
  if [ "$backend" = nf_tables ]; then
    echo "tables: $(_hostnet_nft_tables | tr '\n' ',')"
  elif [ "$backend" = legacy ]; then
    local table  # listed as hostnet_save lists them, so both sides load the same tables
    for table in filter nat; do
      "$HOSTNET_IPTABLES" -t "$table" -S >/dev/null 2>&1
      "$(_hostnet_ip6)" -t "$table" -S >/dev/null 2>&1
    done
  fi
  if [ "$backend" != none ]; then
    { "$HOSTNET_IPTABLES-save"; "$(_hostnet_ip6)-save"; } 2>/dev/null | sed -e '/^#/d' -e 's/ \[[0-9]*:[0-9]*\]$//'
  fi
  echo "bridges: $(_hostnet_bridges | tr '\n' ' ')"
}
