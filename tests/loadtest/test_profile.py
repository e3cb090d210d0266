"""The profile's own-time table, read from py-spy's raw (collapsed) output."""

from __future__ import annotations

from pathlib import Path

import pytest

from loadtest.profile import ROOT, own_time, own_time_in


def test_own_time__counts_each_stacks_last_frame_by_function_and_file() -> None:
    raw = "\n".join(
        [
            f"<module> ({ROOT}/services/botedge/botedge/__main__.py:9);"
            "run (/usr/lib/python3.11/asyncio/runners.py:118) 30",
            f"handle ({ROOT}/services/botedge/botedge/consumer.py:150);"
            "_communicate_gen (/v/lib/python3.11/site-packages/psycopg/_pipeline_base.py:112) 50",
            f"handle ({ROOT}/services/botedge/botedge/consumer.py:151);"
            "_communicate_gen (/v/lib/python3.11/site-packages/psycopg/_pipeline_base.py:116) 15",
            "a broken line",
            "<native> 5",
        ]
    )
    top, samples = own_time(raw, top=2)
    assert samples == 100
    # Two lines of one function are one entry; only the `top` largest are listed.
    assert top == [
        ("_communicate_gen (psycopg/_pipeline_base.py)", pytest.approx(0.65)),
        ("run (asyncio/runners.py)", pytest.approx(0.30)),
    ]


def test_own_time_in__a_file_with_bytes_that_are_not_utf8_is_read(tmp_path: Path) -> None:
    # py-spy wrote one under reference-2: a frame's name cut mid-character.
    path = tmp_path / "worker-1.txt"
    path.write_bytes(
        b"run (/usr/lib/python3.11/asyncio/runners.py:118) 30\n"
        b"<native \xfa\xe2> 10\n"
        b"handle (/srv/botedge/consumer.py:150);wait (psycopg/waiting.py:255) 60\n"
    )
    top, samples = own_time_in(path)
    assert samples == 100
    assert top[0] == ("wait (psycopg/waiting.py)", pytest.approx(0.6))
