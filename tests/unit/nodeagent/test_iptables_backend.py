"""Choosing the iptables backend as upstream's wrapper does, and the commands issued for it."""

from __future__ import annotations

import pytest

from control.util.iptables import Iptables, IptablesError, Mode, Result, decide_mode

DOCKER_LEGACY = "\n".join(["*filter", ":FORWARD DROP [0:0]"] + [f"-A DOCKER-ISOLATION -j RETURN{i}" for i in range(10)])
NFT_HINT = "*mangle\n:KUBE-IPTABLES-HINT - [0:0]\nCOMMIT\n"
LEGACY_HINT = "*mangle\n:KUBE-KUBELET-CANARY - [0:0]\nCOMMIT\n"
FEW = "*filter\n-A INPUT -j ACCEPT\n-A INPUT -j ACCEPT\n"


@pytest.mark.parametrize("nft_mangle, legacy_all, nft_all, default, expected", [
    pytest.param(NFT_HINT, DOCKER_LEGACY, "", Mode.LEGACY, Mode.NFT, id="kubelet-hint-in-nft-wins"),
    pytest.param("", LEGACY_HINT, FEW, Mode.NFT, Mode.LEGACY, id="kubelet-hint-in-legacy"),
    pytest.param("", DOCKER_LEGACY, DOCKER_LEGACY + "\n-A X -j Y", Mode.NFT, Mode.LEGACY, id="ten-legacy-rules"),
    pytest.param("", FEW, "", Mode.NFT, Mode.LEGACY, id="legacy-holds-more"),
    pytest.param("", "", FEW, Mode.LEGACY, Mode.NFT, id="nft-holds-more"),
    pytest.param("", "", "# Warning: iptables-legacy tables present\n", Mode.LEGACY, Mode.LEGACY, id="empty-default"),
    pytest.param("", "", "", Mode.NFT, Mode.NFT, id="empty-default-nft"),
])
def test_decide_mode(nft_mangle, legacy_all, nft_all, default, expected):
    assert decide_mode(nft_mangle=nft_mangle, legacy_all=legacy_all, nft_all=nft_all,
                       system_default=default) is expected


class Recorder:
    def __init__(self, returncode: int = 0) -> None:
        self.returncode = returncode
        self.calls: list[tuple[list[str], str | None]] = []

    def __call__(self, argv, *, stdin=None) -> Result:
        self.calls.append((list(argv), stdin))
        return Result(self.returncode, "", "iptables: Bad rule.")


@pytest.mark.parametrize("mode, binary", [(Mode.LEGACY, "iptables-legacy"), (Mode.NFT, "iptables-nft")])
def test_every_command_uses_the_chosen_backend(mode, binary):
    run = Recorder()
    ipt = Iptables(mode=mode, run=run)
    ipt.restore("*nat\nCOMMIT\n")
    ipt.save("nat")
    ipt.insert_rule("filter", "FORWARD", ["-j", "KUBE-X"])
    assert run.calls == [
        ([f"{binary}-restore", "--noflush", "-w"], "*nat\nCOMMIT\n"),
        ([f"{binary}-save", "-t", "nat"], None),
        ([binary, "-w", "-t", "filter", "-I", "FORWARD", "-j", "KUBE-X"], None),
    ]


def test_a_failed_command_raises_with_its_stderr_but_a_failed_check_is_an_answer():
    ipt = Iptables(mode=Mode.LEGACY, run=Recorder(returncode=1))
    assert ipt.has_rule("filter", "FORWARD", ["-j", "KUBE-X"]) is False
    with pytest.raises(IptablesError, match="Bad rule"):
        ipt.delete_rule("filter", "FORWARD", ["-j", "KUBE-X"])
