"""docker/compose.milvus.yml as Compose reads it over docker/compose.yml. Its images cannot be pulled on these
machines, so the stack is never started here: this checks what can be, that Compose accepts the override and
that it points the web server and the workers at a healthy Milvus."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.slow  # runs docker-compose as its own process

DOCKER = Path(__file__).resolve().parents[2] / "docker"


def test_the_milvus_override_points_quire_at_a_healthy_milvus(tmp_path):
    if not shutil.which("docker-compose"):
        if os.environ.get("QUIRE_REQUIRE_SERVICES") == "1":
            pytest.fail("docker-compose is not installed; QUIRE_REQUIRE_SERVICES=1: CI must check the compose files")
        pytest.skip("docker-compose is not installed (apt-get install docker-compose)")
    env_file = tmp_path / "env"
    env_file.write_text("")
    read = subprocess.run(
        ["docker-compose", "-f", DOCKER / "compose.yml", "-f", DOCKER / "compose.milvus.yml", "config"],
        env={**os.environ, "POSTGRES_PASSWORD": "checkonly", "QUIRE_ENV_FILE": str(env_file)},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert read.returncode == 0, read.stderr
    services = yaml.safe_load(read.stdout)["services"]
    milvus = services["milvus"]
    assert "9091/healthz" in " ".join(milvus["healthcheck"]["test"])
    assert {"etcd", "minio"} <= set(milvus["depends_on"])
    for name in ("web", "worker"):
        environment = services[name]["environment"]
        assert environment["QUIRE_VECTOR_BACKEND"] == "milvus"
        assert environment["QUIRE_MILVUS_URI"] == "http://milvus:19530"
        assert environment["DATABASE_URL"].startswith("postgres://")  # labels stay in PostgreSQL
        assert services[name]["depends_on"]["milvus"]["condition"] == "service_healthy"
    assert "QUIRE_VECTOR_BACKEND" not in services["db"].get("environment", {})
