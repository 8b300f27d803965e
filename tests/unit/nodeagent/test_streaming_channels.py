"""The WebSocket channel framing and Docker's multiplexed stream (nodeagent/streaming/channels.py)."""

from __future__ import annotations

import json
import random

import pytest

from nodeagent.streaming import channels as ch


@pytest.mark.parametrize(("channel", "data"), [
    pytest.param(ch.STDIN, b"echo hi\n", id="stdin"),
    pytest.param(ch.STDOUT, b"", id="empty-stdout"),
    pytest.param(ch.RESIZE, b'{"Width":80,"Height":24}', id="resize"),
    pytest.param(ch.STDERR, bytes(range(256)), id="binary"),
])
def test_encode_decode_round_trip(channel: int, data: bytes) -> None:
    message = ch.encode(channel, data)
    assert message[0] == channel and message[1:] == data
    for protocol in ch.PROTOCOLS.values():
        encoded = protocol.encode(channel, data)
        assert isinstance(encoded, str) is protocol.base64  # base64 protocols send text messages
        raw = encoded.encode() if isinstance(encoded, str) else encoded
        assert protocol.decode(raw) == ch.Message(channel=channel, data=data)


def test_base64_framing_as_upstream() -> None:
    # wsstream's documented example: "foo\n" on stdin is "0Zm9vCg==", "\n" on stdout is "1Cg=="
    for name in (ch.BASE64, ch.V4_BASE64):
        protocol = ch.PROTOCOLS[name]
        assert protocol.decode(b"0Zm9vCg==") == ch.Message(channel=ch.STDIN, data=b"foo\n")
        assert protocol.encode(ch.STDOUT, b"\n") == "1Cg=="
        assert protocol.encode(ch.ERROR, b"") == "3"
        assert protocol.decode(b"0not base64!") is None
    assert ch.PROTOCOLS[ch.V1].decode(b"\x00foo\n") == ch.Message(channel=ch.STDIN, data=b"foo\n")


def test_v5_close_stdin_is_a_close_and_older_protocols_have_none() -> None:
    # what client-go's v5 executor writes when stdin ends: {255, 0}
    v5 = ch.PROTOCOLS[ch.V5]
    assert v5.decode(b"\xff\x00") == ch.Message(channel=ch.STDIN, closed=True)
    for name in (ch.V4, ch.V1, ""):
        assert ch.PROTOCOLS[name].decode(b"\xff\x00") == ch.Message(channel=255, data=b"\x00")
    assert v5.decode(b"\xff\x00\x01") is None  # malformed close
    assert v5.decode(b"") is None


@pytest.mark.parametrize(("offered", "chosen"), [
    pytest.param(["v5.channel.k8s.io", "v4.channel.k8s.io"], ch.V5, id="python-client"),
    pytest.param(["v4.channel.k8s.io", "v5.channel.k8s.io"], ch.V4, id="client-order"),
    pytest.param(["x.example", "base64.channel.k8s.io"], ch.BASE64, id="skips-unknown"),
    pytest.param(["v4.base64.channel.k8s.io"], ch.V4_BASE64, id="v4-base64"),
    pytest.param(["channel.k8s.io"], ch.V1, id="v1"),
    pytest.param([], "", id="none-offered"),
    pytest.param(["SPDY/3.1+portforward.k8s.io"], None, id="nothing-in-common"),
])
def test_negotiate(offered: list[str], chosen: str | None) -> None:
    protocol = ch.negotiate(offered)
    assert (protocol.name if protocol else None) == chosen


def test_end_of_command_per_protocol() -> None:
    failed, success = ch.exit_status(3, ["false"]), ch.exit_status(0)
    for name in (ch.V5, ch.V4, ch.V4_BASE64):
        assert json.loads(ch.PROTOCOLS[name].final(failed) or b"") == failed
        assert json.loads(ch.PROTOCOLS[name].final(success) or b"") == success
    for name in (ch.BASE64, ch.V1, ""):  # upstream's v1 status writer: a failure's message only
        assert ch.PROTOCOLS[name].final(failed) == failed["message"].encode()
        assert ch.PROTOCOLS[name].final(success) is None


@pytest.mark.parametrize(("data", "size"), [
    pytest.param(b'{"Width":120,"Height":40}', (120, 40), id="upstream-json"),
    pytest.param(b'{"Width":0,"Height":0}', (0, 0), id="zero"),
    pytest.param(b'{"Width":"80","Height":24}', None, id="string"),
    pytest.param(b'{"Width":80}', None, id="missing"),
    pytest.param(b"not json", None, id="garbage"),
    pytest.param(b'{"Width":70000,"Height":1}', None, id="too-big"),
    pytest.param(b"[]", None, id="list"),
])
def test_parse_resize(data: bytes, size: tuple[int, int] | None) -> None:
    assert ch.parse_resize(data) == size


def test_exit_status_as_upstream() -> None:
    assert ch.exit_status(0) == {"metadata": {}, "status": "Success"}
    failed = ch.exit_status(3, ["sh", "-c", "exit 3"])
    assert failed["status"] == "Failure" and failed["reason"] == "NonZeroExitCode"
    assert failed["details"] == {"causes": [{"reason": "ExitCode", "message": "3"}]}
    assert failed["message"] == ("command terminated with non-zero exit code: error executing command "
                                 "[sh -c exit 3], exit code 3")
    # what the official Python client's `returncode` and client-go's errorDecoderV4 read
    decoded = json.loads(ch.status_bytes(failed))
    assert int(decoded["details"]["causes"][0]["message"]) == 3
    assert ch.exit_status(None)["status"] == "Failure" and "details" not in ch.exit_status(None)


def test_demuxer_upstream_bytes() -> None:
    # Docker's documented header: stream type, three zero bytes, big-endian size
    stream = b"\x01\x00\x00\x00\x00\x00\x00\x03hi\n" + b"\x02\x00\x00\x00\x00\x00\x00\x04err\n"
    assert ch.docker_frame(1, b"hi\n") + ch.docker_frame(2, b"err\n") == stream
    assert ch.Demuxer().feed(stream) == [(ch.STDOUT, b"hi\n"), (ch.STDERR, b"err\n")]


def test_demuxer_any_cut_gives_the_same_payloads() -> None:
    rng = random.Random(7)
    frames = [(rng.choice((1, 2)), rng.randbytes(rng.randrange(0, 300))) for _ in range(50)]
    stream = b"".join(ch.docker_frame(kind, payload) for kind, payload in frames)
    expected = [({1: ch.STDOUT, 2: ch.STDERR}[kind], payload) for kind, payload in frames if payload]
    for _ in range(20):
        demux, out, at = ch.Demuxer(), [], 0
        while at < len(stream):
            step = rng.randrange(1, 40)
            out += demux.feed(stream[at:at + step])
            at += step
        assert out == expected and demux.pending == 0


def test_demuxer_holds_an_incomplete_frame() -> None:
    demux = ch.Demuxer()
    assert demux.feed(ch.docker_frame(1, b"abcdef")[:-2]) == []
    assert demux.pending == 12
    assert demux.feed(b"ef") == [(ch.STDOUT, b"abcdef")]
