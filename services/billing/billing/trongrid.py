"""Reading TronGrid (java-tron's HTTP API): a transaction, its receipt, and whether it is
solidified. Read-only: no key to sign with exists anywhere in the system.

Whatever stops an answer (429, a quota 403, 5xx, a timeout, a body that is not java-tron's)
is `TronGridUnavailable`: the claim waits, it is never refused for it. Calls go through
TronGrid's breaker: while it is open none is made, and claims keep their next check. The
API key goes in the
`TRON-PRO-API-KEY` header to whatever `TRONGRID_URL` is (tronpy's client sends it only to
hosts named trongrid) and is never logged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from shared.breaker import Breaker, BreakerOpen, Breakers, guarded
from shared.settings import Secret


class TronGridUnavailable(Exception):
    """TronGrid could not be asked or did not answer: try again later."""


def _failing(response: httpx.Response) -> bool:
    """A 5xx, or a 200 that is not java-tron's answer ({"Error": ...} from a node in trouble,
    not JSON): TronGrid failing. A 429 or a quota's 403 is it answering, and asking for quiet."""
    if response.status_code >= 500:
        return True
    if response.status_code != 200:
        return False
    try:
        body = response.json()
    except ValueError:
        return True
    return not isinstance(body, dict) or "Error" in body


@dataclass(frozen=True)
class Lookup:
    """`wallet/gettransactionbyid`, `wallet/gettransactioninfobyid` and
    `walletsolidity/gettransactioninfobyid`; `{}` where TronGrid does not know the hash."""

    tx: dict[str, Any]
    info: dict[str, Any]
    solid: dict[str, Any]

    @property
    def found(self) -> bool:
        return bool(self.tx) and bool(self.info)


class TronGrid:
    def __init__(
        self,
        client: httpx.AsyncClient,
        base_url: str,
        api_key: Secret | None = None,
        breakers: Breakers | None = None,
    ) -> None:
        self.client = client
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.breaker: Breaker = (breakers or Breakers()).get(
            "trongrid", urlsplit(self.base_url).netloc
        )

    async def lookup(self, tx_hash: str) -> Lookup:
        tx = await self._post("wallet/gettransactionbyid", tx_hash)
        if not tx:
            return Lookup({}, {}, {})
        info = await self._post("wallet/gettransactioninfobyid", tx_hash)
        if not info:
            return Lookup(tx, {}, {})
        solid = await self._post("walletsolidity/gettransactioninfobyid", tx_hash)
        return Lookup(tx, info, solid)

    async def _post(self, path: str, tx_hash: str) -> dict[str, Any]:
        headers = {"TRON-PRO-API-KEY": self.api_key.reveal()} if self.api_key else {}
        try:
            response = await guarded(
                self.breaker,
                lambda: self.client.post(
                    f"{self.base_url}/{path}",
                    json={"value": tx_hash, "visible": True},
                    headers=headers,
                    timeout=10.0,
                ),
                _failing,
            )
        except BreakerOpen as error:
            raise TronGridUnavailable(f"{path}: {error}") from None
        except httpx.HTTPError as error:
            raise TronGridUnavailable(f"{path}: {type(error).__name__}") from None
        if response.status_code != 200:
            raise TronGridUnavailable(f"{path}: HTTP {response.status_code}")
        try:
            body = response.json()
        except ValueError:
            raise TronGridUnavailable(f"{path}: not JSON") from None
        if not isinstance(body, dict) or "Error" in body:
            # java-tron's {"Error": "..."}: a node in trouble (or rate-limited), not an answer.
            raise TronGridUnavailable(f"{path}: {str(body)[:200]}")
        return body
