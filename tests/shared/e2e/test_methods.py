"""Every route of every service: a method it does not declare is answered 405, problem+json,
with `Allow` naming exactly the methods that path takes (HEAD with GET)."""

from __future__ import annotations

import re

import pytest
from starlette.applications import Starlette
from starlette.routing import Route

from billing.app import create_app as billing_app
from billing.settings import load as load_billing_settings
from botedge.app import create_api_app as botedge_api_app
from botedge.settings import load as load_botedge_settings
from panel_api.app import create_app as panel_app
from shared.testing import serve_in_thread
from tests.conftest import HTTP, panel_settings, service_env

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


def declared(app: Starlette) -> dict[str, set[str]]:
    """Each path's methods, over every route that has it."""
    paths: dict[str, set[str]] = {}
    for route in app.routes:
        if isinstance(route, Route) and route.methods:
            paths.setdefault(route.path, set()).update(route.methods)
    return paths


def concrete(path: str) -> str:
    """A path the route matches: every parameter 1 (an id), or a word for a name."""
    return re.sub(r"\{[^}:]+(:int)?\}", lambda m: "1" if m.group(1) else "subgate", path)


@pytest.mark.parametrize("service", ["billing", "botedge", "panel-api"])
def test_undeclared_method__405_with_allow_naming_the_paths_methods(
    service: str, database_url: str
) -> None:
    env = service_env(database_url)
    app = {
        "billing": lambda: billing_app(load_billing_settings(env)),
        "botedge": lambda: botedge_api_app(load_botedge_settings(env, "api")),
        "panel-api": lambda: panel_app(panel_settings(database_url)),
    }[service]()
    wrong = []
    with serve_in_thread(app) as url:
        paths = declared(app)
        for path, methods in paths.items():
            for method in METHODS:
                if method in methods:
                    continue
                answer = HTTP.request(method, f"{url}{concrete(path)}")
                allow = {m.strip() for m in answer.headers.get("allow", "").split(",") if m.strip()}
                problem = answer.headers.get("content-type") == "application/problem+json"
                if answer.status_code != 405 or allow != methods or not problem:
                    wrong.append((method, path, answer.status_code, sorted(allow)))
    assert len(paths) > 5
    assert wrong == []
