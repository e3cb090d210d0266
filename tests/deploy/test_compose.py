"""compose.yaml checked as a file; `make test-deploy` brings it up (tests/deploy/stack)."""

from __future__ import annotations

import importlib.util
import re
import tomllib
from typing import Any

import pytest
import setuptools
import yaml

from billing import sweeper
from billing.settings import read as read_billing
from botedge.settings import read as read_botedge
from panel_api.settings import read as read_panel
from shared.settings import Reader
from tests.conftest import ROOT, SECRETS

COMPOSE = ROOT / "compose.yaml"
APP_SERVICES = ("billing", "botedge-api", "botedge-worker", "panel-api")


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return dict(yaml.safe_load(COMPOSE.read_text()))


def variables_read(command: list[str]) -> set[str]:
    """The names a service's settings ask for, recorded by running its real reader."""
    env = {**SECRETS, "DATABASE_URL": "postgresql://u:p@h/db"}
    module = command[2]
    reader = Reader(env)
    if module == "billing" and "sweep" in command:
        sweeper.read(reader)
    elif module == "billing":
        read_billing(reader)
    elif module == "botedge" and "prune" in command:
        # What `python -m botedge prune` reads.
        reader.database_url()
    elif module == "botedge":
        read_botedge(reader, command[command.index("--role") + 1])
    elif module == "panel_api":
        read_panel(reader)
    elif module == "shared.migrate":
        return {"DATABASE_URL", "LOG_LEVEL", "MIGRATIONS_DIR"}
    else:
        raise AssertionError(f"unknown entry point {module}")
    return set(reader.names)


def test_compose__every_command_is_a_real_entry_point(compose: dict[str, Any]) -> None:
    for name, service in compose["services"].items():
        if service.get("image") in ("postgres:18", "caddy:2"):
            continue
        command = service["command"]
        assert command[:2] == ["python", "-m"], name
        assert importlib.util.find_spec(command[2]) is not None, f"{name}: {command[2]}"
        main_module = f"{command[2]}.__main__" if command[2] != "shared.migrate" else command[2]
        assert importlib.util.find_spec(main_module) is not None, name


def test_compose__every_variable_set_is_one_the_settings_read(compose: dict[str, Any]) -> None:
    for name in (*APP_SERVICES, "migrate", "sweep", "prune"):
        service = compose["services"][name]
        # libpq reads PGPASSWORD itself, whatever the entry point.
        read = variables_read(service["command"]) | {"PGPASSWORD"}
        set_here = set(service["environment"])
        assert set_here - read == set(), f"{name} sets variables nothing reads"


def test_compose__apps_wait_for_migrations_and_have_healthchecks(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert services["postgres"]["image"] == "postgres:18"
    assert "healthcheck" in services["postgres"]
    assert any(v.startswith("pgdata:") for v in services["postgres"]["volumes"])
    assert services["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    for name in APP_SERVICES:
        service = services[name]
        assert service["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
        test = " ".join(service["healthcheck"]["test"])
        port = service["environment"]["PORT"]
        assert f"127.0.0.1:{port}/readyz" in test, name


def test_compose__published_ports_bind_loopback_only(compose: dict[str, Any]) -> None:
    for name, service in compose["services"].items():
        if name == "caddy":
            continue
        for mapping in service.get("ports", []):
            assert str(mapping).startswith("127.0.0.1:"), f"{name} publishes {mapping}"
    # A scalable worker cannot publish a fixed host port.
    assert "ports" not in compose["services"]["botedge-worker"]


def test_compose__env_example_covers_every_required_variable() -> None:
    example = (ROOT / ".env.example").read_text()
    required = set(re.findall(r"\$\{([A-Z_]+):\?", COMPOSE.read_text()))
    defined = set(re.findall(r"^([A-Z_]+)=", example, re.MULTILINE))
    assert required - defined == set()


def test_compose__the_password_lives_once_ports_move_and_images_carry_their_version(
    compose: dict[str, Any],
) -> None:
    text = COMPOSE.read_text()
    services = compose["services"]
    # Nowhere but POSTGRES_PASSWORD: no URL with a password inside to keep in step by hand.
    assert re.search(r"postgresql://[^@\s]*:[^@\s]*@", text) is None
    for name in (*APP_SERVICES, "migrate", "prune"):
        assert services[name]["environment"]["PGPASSWORD"].startswith("${POSTGRES_PASSWORD"), name
    for name, variable in (("billing", "BILLING_PORT"), ("botedge-api", "BOTEDGE_PORT")):
        assert services[name]["ports"][0].startswith(f"127.0.0.1:${{{variable}:-"), name
    assert services["panel-api"]["ports"][0].startswith("127.0.0.1:${PANEL_PORT:-")
    for name in (*APP_SERVICES, "migrate", "sweep", "prune"):
        # Built where it is used (never pulled from a registry), under a version, not latest.
        assert services[name]["build"] == ".", name
        assert services[name]["image"] == "gatehouse:${GATEHOUSE_VERSION:-0.2.0-dev}", name
    for name in APP_SERVICES:
        assert services[name]["healthcheck"]["start_period"] == "30s", name
    backup = services["backup"]
    assert backup["image"] == "postgres:18" and "pg_dump --format=custom" in " ".join(
        backup["command"]
    )
    assert "./backups:/backups" in backup["volumes"]
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {"node_modules", "tests", "services/simulators"} <= set(ignored)


def test_compose__https_in_front_is_a_profile_routing_webhooks_and_the_panel(
    compose: dict[str, Any],
) -> None:
    caddy = compose["services"]["caddy"]
    assert caddy["profiles"] == ["https"]
    assert sorted(caddy["ports"]) == ["${HTTPS_PORT:-443}:443", "${HTTP_PORT:-80}:80"]
    # A fixed address, so that TRUSTED_PROXIES names the proxy and nothing else on the network.
    address = caddy["networks"]["default"]["ipv4_address"]
    assert address == "${GATEHOUSE_PROXY_ADDRESS:-172.28.0.250}"
    assert "./Caddyfile:/etc/caddy/Caddyfile:ro" in caddy["volumes"]
    routes = (ROOT / "Caddyfile").read_text()
    for route, upstream in (
        ("/telegram/*", "botedge-api:8002"),
        ("/v1/webhooks/*", "billing:8001"),
    ):
        block = routes.split(f"handle {route} {{", 1)[1].split("}", 1)[0]
        assert f"reverse_proxy {upstream}" in block, route
    assert "Strict-Transport-Security" in routes
    # /internal never leaves the host.
    assert "handle /internal/* {\n\t\trespond 404" in routes


def test_dockerfile__installs_the_project_and_runs_unprivileged() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "pip install" in dockerfile
    assert re.search(r"^USER \w+", dockerfile, re.MULTILINE)


def image_packages() -> set[str]:
    """The top-level packages the image installs: what setuptools finds, by the root
    pyproject's `where` list, in the folders the Dockerfile copies."""
    copied = re.findall(r"^COPY (\S+) ", (ROOT / "Dockerfile").read_text(), re.MULTILINE)
    where = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"][
        "find"
    ]["where"]
    found = set()
    for folder in where:
        if any(folder == source or folder.startswith(source + "/") for source in copied):
            found |= {name.split(".")[0] for name in setuptools.find_packages(ROOT / folder)}
    return found


def test_dockerfile__the_image_holds_the_services_and_no_simulator() -> None:
    copied = re.findall(r"^COPY (\S+) ", (ROOT / "Dockerfile").read_text(), re.MULTILINE)
    assert not [source for source in copied if "services/simulators".startswith(source)]
    assert "migrations" in copied
    assert image_packages() == {"shared", "billing", "botedge", "panel_api"}
    # The simulators are a distribution of their own, installed by `make` beside the services.
    assert importlib.util.find_spec("simulators.telegram") is not None
