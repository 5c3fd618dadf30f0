"""When a group's waiting job-run reads start their job run (``ready``): a table of cases, and
drawn groups run to the end by a model of run_group's pool (streams begin in order as slots
free up; a stream that reads waits for its job run, one that does not ends when it likes): no
group ever hangs, every read is in exactly one job run, and with a slot for every stream the
whole group's reads are one job run. A set larger than a job run takes is split evenly."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kinesis_batch.serverless.gathering import ready, split


@pytest.mark.parametrize(
    ("total", "at_once", "begun", "ended", "waiting", "starts"),
    [
        (3, 8, 3, 0, 3, True),  # every stream began and waits
        (3, 8, 3, 1, 2, True),  # one had nothing new and ended: the two others go
        (3, 8, 3, 0, 2, False),  # one is still on its way to its read
        (3, 8, 2, 0, 2, False),  # a stream can still begin beside them
        (5, 2, 2, 0, 2, True),  # every slot is taken by a waiting read: nobody else can come
        (5, 2, 3, 1, 1, False),  # a slot's stream is running
        (3, 8, 3, 3, 0, False),  # nothing waits
        (1, 1, 1, 0, 1, True),
    ],
)
def test_the_waiting_reads_start_once_no_other_stream_can_come(
    total: int, at_once: int, begun: int, ended: int, waiting: int, starts: bool
) -> None:
    assert ready(total=total, at_once=at_once, begun=begun, ended=ended, waiting=waiting) is starts


@st.composite
def groups(draw: st.DrawFn) -> tuple[int, list[bool], list[int]]:
    """(at_once, whether each stream reads, the order in which runnable events happen)."""
    total = draw(st.integers(1, 12))
    reads = draw(st.lists(st.booleans(), min_size=total, max_size=total))
    return draw(st.integers(1, 6)), reads, draw(st.lists(st.integers(0, 100), min_size=4 * total, max_size=4 * total))


@given(groups())
def test_no_drawn_group_hangs_and_each_read_is_in_exactly_one_job_run(group: tuple[int, list[bool], list[int]]) -> None:
    at_once, reads, choices = group
    total = len(reads)
    begun = ended = 0
    running: list[int] = []  # began, not waiting, not ended
    waiting: list[int] = []
    read_by: dict[int, int] = {}  # stream -> the job run that read it
    jobs = 0
    picks = iter(choices)
    while ended < total:
        if begun < total and begun - ended < at_once:  # a free slot: the pool begins the next stream
            running.append(begun)
            begun += 1
        elif running:  # a running stream moves: to its read (it waits), or to its end
            stream = running.pop(next(picks, 0) % len(running))
            if reads[stream]:
                waiting.append(stream)
            else:
                ended += 1
        else:
            raise AssertionError(f"hung: {len(waiting)} reads wait, nothing else can happen")
        if ready(total=total, at_once=at_once, begun=begun, ended=ended, waiting=len(waiting)):
            jobs += 1
            read_by.update(dict.fromkeys(waiting, jobs))
            ended += len(waiting)  # their job run ended: each publishes, commits, ends
            waiting = []
    assert sorted(read_by) == [stream for stream, read in enumerate(reads) if read]
    if at_once >= total:
        assert jobs == (1 if any(reads) else 0)


@given(st.lists(st.integers(), max_size=300), st.integers(1, 80))
def test_a_set_is_split_in_order_into_the_fewest_parts_of_even_sizes(members: list[int], most: int) -> None:
    parts = split(members, most)
    assert [m for part in parts for m in part] == members
    assert len(parts) == -(-len(members) // most)  # the fewest that hold them
    sizes = [len(part) for part in parts]
    assert all(0 < size <= most for size in sizes) and (not sizes or max(sizes) - min(sizes) <= 1)


def test_fifty_streams_are_one_job_run_and_a_hundred_and_thirty_are_three() -> None:
    assert [len(part) for part in split(list(range(50)), 64)] == [50]
    assert [len(part) for part in split(list(range(130)), 64)] == [44, 43, 43]
