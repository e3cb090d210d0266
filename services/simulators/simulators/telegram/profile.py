"""What a bot tells people about itself in Telegram, per language: its command list
(`setMyCommands`, `getMyCommands`) and its descriptions (`setMyDescription`,
`setMyShortDescription` and their getters), each with an optional two-letter `language_code`;
without one, the default for languages set no value of their own. Checked as Telegram checks
them: a command is 1-32 of a-z, 0-9 and _, its description 1-256 characters, at most 100
commands, a description up to 512 characters and a short one up to 120."""

from __future__ import annotations

import json
import re
from typing import Any

from simulators.telegram.botapi import Method
from simulators.telegram.state import ApiError, Bot, World

Params = dict[str, Any]
_COMMAND = re.compile(r"[a-z0-9_]{1,32}")
_LANGUAGE = re.compile(r"[a-z]{2}")


def _language(params: Params) -> str:
    language = str(params.get("language_code") or "")
    if language and not _LANGUAGE.fullmatch(language):
        raise ApiError(400, "Bad Request: invalid language code specified")
    return language


def _profile(world: World, bot: Bot) -> dict[str, dict[str, Any]]:
    return world.profiles.setdefault(bot.id, {"commands": {}, "description": {}, "short": {}})


def set_my_commands(world: World, bot: Bot, params: Params) -> Any:
    commands = params.get("commands")
    if isinstance(commands, str):
        commands = json.loads(commands)
    if not isinstance(commands, list) or len(commands) > 100:
        raise ApiError(400, "Bad Request: commands must be an array of at most 100 commands")
    for command in commands:
        name = str((command or {}).get("command", ""))
        text = str((command or {}).get("description", ""))
        if not _COMMAND.fullmatch(name):
            raise ApiError(400, "Bad Request: BOT_COMMAND_INVALID")
        if not 1 <= len(text) <= 256:
            raise ApiError(400, "Bad Request: BOT_COMMAND_DESCRIPTION_INVALID")
    _profile(world, bot)["commands"][_language(params)] = [
        {"command": c["command"], "description": c["description"]} for c in commands
    ]
    return True


def get_my_commands(world: World, bot: Bot, params: Params) -> Any:
    by_language = _profile(world, bot)["commands"]
    return by_language.get(_language(params), by_language.get("", []))


def _set_text(kind: str, limit: int) -> Method:
    def set_text(world: World, bot: Bot, params: Params) -> Any:
        text = str(params.get(kind if kind == "description" else "short_description") or "")
        if len(text) > limit:
            raise ApiError(400, f"Bad Request: {kind} is too long")
        _profile(world, bot)["description" if kind == "description" else "short"][
            _language(params)
        ] = text
        return True

    return set_text


def _get_text(kind: str) -> Method:
    field = "description" if kind == "description" else "short"
    key = "description" if kind == "description" else "short_description"

    def get_text(world: World, bot: Bot, params: Params) -> Any:
        by_language = _profile(world, bot)[field]
        return {key: by_language.get(_language(params), by_language.get("", ""))}

    return get_text


METHODS: dict[str, Method] = {
    "setmycommands": set_my_commands,
    "getmycommands": get_my_commands,
    "setmydescription": _set_text("description", 512),
    "getmydescription": _get_text("description"),
    "setmyshortdescription": _set_text("short", 120),
    "getmyshortdescription": _get_text("short"),
}
