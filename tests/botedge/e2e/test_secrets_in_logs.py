"""A full bot edge run at DEBUG: no token or secret in any line any process wrote."""

from __future__ import annotations

import json
import signal

from tests.botedge.conftest import message
from tests.botedge.e2e.conftest import Edge
from tests.conftest import HTTP, SECRETS


def test_full_run_at_debug__no_token_in_any_log_line(edge: Edge) -> None:
    hooked, hooked_token, hooked_secret = edge.add_bot(9301, mode="webhook")
    polled, polled_token, _ = edge.add_bot(9302, mode="polling")
    _, revoked_token, _ = edge.add_bot(9303, mode="polling")
    edge.sim_post("/_sim/bots/9303/revoke", {})
    edge.sim_post("/_sim/faults", {"rate_429": 0.1, "rate_5xx": 0.05, "retry_after": 1})
    debug = {"LOG_LEVEL": "DEBUG"}
    api = edge.start_api(**debug)
    edge.start_worker(**debug)
    edge.start_worker(**debug)
    for n in range(10):
        HTTP.post(
            f"{api.url}/telegram/{hooked}/webhook",
            content=json.dumps(message(n + 1, 6000 + n % 3, f"w{n}")),
            headers={"X-Telegram-Bot-Api-Secret-Token": hooked_secret},
        )
        edge.sim_post("/_sim/messages", {"token": polled_token, "user_id": 6100, "text": f"p{n}"})
    # A request carrying a wrong secret and the service token.
    HTTP.post(
        f"{api.url}/telegram/{hooked}/webhook",
        content=b"{}",
        headers={"X-Telegram-Bot-Api-Secret-Token": hooked_token},
    )
    HTTP.get(
        f"{api.url}/internal/inbox/dead",
        headers={"Authorization": f"Bearer {SECRETS['SERVICE_TOKEN']}"},
    )
    edge.wait_until(
        lambda: (
            len(edge.sim_get("/_sim/sent", bot_id=9301)) == 10
            and len(edge.sim_get("/_sim/sent", bot_id=9302)) == 10
        ),
        60,
        "every reply",
    )
    # Stopped, so every line each process will ever write is in its log, shutdown's too.
    processes = [*edge.workers, api]
    for process in processes:
        process.signal(signal.SIGTERM)
    for process in processes:
        assert process.wait(timeout=30) == 0
    logs = {p.name + str(p.proc.pid): p.output() for p in processes}
    everything = "\n".join(logs.values())
    # DEBUG really was on, and the Bot API traffic was logged.
    assert '"level": "DEBUG"' in everything
    assert "Bot API sendMessage: 200" in everything
    assert "Bot API getUpdates: 200" in everything
    secrets = {
        "hooked token": hooked_token,
        "polled token": polled_token,
        "revoked token": revoked_token,
        "webhook secret": hooked_secret,
        "token secret part": hooked_token.split(":", 1)[1],
        "service token": SECRETS["SERVICE_TOKEN"],
        "bot token key": SECRETS["BOT_TOKEN_KEY"],
    }
    leaks = {
        (name, where)
        for name, value in secrets.items()
        for where, text in logs.items()
        if value in text
    }
    assert leaks == set()
    assert polled
