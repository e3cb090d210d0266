"""The sender's in-memory queue: which chat sends next, on a clock the test moves."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from botedge.outbox_store import OutboxRow
from botedge.sender import Limits
from botedge.sendqueue import SendQueue
from shared.clock import ManualClock


def row(row_id: int, chat_id: int, *, priority: int = 0, due: float = 0.0) -> OutboxRow:
    return OutboxRow(row_id, chat_id, "sendMessage", {"chat_id": chat_id}, 0, priority, due)


def no_limits(chat_id: int, method: str) -> float:
    return 0.0


def test_a_chat_sends_one_row_at_a_time_in_order_while_others_go_on() -> None:
    queue = SendQueue(no_limits, ManualClock())
    queue.add([row(1, 10), row(2, 10), row(3, 20)])
    first = queue.take()
    second = queue.take()
    assert isinstance(first, OutboxRow) and isinstance(second, OutboxRow)
    assert (first.id, second.id) == (1, 3)
    assert queue.take() is None  # chat 10's row 2 waits for row 1
    queue.finish(first)
    third = queue.take()
    assert isinstance(third, OutboxRow) and third.id == 2


def test_replies_before_broadcasts_then_oldest_first() -> None:
    queue = SendQueue(no_limits, ManualClock())
    queue.add([row(1, 10, priority=1), row(5, 20), row(3, 30)])
    taken = [queue.take() for _ in range(3)]
    assert [r.id for r in taken if isinstance(r, OutboxRow)] == [3, 5, 1]


def test_a_row_not_due__says_how_long_and_holds_its_chat() -> None:
    clock = ManualClock()
    queue = SendQueue(no_limits, clock)
    queue.add([row(1, 10, due=clock.monotonic() + 2.5), row(2, 10)])
    assert queue.take() == 2.5
    clock.advance(2.5)
    taken = queue.take()
    assert isinstance(taken, OutboxRow) and taken.id == 1


def test_put_back__retry_counted_and_delayed_and_the_chat_waits_for_it() -> None:
    clock = ManualClock()
    queue = SendQueue(no_limits, clock)
    queue.add([row(1, 10), row(2, 10)])
    first = queue.take()
    assert isinstance(first, OutboxRow)
    queue.put_back(first, 4.0, counted=True)
    assert queue.take() == 4.0
    clock.advance(4.0)
    again = queue.take()
    assert isinstance(again, OutboxRow) and (again.id, again.attempts) == (1, 1)
    queue.put_back(again)  # not sent (a pause): same attempts, due at once
    last = queue.take()
    assert isinstance(last, OutboxRow) and (last.id, last.attempts) == (1, 1)


def test_a_row_read_again_moves_with_its_chat_and_rows_gone_elsewhere_are_dropped() -> None:
    queue = SendQueue(no_limits, ManualClock())
    queue.add([row(1, -100), row(2, -100), row(3, 20)])
    in_flight = queue.take()
    assert isinstance(in_flight, OutboxRow) and in_flight.id == 1
    # The group became a supergroup: row 2 comes back under the new id; row 1 is in flight.
    assert queue.add([row(1, -200), row(2, -200)]) == 0
    # Row 3 was finished by someone else; the in-flight row 1 stays whatever the read says.
    queue.keep_only({2})
    assert 3 not in queue and 1 in queue
    moved = queue.take()
    assert isinstance(moved, OutboxRow) and (moved.id, moved.chat_id) == (2, -200)
    assert queue.take() is None


def test_an_earlier_row_arriving_late__goes_after_the_row_in_flight() -> None:
    queue = SendQueue(no_limits, ManualClock())
    queue.add([row(9, 10)])
    in_flight = queue.take()
    assert isinstance(in_flight, OutboxRow) and in_flight.id == 9
    queue.add([row(8, 10)])
    queue.finish(in_flight)
    assert 9 not in queue and 8 in queue
    late = queue.take()
    assert isinstance(late, OutboxRow) and late.id == 8
    queue.finish(late)
    assert queue.take() is None


def test_a_row_finished_while_a_read_ran__not_taken_back_from_that_read() -> None:
    """A read whose snapshot predates a send's record still shows the row pending."""
    queue = SendQueue(no_limits, ManualClock())
    queue.add([row(1, 10), row(2, 20)])
    sent = queue.take()
    assert isinstance(sent, OutboxRow) and sent.id == 1
    queue.begin_read()
    queue.finish(sent)
    # The read's answer: rows 1 and 2 pending as it saw them, and a new row 3.
    assert queue.add([row(1, 10), row(2, 20), row(3, 10)]) == 1
    assert 1 not in queue and 3 in queue
    taken = [queue.take(), queue.take()]
    assert sorted(r.id for r in taken if isinstance(r, OutboxRow)) == [2, 3]
    # A later read began after the record: the row is gone from it anyway.
    queue.begin_read()
    assert queue.add([row(4, 30)]) == 1


def drain(queue: SendQueue, limits: Limits, clock: ManualClock, count: int) -> list[float]:
    """Send `count` rows as fast as the limits allow; when each went, from the start."""
    started = clock.monotonic()
    times: list[float] = []
    while len(times) < count:
        item = queue.take()
        if isinstance(item, OutboxRow):
            wait = limits.overall.wait_time()
            if wait > 0:
                clock.advance(wait)
            limits.overall.take()
            limits.chat(item.chat_id).take()
            times.append(clock.monotonic() - started)
            queue.finish(item)
        else:
            assert item is not None
            clock.advance(item)
    return times


def test_bot_sends_25_a_second_when_30_chats_each_have_10_queued() -> None:
    clock = ManualClock()
    limits = Limits(clock=clock)
    queue = SendQueue(limits.chat_wait, clock)
    queue.add([row(chat * 10 + n, 1000 + chat) for chat in range(30) for n in range(10)])
    times = drain(queue, limits, clock, 150)
    per_second = Counter(int(t) for t in times)
    # The first second has the bot's burst on top; every later one runs at the full 25.
    assert [per_second[s] for s in range(1, 5)] == [25, 25, 25, 25]


def test_one_busy_chat_goes_at_its_own_pace() -> None:
    clock = ManualClock()
    limits = Limits(clock=clock)
    queue = SendQueue(limits.chat_wait, clock)
    queue.add([row(n, 42) for n in range(1, 11)])
    times = drain(queue, limits, clock, 10)
    # Two at once (the chat's burst), then one a second.
    assert times[1] < 0.01 and 7.9 < times[-1] < 8.1


@settings(max_examples=200, deadline=None)
@given(
    chats=st.lists(st.integers(1, 4), min_size=1, max_size=40),
    outcomes=st.lists(st.sampled_from(["finish", "retry", "not_sent"]), max_size=200),
)
def test_each_row_finished_once_and_each_chat_in_id_order(
    chats: list[int], outcomes: list[str]
) -> None:
    clock = ManualClock()
    queue = SendQueue(no_limits, clock)
    # Rows arrive in two reads, the second holding rows of lower ids (a late commit).
    rows = [row(i + 1, chat) for i, chat in enumerate(chats)]
    queue.add(rows[len(rows) // 2 :])
    queue.add(rows[: len(rows) // 2])
    finished: list[OutboxRow] = []
    in_flight: list[OutboxRow] = []
    choices = iter(outcomes)
    while len(finished) < len(rows):
        item = queue.take()
        if isinstance(item, OutboxRow):
            assert item.chat_id not in {r.chat_id for r in in_flight}
            in_flight.append(item)
            continue
        if not in_flight:
            assert item is not None
            clock.advance(item)
            continue
        done = in_flight.pop(0)
        outcome = next(choices, "finish")
        if outcome == "finish":
            queue.finish(done)
            finished.append(done)
        else:
            queue.put_back(done, 1.0 if outcome == "retry" else 0.0, counted=outcome == "retry")
    assert sorted(r.id for r in finished) == [r.id for r in rows]
    for chat in set(chats):
        ids = [r.id for r in finished if r.chat_id == chat]
        assert ids == sorted(ids)
    assert len(queue) == 0


def test_drop__a_cancelled_broadcasts_rows_leave_except_the_one_in_flight() -> None:
    queue = SendQueue(no_limits, ManualClock())

    def of(row_id: int, chat_id: int, broadcast: int | None) -> OutboxRow:
        return OutboxRow(row_id, chat_id, "sendMessage", {}, 0, 1, 0.0, broadcast)

    queue.add([of(1, 10, 7), of(2, 20, 7), of(3, 20, 8), of(4, 30, None), of(5, 10, 7)])
    first = queue.take()
    assert isinstance(first, OutboxRow) and first.id == 1
    assert queue.drop(lambda row: row.broadcast_id == 7) == 2
    assert 1 in queue and 2 not in queue and 5 not in queue and len(queue) == 3
    queue.finish(first)
    taken = []
    while isinstance(item := queue.take(), OutboxRow):
        taken.append(item.id)
        queue.finish(item)
    assert taken == [3, 4]
