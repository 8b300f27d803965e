"""The JSONPath of CRD printer columns and scale subresource paths (upstream: k8s.io/client-go/util/jsonpath,
as the CRD table convertor and the scale paths use it: a path such as `.spec.replicas`, optionally in
braces, with `[n]`, `['key']`, `[*]` and `[?(@.type=="Ready")]` steps).

`find` returns every value the path reaches, in document order (the table convertor prints the first);
`parse` refuses what it cannot read with ValueError, which CRD validation turns into a field error.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

Step = tuple[str, Any]  # ("field", name) | ("index", n) | ("all", None) | ("filter", (path, op, value))

_TOKEN = re.compile(r"""\.(?P<field>[A-Za-z0-9_$\-]+)|\[(?P<index>-?\d+)\]|\[(?P<all>\*)\]|\.(?P<star>\*)"""
                    r"""|\['(?P<quoted>[^']*)'\]|\["(?P<dquoted>[^"]*)"\]"""
                    r"""|\[\?\(@(?P<fpath>(\.[A-Za-z0-9_\-]+)+)\s*(?P<op>==|!=)\s*(?P<fvalue>"[^"]*"|'[^']*'|[^)\s]+)\)\]""")


def parse(path: str) -> list[Step]:
    text = path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1].strip()
    if text.startswith("$"):
        text = text[1:]
    if not text.startswith((".", "[")):
        raise ValueError(f"unrecognized JSONPath {path!r}: it must start with '.'")
    steps: list[Step] = []
    position = 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:
            raise ValueError(f"unrecognized JSONPath {path!r} at character {position}")
        if match["field"] is not None:
            steps.append(("field", match["field"]))
        elif match["index"] is not None:
            steps.append(("index", int(match["index"])))
        elif match["all"] is not None or match["star"] is not None:
            steps.append(("all", None))
        elif match["quoted"] is not None or match["dquoted"] is not None:
            steps.append(("field", match["quoted"] if match["quoted"] is not None else match["dquoted"]))
        else:
            raw = match["fvalue"]
            value: Any = raw[1:-1] if raw[0] in "\"'" else json.loads(raw)
            steps.append(("filter", (match["fpath"][1:].split("."), match["op"], value)))
        position = match.end()
    return steps


def _walk(value: Any, steps: list[Step]) -> Iterator[Any]:
    if not steps:
        yield value
        return
    (kind, arg), rest = steps[0], steps[1:]
    if kind == "field":
        if isinstance(value, dict) and arg in value:
            yield from _walk(value[arg], rest)
    elif kind == "index":
        if isinstance(value, list) and -len(value) <= arg < len(value):
            yield from _walk(value[arg], rest)
    elif kind == "all":
        items = value if isinstance(value, list) else list(value.values()) if isinstance(value, dict) else []
        for item in items:
            yield from _walk(item, rest)
    elif kind == "filter" and isinstance(value, list):
        fields, op, wanted = arg
        for item in value:
            found = item
            for name in fields:
                found = found.get(name) if isinstance(found, dict) else None
            if (found == wanted) == (op == "=="):
                yield from _walk(item, rest)


def find(obj: Any, path: str) -> list[Any]:
    return list(_walk(obj, parse(path)))


def set_value(obj: dict[str, Any], path: str, value: Any) -> None:
    """Set a plain field path (`.spec.replicas`), creating the objects on the way (the scale subresource)."""
    steps = parse(path)
    if not steps or any(kind != "field" for kind, _ in steps):
        raise ValueError(f"{path!r} is not a plain field path")
    current = obj
    for _, name in steps[:-1]:
        if not isinstance(current.get(name), dict):
            current[name] = {}
        current = current[name]
    current[steps[-1][1]] = value
