"""The profile's own-time table, read from py-spy's raw (collapsed) output."""

from __future__ import annotations

import pytest

from loadtest.profile import ROOT, own_time


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
