"""`$(VAR)` references in env values, command, args and subPathExpr, as upstream
third_party/forked/golang/expansion/expand.go (Expand, MappingFuncFor).

The rules, all kept because users' manifests depend on them:

* `$(NAME)` is replaced by NAME's value when the mapping knows NAME; an unknown name is left as written,
  `$(NAME)`, so a typo is visible in the container rather than silently empty.
* `$$` is an escaped `$`: `$$(NAME)` yields the literal text `$(NAME)`.
* A `$` followed by anything else is kept with that character; an unclosed `$(` is kept as is.
* Expansion is one pass: a value that itself contains `$(X)` is not expanded again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping


def mapping_for(*contexts: Mapping[str, str]) -> Callable[[str], str]:
    """Look a name up in each context in turn; unknown names come back wrapped as `$(name)`."""

    def lookup(name: str) -> str:
        for context in contexts:
            if name in context:
                return context[name]
        return f"$({name})"

    return lookup


def expand(text: str, mapping: Callable[[str], str]) -> str:
    """Replace the `$(VAR)` references of `text` through `mapping` (see the module notes)."""
    out: list[str] = []
    checkpoint = 0
    cursor = 0
    while cursor < len(text):
        if text[cursor] == "$" and cursor + 1 < len(text):
            out.append(text[checkpoint:cursor])
            following = text[cursor + 1]
            if following == "$":
                out.append("$")
            elif following == "(":
                close = text.find(")", cursor + 2)
                if close < 0:
                    out.append("$(")
                else:
                    out.append(mapping(text[cursor + 2 : close]))
                    cursor = close - 1  # the +2 below lands just past ")"
            else:
                out.append("$" + following)
            cursor += 2
            checkpoint = cursor
            continue
        cursor += 1
    out.append(text[checkpoint:])
    return "".join(out)
