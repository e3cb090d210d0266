"""The team, roles and the audit log over real HTTP."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import httpx
import pytest

from panel_api.access import RANK, Role
from panel_api.app import create_app
from panel_api.contract import OPERATIONS
from panel_api.seed import seed
from shared.testing import Cluster, serve_in_thread
from tests.conftest import HTTP, TEST_BCRYPT_ROUNDS, panel_settings
from tests.panel_api.e2e.conftest import call_as
from tests.panel_api.e2e.test_sessions import refresh, refresh_cookie

OWNER_PASSWORD = "correct horse battery"
PASSWORD = "member password 1"


@dataclass
class Panel:
    url: str
    tokens: dict[Role, str]
    ids: dict[Role, int]

    def call(
        self, method: str, path: str, role: Role, json: object = None, **headers: str
    ) -> httpx.Response:
        return call_as(self.tokens[role], method, f"{self.url}{path}", json, **headers)


def login(url: str, email: str, password: str) -> str:
    response = HTTP.post(f"{url}/v1/auth/login", json={"email": email, "password": password})
    assert response.status_code == 200, response.text
    return str(response.json()["access_token"])


@contextmanager
def team_panel(database_url: str) -> Iterator[Panel]:
    """A panel with its owner and one member of each other role, each signed in."""
    assert seed(database_url, "owner@example.com", OWNER_PASSWORD, TEST_BCRYPT_ROUNDS) is True
    with serve_in_thread(create_app(panel_settings(database_url))) as url:
        owner = login(url, "owner@example.com", OWNER_PASSWORD)
        tokens, ids = {Role.OWNER: owner}, {}
        for role in (Role.ADMIN, Role.EDITOR, Role.VIEWER):
            created = HTTP.post(
                f"{url}/v1/team",
                json={"email": f"{role}@example.com", "role": role.value, "password": PASSWORD},
                headers={"Authorization": f"Bearer {owner}"},
            )
            assert created.status_code == 201, created.text
            ids[role] = created.json()["id"]
            tokens[role] = login(url, f"{role}@example.com", PASSWORD)
        me = HTTP.get(f"{url}/v1/me", headers={"Authorization": f"Bearer {owner}"})
        ids[Role.OWNER] = me.json()["id"]
        yield Panel(url, tokens, ids)


@pytest.fixture
def panel(database_url: str) -> Iterator[Panel]:
    with team_panel(database_url) as made:
        yield made


@pytest.fixture(scope="module")
def roles_panel(pg_cluster: Cluster, template_database: str) -> Iterator[Panel]:
    """One panel for the role checks of every route: they change nothing a later one reads
    (bodies are empty, ids name nothing but the viewer, whom only an empty PATCH touches)."""
    name = pg_cluster.create_database(template_database)
    try:
        with team_panel(pg_cluster.url(name)) as made:
            yield made
    finally:
        pg_cluster.drop_database(name)


# Each guarded route with the least role it takes.
LEAST_ROLE = {key: op.least for key, op in OPERATIONS.items() if op.least is not None}


def concrete(path: str, panel: Panel) -> str:
    """The route with its ids filled in: the viewer for a member, 1 for anything else."""
    path = path.replace("{member_id:int}", str(panel.ids[Role.VIEWER]))
    return re.sub(r"\{\w+:int\}", "1", path)


@pytest.mark.parametrize(("method", "path"), sorted(LEAST_ROLE))
def test_roles__every_guarded_route_with_every_role(
    roles_panel: Panel, method: str, path: str
) -> None:
    panel = roles_panel
    least = LEAST_ROLE[(method, path)]
    for role in Role:
        response = panel.call(method, concrete(path, panel), role, json={})
        if RANK[role] < RANK[least]:
            assert response.status_code == 403, (role, response.text)
            assert response.json()["type"] == "/problems/forbidden"
        else:
            # Let through: whatever the (empty) body earns, but never a refusal or a failure.
            # (No botedge or billing runs here: a route that asks one says so with 503.)
            assert response.status_code not in (401, 403), (role, response.text)
            body = response.json() if "json" in response.headers["content-type"] else {}
            unavailable = body.get("type") in (
                "/problems/botedge-unavailable",
                "/problems/billing-unavailable",
            )
            assert response.status_code < 500 or unavailable, (role, response.text)


@pytest.mark.parametrize(("method", "path"), sorted(LEAST_ROLE))
def test_roles__every_guarded_route_needs_a_token(
    roles_panel: Panel, method: str, path: str
) -> None:
    url = f"{roles_panel.url}{concrete(path, roles_panel)}"
    response = HTTP.request(method, url, json={})
    assert response.status_code == 401
    assert response.headers["content-type"] == "application/problem+json"


@pytest.mark.parametrize("change", [{"role": "admin"}, {"disabled": True}])
def test_team__the_owner_cannot_be_demoted_or_disabled(
    panel: Panel, change: dict[str, object]
) -> None:
    response = panel.call("PATCH", f"/v1/team/{panel.ids[Role.OWNER]}", Role.OWNER, json=change)
    assert response.status_code == 409
    assert panel.call("GET", "/v1/me", Role.OWNER).json()["role"] == "owner"


def test_team__a_disabled_member_is_signed_out(panel: Panel) -> None:
    response = panel.call(
        "PATCH", f"/v1/team/{panel.ids[Role.EDITOR]}", Role.OWNER, json={"disabled": True}
    )
    assert (response.status_code, response.json()["disabled"]) == (200, True)
    assert panel.call("GET", "/v1/me", Role.EDITOR).status_code == 401
    relogin = HTTP.post(
        f"{panel.url}/v1/auth/login", json={"email": "editor@example.com", "password": PASSWORD}
    )
    assert relogin.status_code == 401


def test_team__a_member_sets_their_own_password_and_their_other_sessions_end(
    panel: Panel,
) -> None:
    elsewhere = HTTP.post(
        f"{panel.url}/v1/auth/login",
        json={"email": "editor@example.com", "password": PASSWORD},
    )
    other = refresh_cookie(elsewhere)["gatehouse_refresh"].value
    wrong = panel.call(
        "POST",
        "/v1/me/password",
        Role.EDITOR,
        json={"current_password": "not it", "new_password": "a new password"},
    )
    assert wrong.status_code == 422
    assert wrong.json()["errors"] == [{"field": "current_password", "code": "wrong"}]
    short = panel.call(
        "POST",
        "/v1/me/password",
        Role.EDITOR,
        json={"current_password": PASSWORD, "new_password": "short"},
    )
    assert short.json()["errors"] == [{"field": "new_password", "code": "too-short"}]
    changed = panel.call(
        "POST",
        "/v1/me/password",
        Role.EDITOR,
        json={"current_password": PASSWORD, "new_password": "a new password"},
    )
    assert changed.status_code == 200, changed.text
    # The answer carries this session on: a token that works and a new refresh cookie.
    token = changed.json()["access_token"]
    assert call_as(token, "GET", f"{panel.url}/v1/me").json()["email"] == "editor@example.com"
    assert refresh(panel.url, refresh_cookie(changed)["gatehouse_refresh"].value).is_success
    # The session signed in elsewhere is over; the old password no longer signs in.
    assert refresh(panel.url, other).status_code == 401
    old = {"email": "editor@example.com", "password": PASSWORD}
    assert HTTP.post(f"{panel.url}/v1/auth/login", json=old).status_code == 401
    new = {"email": "editor@example.com", "password": "a new password"}
    assert HTTP.post(f"{panel.url}/v1/auth/login", json=new).status_code == 200
    audit = panel.call("GET", "/v1/audit?action=team.password", Role.OWNER).json()["items"]
    assert [(a["member_id"], a["target"]) for a in audit] == [
        (panel.ids[Role.EDITOR], f"team_member:{panel.ids[Role.EDITOR]}")
    ]


def test_team__adding_a_taken_email_is_409_and_a_second_owner_422(panel: Panel) -> None:
    taken = {"email": "ADMIN@example.com", "role": "viewer", "password": PASSWORD}
    assert panel.call("POST", "/v1/team", Role.OWNER, json=taken).status_code == 409
    owner = {"email": "new@example.com", "role": "owner", "password": PASSWORD}
    assert panel.call("POST", "/v1/team", Role.OWNER, json=owner).status_code == 422


def test_team__pages_through_a_cursor(panel: Panel) -> None:
    seen: list[int] = []
    cursor: str | None = None
    while True:
        query = "?limit=2" + (f"&cursor={cursor}" if cursor else "")
        answer = panel.call("GET", f"/v1/team{query}", Role.OWNER).json()
        seen += [item["id"] for item in answer["items"]]
        cursor = answer["next_cursor"]
        if cursor is None:
            break
    assert seen == sorted(panel.ids.values())


@pytest.mark.parametrize(
    ("query", "status"),
    [
        ("?limit=0", 422),
        ("?limit=201", 422),
        ("?limit=x", 422),
        # A cursor this API did not give out is a value the parameter cannot take.
        ("?cursor=%%%", 422),
        ("?cursor=e30=", 422),
    ],
)
def test_team__bad_limit_or_a_foreign_cursor_is_422(panel: Panel, query: str, status: int) -> None:
    response = panel.call("GET", f"/v1/team{query}", Role.OWNER)
    assert response.status_code == status, response.text


@pytest.mark.parametrize("path", ["/v1/audit", "/v1/team"])
def test_lists__a_malformed_cursor_is_422_at_the_cursor(panel: Panel, path: str) -> None:
    response = panel.call("GET", f"{path}?cursor=not-a-cursor", Role.OWNER)
    assert response.status_code == 422, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["errors"] == [{"field": "cursor", "code": "bad-format"}]


def test_audit__every_write_with_before_after_and_request_id(panel: Panel) -> None:
    changed = panel.call(
        "PATCH",
        f"/v1/team/{panel.ids[Role.VIEWER]}",
        Role.OWNER,
        json={"role": "editor", "display_name": "Vee"},
        **{"X-Request-Id": "audit-check-1"},
    )
    assert changed.status_code == 200
    entries = panel.call("GET", "/v1/audit?action=team.update", Role.OWNER).json()["items"]
    assert len(entries) == 1
    entry = entries[0]
    assert entry["member_id"] == panel.ids[Role.OWNER]
    assert entry["target"] == f"team_member:{panel.ids[Role.VIEWER]}"
    assert (entry["before"]["role"], entry["after"]["role"]) == ("viewer", "editor")
    assert entry["after"]["display_name"] == "Vee"
    assert entry["request_id"] == "audit-check-1"
    added = panel.call("GET", "/v1/audit?action=team.add", Role.OWNER).json()["items"]
    assert len(added) == 3 and all(e["before"] is None for e in added)
    # Who made it, by their email; filtered by who and by what it was done to.
    assert entry["member_email"] == "owner@example.com"
    panel.call("PATCH", "/v1/workspace", Role.OWNER, json={"language": "fa"})
    by_kind = panel.call("GET", "/v1/audit?kind=team", Role.OWNER).json()["items"]
    assert {e["action"] for e in by_kind} == {"team.add", "team.update"}
    mine = f"/v1/audit?member={panel.ids[Role.OWNER]}&kind=workspace"
    [workspace] = panel.call("GET", mine, Role.OWNER).json()["items"]
    assert (workspace["before"]["language"], workspace["after"]["language"]) == ("en", "fa")
    someone_else = f"/v1/audit?member={panel.ids[Role.ADMIN]}&kind=workspace"
    assert panel.call("GET", someone_else, Role.OWNER).json()["items"] == []


def test_workspace__time_zone_must_be_iana_and_language_en_or_fa(panel: Panel) -> None:
    good = panel.call(
        "PATCH", "/v1/workspace", Role.OWNER, json={"time_zone": "Asia/Tehran", "language": "fa"}
    )
    assert good.status_code == 200
    assert good.json()["time_zone"] == "Asia/Tehran"
    for body in ({"time_zone": "Mars/Olympus"}, {"time_zone": "../etc/passwd"}, {"language": "de"}):
        assert panel.call("PATCH", "/v1/workspace", Role.OWNER, json=body).status_code == 422
    assert panel.call("GET", "/v1/workspace", Role.VIEWER).json()["language"] == "fa"


def test_workspace__the_explorer_address_has_the_hash_in_it(panel: Panel) -> None:
    workspace = panel.call("GET", "/v1/workspace", Role.VIEWER).json()
    assert workspace["tx_explorer"] == "https://tronscan.org/#/transaction/{hash}"
    mine = "https://nile.tronscan.org/#/transaction/{hash}?from=panel"
    changed = panel.call("PATCH", "/v1/workspace", Role.OWNER, json={"tx_explorer": mine})
    assert (changed.status_code, changed.json()["tx_explorer"]) == (200, mine)
    assert changed.json()["language"] == "en"  # what the change did not name stays
    for bad in ("https://tronscan.org/", "http://x.org/{hash}", "https://a b/{hash}", "{hash}"):
        refused = panel.call("PATCH", "/v1/workspace", Role.OWNER, json={"tx_explorer": bad})
        assert refused.json()["errors"] == [{"field": "tx_explorer", "code": "bad-format"}], bad
