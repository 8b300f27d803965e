"""pods/log options (control/api/podlogoptions.py): upstream's query conversion, ValidatePodLogOptions and
the container choice of validateContainer, with upstream's messages."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from control.api import podlogoptions
from control.api.podlogoptions import PodLogOptions


def test_parse_reads_every_option() -> None:
    options = podlogoptions.parse({"container": "c", "follow": "true", "previous": "1", "timestamps": "true",
                                   "tailLines": "2", "limitBytes": "10", "sinceTime": "2026-11-27T11:00:00.5Z"})
    assert options == PodLogOptions(container="c", follow=True, previous=True, timestamps=True, tail_lines=2,
                                    limit_bytes=10, since_time=datetime(2026, 11, 27, 11, 0, 0, 500000, UTC))
    assert podlogoptions.parse({}) == PodLogOptions()
    assert podlogoptions.parse({"follow": "false", "tailLines": ""}) == PodLogOptions()


@pytest.mark.parametrize("query, message", [
    pytest.param({"follow": "yes"}, 'follow: strconv.ParseBool: parsing "yes"', id="bool"),
    pytest.param({"tailLines": "x"}, 'tailLines: strconv.ParseInt: parsing "x"', id="int"),
    pytest.param({"sinceTime": "yesterday"}, 'sinceTime: parsing time "yesterday"', id="time"),
])
def test_parse_refuses_what_does_not_parse(query: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        podlogoptions.parse(query)


@pytest.mark.parametrize("options, messages", [
    pytest.param(PodLogOptions(tail_lines=0, limit_bytes=1, since_seconds=1), [], id="smallest-valid"),
    pytest.param(PodLogOptions(tail_lines=-1), ["tailLines: Invalid value: -1: must be greater than or equal to 0"],
                 id="negative-tail"),
    pytest.param(PodLogOptions(limit_bytes=0), ["limitBytes: Invalid value: 0: must be greater than 0"],
                 id="zero-limit"),
    pytest.param(PodLogOptions(since_seconds=0), ["sinceSeconds: Invalid value: 0: must be greater than 0"],
                 id="zero-since"),
    pytest.param(PodLogOptions(since_seconds=5, since_time=datetime(2026, 1, 1, tzinfo=UTC)),
                 [": Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified"], id="both-since"),
])
def test_validate_as_upstream(options: PodLogOptions, messages: list[str]) -> None:
    assert [e.message for e in podlogoptions.validate(options)] == messages


def test_since_counts_back_from_now_or_takes_the_time() -> None:
    assert PodLogOptions(since_seconds=10).since(1000.5) == 990.5
    assert PodLogOptions(since_time=datetime(1970, 1, 1, 0, 1, tzinfo=UTC)).since(1000.0) == 60.0
    assert PodLogOptions().since(1000.0) is None


def _pod(*apps: str, inits: tuple[str, ...] = ()) -> dict:
    return {"metadata": {"name": "p"}, "spec": {"containers": [{"name": n} for n in apps],
                                                "initContainers": [{"name": n} for n in inits]}}


@pytest.mark.parametrize("pod, asked, expected", [
    pytest.param(_pod("a"), "", "a", id="only-app-container"),
    pytest.param(_pod("a", inits=("i",)), "", "a", id="init-containers-do-not-count"),
    pytest.param(_pod("a", "b"), "b", "b", id="named"),
    pytest.param(_pod("a", inits=("i",)), "i", "i", id="init-named"),
    pytest.param(_pod("a", "b", inits=("i",)), "",
                 ValueError("a container name must be specified for pod p, choose one of: [i a b]"), id="ambiguous"),
    pytest.param(_pod("a"), "z", ValueError("container z is not valid for pod p"), id="unknown"),
    pytest.param(_pod(), "", ValueError("a container name must be specified for pod p"), id="no-containers"),
])
def test_choose_container(pod: dict, asked: str, expected: str | ValueError) -> None:
    if isinstance(expected, ValueError):
        with pytest.raises(ValueError) as caught:
            podlogoptions.choose_container(pod, asked)
        assert str(caught.value) == str(expected)
    else:
        assert podlogoptions.choose_container(pod, asked) == expected
