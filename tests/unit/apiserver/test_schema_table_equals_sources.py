"""Temporary: the generated table (proto_data/schema.json.gz) gives the protobuf codec and server-side apply the
same schema as parsing upstream's generated.proto and types.go did, for every message. Goes with the copy."""

from __future__ import annotations

import dataclasses

import _parsed_fieldschema
import _parsed_protoschema

from control.apiserver import fieldschema, protoschema

# The old parser keyed types.go markers by directory (`kube-aggregator`) while the proto package says
# `kube_aggregator`, so APIService's markers were never found; the generator keys them by the proto package.
APISERVICE_STATUS = "k8s.io.kube_aggregator.pkg.apis.apiregistration.v1.APIServiceStatus"


def test_protobuf_tables_equal_the_parsed_ones() -> None:
    old, new = _parsed_protoschema.build(), protoschema.load()
    assert set(old.messages) == set(new.messages)  # every message, each with its fields in the same order
    for name, fields in old.messages.items():
        assert [(n, dataclasses.astuple(f)) for n, f in fields.items()] == [
            (n, dataclasses.astuple(f)) for n, f in new.messages[name].items()], name
    assert old.list_wrappers == new.list_wrappers
    assert old.kinds == new.kinds


def test_apply_schema_equals_the_parsed_one() -> None:
    old, new = _parsed_fieldschema.build(), fieldschema.build(protoschema.load())
    assert set(old.structs) == set(new.structs)
    differences = []
    for name, fields in old.structs.items():
        before = {k: dataclasses.astuple(t) for k, t in fields.items()}
        after = {k: dataclasses.astuple(t) for k, t in new.structs[name].items()}
        if list(before.items()) != list(after.items()):
            differences.append((name, {k: (before[k], after[k]) for k in before if before[k] != after[k]}))
    assert differences == [(APISERVICE_STATUS, {"conditions": (
        ("list", "", APISERVICE_STATUS.replace("Status", "Condition"), "atomic", (), False, "", ""),
        ("list", "", APISERVICE_STATUS.replace("Status", "Condition"), "map", ("type",), False, "merge", "type"))})]
    assert old.atomic_structs & set(old.structs) == new.atomic_structs
    assert old.kinds == new.kinds
    assert old.zero_fields == new.zero_fields
