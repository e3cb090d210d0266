"""The simulated TronGrid: java-tron's wallet endpoints in their `visible: true` shapes, the
price paths of the TRX rate sources, and control endpoints under `/_sim/`.

- `POST /_sim/transactions {"kind": "trx"|"usdt"|"failed"|"fake_token", "from", "to",
  "amount", "block_time"?, "solidify_after_s"?}` puts a transaction on the simulated chain and
  answers its hash. `walletsolidity/*` knows it only `solidify_after_s` after it was made.
- `POST /_sim/faults {"rate_429", "rate_5xx", "rate_timeout", "down"}`: misbehaviour.
- `POST /_sim/price {"usdt_per_trx"?, "down"?: ["coingecko", ...]}`: the rate sources.
- `GET /_sim/requests`: each lookup's path and whether it carried an API key.
- Unknown hashes answer `{}`, as java-tron does.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import random
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from tronpy.keys import to_base58check_address, to_hex_address

from shared.web import create_plain_app
from simulators.fields import fields
from simulators.pages import page_routes
from simulators.statefile import StateFile, saving

USDT_MAINNET = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"
# A TRC-20 that calls itself "Tether USD": not the official contract.
FAKE_USDT = str(to_base58check_address(bytes([0x41]) + bytes([0xEE]) * 20))
TRANSFER_TOPIC = "ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"
SOURCES = ("coingecko", "kraken", "binance")
# Anyone's address on the simulated chain: the wallet page pays from it unless told otherwise.
DEMO_PAYER = "TD5gsCwxykWsLN9aPrq2TAfNjByuZKYp4E"


@dataclass
class Faults:
    rate_429: float = 0.0
    rate_5xx: float = 0.0
    rate_timeout: float = 0.0
    down: bool = False


@dataclass
class Chain:
    usdt: str
    faults: Faults = field(default_factory=Faults)
    # hash -> (transaction, info, when it is solidified (unix seconds))
    txs: dict[str, tuple[dict[str, Any], dict[str, Any], float]] = field(default_factory=dict)
    usdt_per_trx: Decimal = Decimal("0.2475")
    sources_down: set[str] = field(default_factory=set)
    block: int = 70_000_000
    # Every lookup asked, and whether it carried an API key (never the key itself).
    requests: list[dict[str, Any]] = field(default_factory=list)
    # What was sent, newest last, for the wallet page.
    sent: list[dict[str, Any]] = field(default_factory=list)
    random: random.Random = field(default_factory=random.Random)


def snapshot(chain: Chain) -> dict[str, Any]:
    """The chain's transactions, for a restarted demo: a hash sent before the restart is
    still found after it."""
    return {
        "block": chain.block,
        "txs": [
            [tx_hash, tx, info, solid_at] for tx_hash, (tx, info, solid_at) in chain.txs.items()
        ],
        "sent": chain.sent,
    }


def restore(chain: Chain, saved: dict[str, Any]) -> None:
    chain.block = int(saved.get("block", chain.block))
    chain.txs = {
        tx_hash: (tx, info, solid_at) for tx_hash, tx, info, solid_at in saved.get("txs", [])
    }
    chain.sent = list(saved.get("sent", []))


def _word(address: str) -> str:
    return "0" * 24 + str(to_hex_address(address))[2:]


def make_transaction(chain: Chain, body: dict[str, Any]) -> str:
    kind = str(body["kind"])
    sender, recipient, amount = str(body["from"]), str(body["to"]), int(body["amount"])
    block_time = int(float(body.get("block_time") or time.time()) * 1000)
    chain.block += 1
    seed = f"{kind}{sender}{recipient}{amount}{block_time}{chain.block}{chain.random.random()}"
    tx_hash = hashlib.sha256(seed.encode()).hexdigest()
    ret = "REVERT" if kind == "failed" else "SUCCESS"
    info: dict[str, Any] = {
        "id": tx_hash,
        "blockNumber": chain.block,
        "blockTimeStamp": block_time,
        "contractResult": [""],
        "receipt": {"net_usage": 268},
    }
    if kind == "trx":
        contract = {
            "parameter": {
                "value": {"amount": amount, "owner_address": sender, "to_address": recipient},
                "type_url": "type.googleapis.com/protocol.TransferContract",
            },
            "type": "TransferContract",
        }
    else:
        token = FAKE_USDT if kind == "fake_token" else chain.usdt
        contract = {
            "parameter": {
                "value": {
                    "data": "a9059cbb" + _word(recipient) + f"{amount:064x}",
                    "owner_address": sender,
                    "contract_address": token,
                },
                "type_url": "type.googleapis.com/protocol.TriggerSmartContract",
            },
            "type": "TriggerSmartContract",
        }
        info.update(
            fee=13_844_850,
            contract_address=token,
            contractResult=["0" * 63 + ("0" if kind == "failed" else "1")],
            receipt={"energy_usage_total": 64_285, "net_usage": 345, "result": ret},
        )
        if kind == "failed":
            info.update(result="FAILED", resMessage="REVERT opcode executed")
        else:
            info["log"] = [
                {
                    "address": token,
                    "topics": [TRANSFER_TOPIC, _word(sender), _word(recipient)],
                    "data": f"{amount:064x}",
                }
            ]
    tx = {
        "ret": [{"contractRet": ret}],
        "signature": ["00" * 65],
        "txID": tx_hash,
        "raw_data": {
            "contract": [contract],
            "ref_block_bytes": "88ff",
            "ref_block_hash": "00" * 8,
            "expiration": block_time + 60_000,
            "timestamp": block_time - 1000,
        },
    }
    solid_at = time.time() + float(body.get("solidify_after_s") or 0)
    chain.txs[tx_hash] = (tx, info, solid_at)
    chain.sent.append(
        {"hash": tx_hash, "kind": kind, "from": sender, "to": recipient, "amount": amount}
    )
    return tx_hash


async def misbehave(chain: Chain) -> Response | None:
    faults = chain.faults
    if faults.down:
        return Response("<html>503 Service Temporarily Unavailable</html>", 503)
    roll = chain.random.random()
    if roll < faults.rate_429:
        return JSONResponse({"Error": "too many requests"}, status_code=429)
    if roll < faults.rate_429 + faults.rate_5xx:
        return Response("<html>502 Bad Gateway</html>", 502)
    if roll < faults.rate_429 + faults.rate_5xx + faults.rate_timeout:
        await asyncio.sleep(30)
        return Response("<html>504 Gateway Time-out</html>", 504)
    return None


async def lookup(request: Request) -> Response:
    chain: Chain = request.app.state.chain
    chain.requests.append(
        {"path": request.url.path, "with_key": "tron-pro-api-key" in request.headers}
    )
    refused = await misbehave(chain)
    if refused is not None:
        return refused
    if request.method == "POST":
        body = await fields(request)
        value = str(body.get("value", "")) if isinstance(body, dict) else ""
    else:
        value = request.query_params.get("value", "")
    found = chain.txs.get(value.lower())
    if found is None:
        return JSONResponse({})
    tx, info, solid_at = found
    if request.url.path.startswith("/walletsolidity/") and time.time() < solid_at:
        return JSONResponse({})
    return JSONResponse(info if "info" in request.url.path else tx)


async def now_block(request: Request) -> Response:
    chain: Chain = request.app.state.chain
    refused = await misbehave(chain)
    if refused is not None:
        return refused
    header = {"number": chain.block, "timestamp": int(time.time() * 1000)}
    return JSONResponse({"blockID": "00" * 32, "block_header": {"raw_data": header}})


async def transactions(request: Request) -> Response:
    """POST: a transaction onto the chain (from the demo payer unless `from` says otherwise),
    answered with its `tx_hash`; GET: the newest 50
    sent, newest first, and the address the wallet page pays from."""
    chain: Chain = request.app.state.chain
    if request.method == "GET":
        return JSONResponse({"transactions": chain.sent[:-51:-1], "payer": DEMO_PAYER})
    body = {"from": DEMO_PAYER, **await fields(request)}
    try:
        tx_hash = make_transaction(chain, body)
    except (KeyError, ValueError, TypeError) as error:
        return JSONResponse({"error": f"{type(error).__name__}: {error}"}, status_code=400)
    return JSONResponse({"tx_hash": tx_hash})


async def seen(request: Request) -> Response:
    chain: Chain = request.app.state.chain
    return JSONResponse(chain.requests)


async def set_faults(request: Request) -> Response:
    chain: Chain = request.app.state.chain
    body = await fields(request)
    for key, value in body.items():
        if not hasattr(chain.faults, key):
            return JSONResponse({"error": f"unknown fault {key!r}"}, status_code=400)
        setattr(chain.faults, key, type(getattr(chain.faults, key))(value))
    return JSONResponse(chain.faults.__dict__)


async def set_price(request: Request) -> Response:
    chain: Chain = request.app.state.chain
    body = await fields(request)
    if "usdt_per_trx" in body:
        chain.usdt_per_trx = Decimal(str(body["usdt_per_trx"]))
    if "down" in body:
        chain.sources_down = {str(name) for name in body["down"]}
    return JSONResponse(
        {"usdt_per_trx": str(chain.usdt_per_trx), "down": sorted(chain.sources_down)}
    )


def price(source: str, shape: Any) -> Any:
    async def answer(request: Request) -> Response:
        chain: Chain = request.app.state.chain
        if source in chain.sources_down:
            return Response("<html>503</html>", 503)
        return JSONResponse(shape(str(chain.usdt_per_trx)))

    return answer


def create_app(chain: Chain | None = None) -> Starlette:
    paths = (
        "/wallet/gettransactionbyid",
        "/walletsolidity/gettransactionbyid",
        "/wallet/gettransactioninfobyid",
        "/walletsolidity/gettransactioninfobyid",
    )
    app = create_plain_app(
        [
            *(Route(path, lookup, methods=["GET", "POST"]) for path in paths),
            Route("/wallet/getnowblock", now_block, methods=["GET", "POST"]),
            Route("/walletsolidity/getnowblock", now_block, methods=["GET", "POST"]),
            Route("/_sim/transactions", transactions, methods=["GET", "POST"]),
            Route("/_sim/faults", set_faults, methods=["POST"]),
            Route("/_sim/requests", seen, methods=["GET"]),
            Route("/_sim/price", set_price, methods=["POST"]),
            # Each rate source's price path, in that source's shape.
            Route(
                "/api/v3/simple/price",
                price("coingecko", lambda p: {"tron": {"usd": float(p)}}),
                methods=["GET"],
            ),
            Route(
                "/0/public/Ticker",
                price(
                    "kraken",
                    lambda p: {"error": [], "result": {"TRXUSD": {"c": [p, "100.00000000"]}}},
                ),
                methods=["GET"],
            ),
            Route(
                "/api/v3/ticker/price",
                price("binance", lambda p: {"symbol": "TRXUSDT", "price": p}),
                methods=["GET"],
            ),
            *page_routes(Path(__file__).parent / "static"),
        ]
    )
    app.state.chain = chain = chain or Chain(os.environ.get("TRON_USDT_CONTRACT") or USDT_MAINNET)
    state = StateFile.restored(
        lambda: snapshot(chain), lambda: chain.block, lambda saved: restore(chain, saved)
    )

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with saving(state):
            yield

    app.router.lifespan_context = lifespan
    return app
