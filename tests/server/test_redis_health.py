"""The Redis health tracker (server/storage/redis_base.py ``RedisHealth``): one WARNING
and one INFO per outage of each master, however many calls fail meanwhile and however
many calls to the other masters succeed in between; and which errors count as Redis
not answering."""

from __future__ import annotations

import logging

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError

from crescent_wire.errors import InternalError
from server.storage.redis_base import (
    RedisHealth,
    failed_master,
    name_master,
    server_address,
    unavailable_error,
)

DOWN = "redis is not answering; requests get internal_error until it is back"
A, B = "10.0.0.1:7000", "10.0.0.2:7001"


def lines(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str, str]]:
    """(level, message, master) of the tracker's lines."""
    return [
        (r.levelname, r.getMessage(), getattr(r, "master", "?"))
        for r in caplog.records
        if r.name == "server.storage.redis"
    ]


def test_one_server_one_warning_and_one_info_per_outage(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, "server.storage.redis")
    health = RedisHealth("127.0.0.1:6379")
    for _ in range(50):
        health.failed(RedisConnectionError("Connection refused"))
    assert not health.up and health.down == ["127.0.0.1:6379"]
    health.ok()
    health.ok()
    assert health.up and health.down == []
    assert lines(caplog) == [
        ("WARNING", DOWN, "127.0.0.1:6379"),
        ("INFO", "redis is back", "127.0.0.1:6379"),
    ]
    back = caplog.records[-1]
    assert (back.__dict__["occurrences"], back.__dict__["replaced"]) == (50, False)


def test_a_reply_to_a_call_sent_before_the_outage_does_not_end_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The event loop reads a killed server's sockets in any order: a reply that was
    buffered before the kill can be handled after another call noticed the outage."""
    caplog.set_level(logging.INFO, "server.storage.redis")
    health = RedisHealth("127.0.0.1:6379")
    before = health.epoch  # a call sent while Redis answered
    health.failed(RedisConnectionError("Connection refused"))
    health.ok(sent=before)  # its reply, read after the failure
    assert not health.up
    health.failed(RedisConnectionError("Connection refused"))  # the same outage
    after = health.epoch  # a call sent during the outage
    health.ok(sent=after)
    assert health.up
    assert lines(caplog) == [
        ("WARNING", DOWN, "127.0.0.1:6379"),
        ("INFO", "redis is back", "127.0.0.1:6379"),
    ]


def test_calls_to_another_master_do_not_end_an_outage(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "server.storage.redis")
    changes: list[tuple[str, bool]] = []
    health = RedisHealth("cluster", masters=lambda: [A, B], on_change=lambda *c: changes.append(c))
    for _ in range(40):  # the room's master fails, the others answer in between
        health.failed(RedisConnectionError("Connection closed by server"), A)
        health.ok(B)
        health.ok()  # a call whose master is unknown (the pseudo-master "cluster")
    assert not health.up and health.down == [A]
    assert lines(caplog) == [("WARNING", DOWN, A)]
    health.ok(A)
    assert health.up
    assert lines(caplog) == [("WARNING", DOWN, A), ("INFO", "redis is back", A)]
    assert changes == [(A, False), (A, True)]


def test_two_masters_down_are_two_outages(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "server.storage.redis")
    health = RedisHealth("cluster", masters=lambda: [A, B])
    health.failed(TimeoutError("no reply"), A)
    health.failed(TimeoutError("no reply"), B)
    health.failed(TimeoutError("no reply"), A)
    health.ok(A)
    assert not health.up and health.down == [B]
    health.ok(B)
    assert health.up
    assert [(level, master) for level, _, master in lines(caplog)] == [
        ("WARNING", A),
        ("WARNING", B),
        ("INFO", A),
        ("INFO", B),
    ]


def test_a_master_replaced_by_its_replica_is_back(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "server.storage.redis")
    masters = [A, B]
    health = RedisHealth("cluster", masters=lambda: masters)
    health.failed(RedisConnectionError("Connection refused"), A)
    health.ok(B)  # A is still a master in the slot map: still down
    assert health.down == [A]
    masters[:] = ["10.0.0.3:7002", B]  # A's replica was promoted, the slot map re-read
    health.ok(B)
    assert health.up and health.down == []
    assert lines(caplog)[-1] == ("INFO", "redis is back", A)
    assert caplog.records[-1].__dict__["replaced"] is True
    assert health.last_replaced is not None and health.last_replaced[0] == A
    # A call still in flight to A when it was replaced: no new outage.
    health.failed(TimeoutError(), A)
    assert health.up and len(lines(caplog)) == 2


def test_the_failed_master_is_read_from_the_exception(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "server.storage.redis")
    health = RedisHealth("cluster")
    error = name_master(RedisConnectionError("lost"), A)
    assert failed_master(error) == A and failed_master(RedisConnectionError("x")) is None
    told = health.unavailable(error)
    assert isinstance(told, InternalError) and told.code == "internal_error"
    assert told.__cause__ is error and health.down == [A]


def test_which_errors_mean_redis_is_not_answering() -> None:
    assert unavailable_error(RedisConnectionError("Connection closed by server"))
    assert unavailable_error(TimeoutError())
    assert unavailable_error(OSError(111, "Connection refused"))
    # redis-py writing on a connection a failed pipeline's clean-up closed meanwhile
    assert unavailable_error(AttributeError("'NoneType' object has no attribute 'writelines'"))
    uvloop = "unable to perform operation on <TCPTransport closed=True>; the handler is closed"
    assert unavailable_error(RuntimeError(uvloop))
    # bugs stay bugs (logged with their traceback)
    assert not unavailable_error(AttributeError("'Room' object has no attribute 'x'"))
    assert not unavailable_error(RuntimeError("something else"))
    assert not unavailable_error(ResponseError("WRONGTYPE"))
    assert not unavailable_error(TypeError("a bytes-like object is required"))


def test_a_single_servers_address() -> None:
    assert server_address("redis://127.0.0.1:6379/0") == "127.0.0.1:6379"
    assert server_address("redis://localhost") == "localhost:6379"
    assert server_address("unix:///run/redis.sock") == "/run/redis.sock"
