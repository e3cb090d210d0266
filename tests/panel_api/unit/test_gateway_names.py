"""The gateway names each API's schema states are billing's list."""

from __future__ import annotations

import typing

from billing.gateways import GATEWAYS, STARS, GatewayName
from panel_api.operations import NewInvoice


def test_gateway_names__billing_takes_every_gateway_and_stars_the_panel_the_card_ones() -> None:
    cards = {gateway.name for gateway in GATEWAYS}
    assert set(typing.get_args(GatewayName)) == {*cards, STARS.name}
    assert set(typing.get_args(typing.get_type_hints(NewInvoice)["gateway"])) == cards
