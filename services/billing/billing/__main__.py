"""`python -m billing`: serve billing's HTTP API. `python -m billing sweep`: run the sweep.
`python -m billing reconcile [--fix] [--since DATE]`: the ledger against its history."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from shared import lifecycle
from shared import logging as jsonlog
from shared.settings import exit_on_error


def serve() -> None:
    from billing.app import create_app
    from billing.settings import load

    settings = exit_on_error(lambda: load(os.environ))
    jsonlog.configure("billing", settings.common.log_level, settings.secrets)
    lifecycle.run_service(create_app(settings), settings.common)


def sweep(every: float | None) -> int:
    from billing import sweeper

    settings = exit_on_error(lambda: sweeper.load(os.environ))
    jsonlog.configure("billing-sweep", settings.log_level, [settings.sweep_token])
    return sweeper.run(settings, every)


def reconcile(fix: bool, since: str | None) -> int:
    """Asks the running billing (`BILLING_URL`, `SERVICE_TOKEN`) and prints its report as
    JSON. Exits 0 when nothing differs (with --fix: nothing left unfixed), 1 when something
    does, 2 when something could not be checked (billing, botedge or Telegram not answering,
    or a channel or bot that cannot be asked). Payers who have not used their invite yet are no
    difference."""
    import json

    import httpx

    from shared.settings import Reader

    reader = Reader(os.environ)
    url = exit_on_error(lambda: reader.url("BILLING_URL", "http://127.0.0.1:8001"))
    token = exit_on_error(lambda: reader.secret("SERVICE_TOKEN", min_bytes=16))
    # A bare date is midnight UTC.
    if since and len(since) == 10:
        since = f"{since}T00:00:00Z"
    params = {"since": since} if since else {}
    try:
        answer = httpx.request(
            "POST" if fix else "GET",
            f"{url}/internal/reconcile{'/fix' if fix else ''}",
            params=params,
            headers={"Authorization": f"Bearer {token.reveal()}"},
            timeout=600,
        )
        report = answer.json()
    except (httpx.HTTPError, ValueError) as error:
        print(f"reconcile: billing at {url} did not answer: {error}", file=sys.stderr)
        return 2
    print(json.dumps(report, indent=2, ensure_ascii=False))
    if answer.status_code != 200:
        return 2
    return reconcile_exit_code(report, fix)


def reconcile_exit_code(report: dict[str, Any], fixed: bool) -> int:
    """2 when a channel or bot was left unchecked, else 1 when a difference is left, else 0."""
    if any(c["unchecked"] for c in [*report["channels"], *report["stars"]]):
        return 2
    ledger = report["ledger"]
    left = len(ledger["differences"]) - len(ledger.get("fixed", []))
    if not fixed:
        left += sum(len(c["intruders"]) + len(c["missing"]) for c in report["channels"])
        left += sum(len(b["missing_here"]) for b in report["stars"])
    return 1 if left else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m billing")
    commands = parser.add_subparsers(dest="command")
    commands.add_parser("serve", help="serve the HTTP API (the default)")
    sweep_parser = commands.add_parser("sweep", help="call POST /v1/sweep until nothing is due")
    sweep_parser.add_argument(
        "--every", type=float, default=None, metavar="SECONDS", help="repeat on this interval"
    )
    check = commands.add_parser(
        "reconcile", help="each membership against the replay of its history (GET, or --fix)"
    )
    check.add_argument("--fix", action="store_true", help="write the history's state")
    check.add_argument("--since", metavar="DATE", help="only memberships changed since (ISO)")
    args = parser.parse_args(argv)
    if args.command == "reconcile":
        return reconcile(args.fix, args.since)
    if args.command == "sweep":
        if args.every is not None and args.every <= 0:
            parser.error("--every must be positive")
        return sweep(args.every)
    serve()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
