"""control/util/resolvconf.py: the node's resolver config as upstream's kubelet parses it, and the file that
holds the real servers on a systemd-resolved host."""

from __future__ import annotations

from control.util.resolvconf import ResolvConf, node_resolv_conf_path, parse, read


def test_parse_as_upstream():
    text = ("# generated\n; comment\nnameserver 10.0.0.2\nnameserver\nsearch old.example\ndomain ignored.example\n"
            "search corp.example. . lab\noptions ndots:2\noptions rotate edns0\nnameserver fe80::1%eth0\n")
    assert parse(text) == ResolvConf(("10.0.0.2", "fe80::1%eth0"), ("corp.example", "lab"),
                                     ("ndots:2", "rotate", "edns0"))
    assert parse("nameserver 127.0.0.53\nnameserver ::1\nnameserver 10.1.1.1\n").without_loopback().nameservers == (
        "10.1.1.1",)


def test_systemd_resolved_stub_yields_to_its_upstream_list(tmp_path):
    stub, real = tmp_path / "resolv.conf", tmp_path / "resolved.conf"
    stub.write_text("nameserver 127.0.0.53\noptions edns0 trust-ad\nsearch corp\n")
    assert node_resolv_conf_path(str(stub), str(real)) == str(stub)  # no resolved list: keep the stub's file
    real.write_text("nameserver 192.0.2.53\nsearch corp\n")
    assert node_resolv_conf_path(str(stub), str(real)) == str(real)
    stub.write_text("nameserver 127.0.0.53\nnameserver 192.0.2.1\n")
    assert node_resolv_conf_path(str(stub), str(real)) == str(stub)  # a real server in it: it is used as is
    assert node_resolv_conf_path(str(tmp_path / "missing"), str(real)) == str(tmp_path / "missing")
    assert read(str(tmp_path / "missing")) == ResolvConf()
