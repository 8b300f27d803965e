"""The serving certificate names what clients dial, including the advertise address (`up --nodes`' node
bridge address); a kept certificate lacking it is issued again by the same CA
(control/apiserver/authentication/certs.py)."""

from __future__ import annotations

import shutil

import pytest

from control.apiserver.authentication import certs
from control.util import openssl

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")


def test_names_include_bind_and_extra_addresses_but_not_the_unspecified_one():
    names = certs.subject_alt_names("0.0.0.0", "10.96.0.1", ("10.250.0.1", "not-an-ip"))
    assert "IP:10.250.0.1" in names and "IP:10.96.0.1" in names and "IP:0.0.0.0" not in names


def test_a_new_advertise_address_reissues_the_serving_certificate_with_the_same_ca(tmp_path):
    first = certs.ensure_serving_certs(str(tmp_path), bind_address="0.0.0.0", service_ip="10.96.0.1")
    ca = first.ca_pem()
    assert "IP:10.250.0.1" not in openssl.alt_names(first.cert_path)
    serving = open(first.cert_path, "rb").read()

    again = certs.ensure_serving_certs(str(tmp_path), bind_address="0.0.0.0", service_ip="10.96.0.1",
                                       extra_ips=("10.250.0.1",))
    assert again.ca_pem() == ca
    assert "IP:10.250.0.1" in openssl.alt_names(again.cert_path)
    assert open(again.cert_path, "rb").read() != serving
    reissued = open(again.cert_path, "rb").read()
    certs.ensure_serving_certs(str(tmp_path), bind_address="0.0.0.0", service_ip="10.96.0.1",
                               extra_ips=("10.250.0.1",))
    assert open(again.cert_path, "rb").read() == reissued  # nothing new needed: kept
