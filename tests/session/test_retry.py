"""The retry policy and the deadline it runs under (pure logic; the transports' use of it is
tested against foreign servers)."""

from __future__ import annotations

import pytest

import mcp_tasks as mt
from mcp_tasks._clock import Deadline


def failing(errors):
    calls = []

    def attempt():
        calls.append(1)
        if errors:
            raise errors.pop(0)
        return "ok"

    return attempt, calls


def test_idempotent_request_is_retried_until_it_succeeds():
    attempt, calls = failing([mt.TransportError("reset", retryable=True)] * 2)
    policy = mt.Retry(attempts=3, backoff=0.001)
    assert policy.run(attempt, Deadline(10), idempotent=True, what="tasks/get") == "ok"
    assert len(calls) == 3


def test_a_request_that_may_have_arrived_is_not_sent_again_unless_idempotent():
    attempt, calls = failing([mt.TransportError("reset", retryable=True, sent=True)])
    with pytest.raises(mt.TransportError):
        mt.Retry(backoff=0.001).run(attempt, Deadline(10), idempotent=False, what="tools/call")
    assert len(calls) == 1


def test_a_request_that_never_left_is_sent_again_even_when_not_idempotent():
    attempt, calls = failing([mt.TransportError("refused", retryable=True, sent=False)])
    assert mt.Retry(backoff=0.001).run(attempt, Deadline(10), idempotent=False, what="tools/call") == "ok"
    assert len(calls) == 2


def test_the_last_error_carries_the_attempts():
    attempt, calls = failing([mt.TransportError("503", retryable=True, data={"status": 503})] * 5)
    with pytest.raises(mt.TransportError) as caught:
        mt.Retry(attempts=2, backoff=0.001).run(attempt, Deadline(10), idempotent=True, what="tasks/get")
    assert len(calls) == 3
    assert caught.value.data == {"status": 503, "attempts": 3}


def test_no_retry_starts_past_the_deadline():
    attempt, calls = failing([mt.TransportError("503", retryable=True, retry_after=60.0)] * 2)
    with pytest.raises(mt.TransportError):
        mt.Retry().run(attempt, Deadline(1.0), idempotent=True, what="tasks/get")
    assert len(calls) == 1


def test_retries_zero_turns_it_off_and_non_retryable_errors_are_final():
    attempt, calls = failing([mt.TransportError("reset", retryable=True)])
    with pytest.raises(mt.TransportError):
        mt.Retry.of(0).run(attempt, Deadline(10), idempotent=True, what="tasks/get")
    attempt, calls = failing([mt.TransportError("HTTP 400")])
    with pytest.raises(mt.TransportError):
        mt.Retry().run(attempt, Deadline(10), idempotent=True, what="tasks/get")
    assert len(calls) == 1


def test_retry_after_is_honoured_and_capped():
    policy = mt.Retry(max_retry_after=5.0)
    assert policy.delay(1, 2.5) == 2.5
    assert policy.delay(1, 100.0) == 5.0
    assert 0.1 <= mt.Retry(backoff=0.1, jitter=0.5).delay(1) <= 0.15
    assert mt.Retry(backoff=1.0, max_backoff=2.0, jitter=0.0).delay(5) == 2.0


@pytest.mark.parametrize("bad", [{"attempts": -1}, {"backoff": -0.1}, {"attempts": True}, {"jitter": "x"}])
def test_bad_policies_are_refused(bad):
    with pytest.raises(ValueError, match="Retry"):
        mt.Retry(**bad)


def test_retry_of_refuses_other_types():
    with pytest.raises(TypeError, match="retries"):
        mt.Retry.of("3")  # type: ignore[arg-type]


def test_a_deadline_step_is_never_zero():
    expired = Deadline(0.0001)
    while not expired.expired():
        pass
    with pytest.raises(mt.RequestTimeout):
        expired.step()
    assert Deadline(None).step() is None
    assert Deadline(None).step(2.0) == 2.0
    left = Deadline(10).step(1.0)
    assert left is not None and 0 < left <= 1.0


def test_within_takes_the_earlier_deadline():
    outer = Deadline(10)
    assert outer.within(None) is outer
    inner = outer.within(1)
    assert inner.at is not None and outer.at is not None and inner.at < outer.at
    assert Deadline(1).within(100).timeout == 1
    assert Deadline(None).within(5).timeout == 5


def test_a_protocol_error_is_never_retried():
    attempt, calls = failing([mt.ProtocolError("The server sent a result that is not a JSON object")] * 3)
    with pytest.raises(mt.ProtocolError):
        mt.Retry(attempts=3, backoff=0.001).run(attempt, Deadline(10), idempotent=True, what="tasks/get")
    assert len(calls) == 1
