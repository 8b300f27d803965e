"""SPDY/3.1 framing (control/apiserver/streaming/spdy.py): frames round-trip through bytes cut anywhere, header blocks
use SPDY/3's dictionary and one zlib context per direction, windows allow what the peer granted."""

from __future__ import annotations

import struct
import zlib

import pytest

from control.apiserver.streaming import spdy

FRAMES = [
    pytest.param(spdy.SynStream(1, {"streamtype": "error", "port": "8080", "requestid": "0"}), id="syn-stream"),
    pytest.param(spdy.SynStream(3, {"streamtype": "stdin"}, priority=4, fin=True), id="syn-stream-fin"),
    pytest.param(spdy.SynReply(1), id="syn-reply-empty"),
    pytest.param(spdy.SynReply(5, {"status": "200"}, fin=True), id="syn-reply"),
    pytest.param(spdy.HeadersFrame(7, {"a": "b\x00c"}), id="headers"),
    pytest.param(spdy.Data(1, b"hello"), id="data"),
    pytest.param(spdy.Data(1, b"", fin=True), id="data-fin"),
    pytest.param(spdy.RstStream(9, spdy.CANCEL), id="rst"),
    pytest.param(spdy.Settings({spdy.SETTINGS_INITIAL_WINDOW_SIZE: 1 << 20, 4: 100}), id="settings"),
    pytest.param(spdy.Ping(1), id="ping"),
    pytest.param(spdy.GoAway(11, 0), id="goaway"),
    pytest.param(spdy.WindowUpdate(0, 65536), id="window-update"),
]


@pytest.mark.parametrize("frame", FRAMES)
def test_frame_round_trip(frame: spdy.Frame) -> None:
    assert spdy.FrameReader().feed(spdy.encode(frame, spdy.HeaderCompressor())) == [frame]


def test_frames_cut_at_every_byte_come_out_whole_and_in_order() -> None:
    compressor, reader = spdy.HeaderCompressor(), spdy.FrameReader()
    frames = [p.values[0] for p in FRAMES]
    wire = b"".join(spdy.encode(f, compressor) for f in frames)
    out: list[spdy.Frame] = []
    for i in range(len(wire)):
        out += reader.feed(wire[i:i + 1])
    assert out == frames


def test_wire_layout_of_control_and_data_frames() -> None:
    compressor = spdy.HeaderCompressor()
    assert spdy.encode(spdy.Ping(5), compressor) == bytes.fromhex("8003 0006 00000004 00000005")
    assert spdy.encode(spdy.Data(3, b"ab", fin=True), compressor) == bytes.fromhex("00000003 01000002") + b"ab"
    assert spdy.encode(spdy.WindowUpdate(1, 10), compressor) == bytes.fromhex("8003 0009 00000008 00000001 0000000a")
    rst = spdy.encode(spdy.RstStream(1, spdy.CANCEL), compressor)
    assert rst == bytes.fromhex("8003 0003 00000008 00000001 00000005")


def test_dictionary_is_spdy3s() -> None:
    assert len(spdy.DICTIONARY) == 1423
    assert spdy.DICTIONARY.startswith(b"\x00\x00\x00\x07options\x00\x00\x00\x04head")
    assert spdy.DICTIONARY.endswith(b"charset=iso-8859-1,utf-,*,enq=0.")


def test_header_block_is_zlib_with_the_dictionary_and_plain_layout() -> None:
    block = spdy.HeaderCompressor().compress({"streamType": "data", "port": "80"})
    # zlib header with FDICT set and the dictionary's Adler-32 as DICTID (RFC 1950), as spdystream checks
    assert block[1] & 0x20 and struct.unpack(">I", block[2:6])[0] == zlib.adler32(spdy.DICTIONARY)
    plain = zlib.decompressobj(zdict=spdy.DICTIONARY).decompress(block)
    assert plain == (struct.pack(">I", 2) + struct.pack(">I", 10) + b"streamtype" + struct.pack(">I", 4) + b"data"
                     + struct.pack(">I", 4) + b"port" + struct.pack(">I", 2) + b"80")


def test_one_compression_context_per_direction() -> None:
    compressor, decompressor = spdy.HeaderCompressor(), spdy.HeaderDecompressor()
    headers = {"streamtype": "stdout", "x-long-header": "v" * 200}
    first, second = compressor.compress(headers), compressor.compress(headers)
    assert len(second) < len(first)  # the second block refers back into the first
    assert decompressor.decompress(first) == headers
    assert decompressor.decompress(second) == headers
    with pytest.raises(spdy.ProtocolError):
        spdy.HeaderDecompressor().decompress(second)  # a fresh context cannot read the second block


def test_other_versions_are_protocol_errors_and_unknown_types_skipped() -> None:
    with pytest.raises(spdy.ProtocolError):
        spdy.FrameReader().feed(bytes.fromhex("8002 0006 00000004 00000001"))
    noop = bytes.fromhex("8003 0005 00000000")
    assert spdy.FrameReader().feed(noop + spdy.encode(spdy.Ping(1), spdy.HeaderCompressor())) == [spdy.Ping(1)]


def test_window_is_enforced_once_the_peer_does_flow_control() -> None:
    window = spdy.Window()
    assert window.allowance(1 << 20) == 1 << 20  # spdystream never sends updates: no limit against it
    window.grow(0)
    assert window.allowance(1 << 20) == spdy.INITIAL_WINDOW
    window.consume(spdy.INITIAL_WINDOW - 10)
    assert window.allowance(100) == 10
    window.consume(10)
    assert window.allowance(100) == 0
    window.grow(50)
    assert window.allowance(100) == 50


def test_a_header_block_bomb_is_refused_without_inflating_it() -> None:
    """A block a few KiB long that inflates to 64 MiB stops at the 1 MiB cap."""
    compressor = zlib.compressobj(zdict=spdy.DICTIONARY)
    bomb = compressor.compress(struct.pack(">I", 1) + struct.pack(">I", 4) + b"name" + struct.pack(">I", 64 << 20)
                               + b"v" * (64 << 20)) + compressor.flush(zlib.Z_SYNC_FLUSH)
    assert len(bomb) < 100_000
    with pytest.raises(spdy.ProtocolError, match="header block larger than 1048576 bytes"):
        spdy.HeaderDecompressor().decompress(bomb)
