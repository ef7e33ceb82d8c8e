"""docker/ci/hostnet.sh: the host's network is put back exactly, whatever firewall state it started in.

Each case runs in a network namespace of its own (its firewall tables, forwarding switch and bridges are its own),
so the host is never touched. The namespace starts as a fresh machine does: no nf_tables tables at all, which is the
state where iptables-save prints nothing (issue 20: restoring that empty copy left dockerd's chains behind).
The "dockerd" below makes the changes dockerd 20.10 makes when it manages iptables.
"""

import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # each test runs a command or a kernel tool as its own process

HELPER = Path(__file__).resolve().parents[2] / "docker" / "ci" / "hostnet.sh"
REQUIRED = os.environ.get("QUIRE_REQUIRE_SERVICES") == "1"

# What dockerd does to the network when it starts with its defaults (iptables on, forwarding on).
DOCKERD_CHANGES = """
$IPT -N DOCKER
$IPT -N DOCKER-ISOLATION-STAGE-1
$IPT -N DOCKER-USER
$IPT -P FORWARD DROP
$IPT -A FORWARD -j DOCKER-USER
$IPT -A FORWARD -o docker0 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT
$IPT -t nat -N DOCKER
$IPT -t nat -A POSTROUTING -s 172.17.0.0/16 ! -o docker0 -j MASQUERADE
$IPT -t nat -A PREROUTING -m addrtype --dst-type LOCAL -j DOCKER
ip link add docker0 type bridge
sysctl -q -w net.ipv4.ip_forward=1
"""


def _need(*commands):
    missing = [c for c in commands if shutil.which(c) is None]
    reason = None
    if os.geteuid() != 0:
        reason = "network namespaces need root"
    elif missing:
        reason = f"{', '.join(missing)} not installed (apt-get install iptables nftables iproute2)"
    if reason:
        if REQUIRED:
            pytest.fail(f"{reason} (QUIRE_REQUIRE_SERVICES=1: CI must run this test)")
        pytest.skip(reason)


@pytest.fixture
def netns():
    """Run a bash script inside a new, empty network namespace; returns (exit code, stdout, stderr)."""
    _need("ip", "nft", "iptables", "iptables-legacy")
    name = f"quire-test-{uuid.uuid4().hex[:8]}"
    made = subprocess.run(["ip", "netns", "add", name], capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot make a network namespace here: {made.stderr.strip()}")

    def run(script, iptables="iptables"):
        env = {**os.environ, "HOSTNET_IPTABLES": iptables, "IPT": iptables}
        body = f"set -u\nsource {HELPER}\n{script}"
        done = subprocess.run(
            ["ip", "netns", "exec", name, "bash", "-c", body], capture_output=True, text=True, env=env
        )
        return done.returncode, done.stdout, done.stderr

    yield run
    subprocess.run(["ip", "netns", "delete", name], capture_output=True)


def _run_round_trip(run, tmp_path, setup="", iptables="iptables"):
    """State before, then save, dockerd's changes, restore; returns the states before and after."""
    code, _, err = run(
        f"""T={tmp_path}
{setup}
hostnet_state >"$T/before"
hostnet_save "$T/saved"
{DOCKERD_CHANGES}
hostnet_state >"$T/during"
hostnet_restore "$T/saved"; echo "restore=$?" >"$T/restore"
hostnet_state >"$T/after"
""",
        iptables=iptables,
    )
    assert code == 0, err
    before, during, after = ((tmp_path / name).read_text() for name in ("before", "during", "after"))
    assert during != before, "the simulated dockerd changed nothing: the test would prove nothing"
    assert (tmp_path / "restore").read_text().strip() == "restore=0", err
    return before, after


def test_from_a_machine_with_no_tables_everything_dockerd_made_is_gone(netns, tmp_path):
    code, out, _ = netns("nft list tables; iptables-save | wc -l")
    assert out.split() == ["0"], "a new namespace should start with no tables and an empty iptables-save"
    before, after = _run_round_trip(netns, tmp_path)
    assert after == before
    code, out, _ = netns("nft list tables")
    assert out.strip() == "", "tables that did not exist before must be deleted, not left empty"


def test_existing_tables_keep_their_rules_and_policies(netns, tmp_path):
    setup = """
iptables -A INPUT -s 192.0.2.7 -j DROP
iptables -t nat -N KEEP-ME
ip6tables -A INPUT -s 2001:db8::7 -j DROP
"""
    before, after = _run_round_trip(netns, tmp_path, setup=setup)
    assert after == before
    assert "192.0.2.7" in after and "KEEP-ME" in after and "2001:db8::7" in after
    assert "DOCKER" not in after and ":FORWARD DROP" not in after


def test_the_legacy_backend_is_put_back_too(netns, tmp_path):
    code, _, err = netns("iptables-legacy -S >/dev/null", iptables="iptables-legacy")
    if code != 0:
        pytest.skip(f"this kernel has no legacy iptables: {err.strip()}")
    before, after = _run_round_trip(
        netns, tmp_path, setup="iptables-legacy -A INPUT -s 192.0.2.8 -j DROP", iptables="iptables-legacy"
    )
    assert after == before
    assert "192.0.2.8" in after and "DOCKER" not in after


def test_the_state_check_sees_what_a_bare_iptables_save_misses(netns):
    """The old save/restore's blind spot: dockerd's rules left behind show in hostnet_state's diff."""
    code, out, err = netns(f"""
before=$(hostnet_state)
iptables-save >/tmp/empty-copy-$$   # what the old helper saved: nothing
{DOCKERD_CHANGES}
[ -s /tmp/empty-copy-$$ ] && iptables-restore </tmp/empty-copy-$$
rm -f /tmp/empty-copy-$$
[ "$(hostnet_state)" = "$before" ] && echo same || echo differs
""")
    assert out.strip().splitlines()[-1] == "differs", err


def test_nf_tables_without_nft_refuses_to_save_rather_than_save_nothing(netns, tmp_path):
    code, _, err = netns(f"HOSTNET_NFT=/nonexistent/nft; hostnet_save {tmp_path}/saved")
    assert code != 0
    assert "needs the nft command" in err
