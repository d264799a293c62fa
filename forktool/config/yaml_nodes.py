"""``forktool.yaml`` read as YAML nodes, each error naming the file and line.

PyYAML is used to read only. Aliases and anchors are refused outright (a config
needs none, and they are how a YAML bomb expands), and so is any tag beyond the
plain ones. Every value is read through :class:`Node`: strings as their raw text,
numbers in ASCII digits, user regexes vetted before they are kept.

A parsed document is kept as plain tuples (:data:`~forktool.config.kept.RawNode`), which
:mod:`forktool.config.kept` stores between runs: a command whose config is unchanged
since the last run starts without importing PyYAML. Every check below runs on every
load, kept or not.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from forktool.config import kept
from forktool.config.kept import MAPPING, SCALAR, SEQUENCE, RawNode
from forktool.errors import FatalError
from forktool.model.text import whole_number
from forktool.regex_safety import nested_repeat

if TYPE_CHECKING:
    import yaml

NOT_TEXT = {"tag:yaml.org,2002:null", "tag:yaml.org,2002:bool"}
BOOL_TAG = "tag:yaml.org,2002:bool"


class Node:
    """A YAML node with the file name, so every error can say where it is."""

    def __init__(self, raw: RawNode, path: str) -> None:
        self.raw = raw
        self.path = path

    @property
    def line(self) -> int:
        return self.raw[4]

    @property
    def is_scalar(self) -> bool:
        return self.raw[0] == SCALAR

    @property
    def is_text(self) -> bool:
        """A scalar that is not null or a boolean (a number's digits are text)."""
        return self.raw[0] == SCALAR and self.raw[1] not in NOT_TEXT

    @property
    def is_plain(self) -> bool:
        """A scalar written without quotes."""
        return self.raw[0] == SCALAR and self.raw[3] is None

    @property
    def text(self) -> str:
        """A scalar's raw text ("" for a list or mapping)."""
        return str(self.raw[2]) if self.raw[0] == SCALAR else ""

    def fail(self, message: str, hint: str | None = None) -> FatalError:
        return FatalError(f"{self.path}:{self.line}: {message}", hint)

    def mapping(self, what: str) -> dict[str, Node]:
        if self.raw[0] != MAPPING:
            raise self.fail(f"{what} must be a mapping")
        out: dict[str, Node] = {}
        for key, value in self.raw[2]:
            name = Node(key, self.path)
            if not name.is_scalar:
                raise name.fail(f"{what}: keys must be plain names")
            if name.text in out:
                raise name.fail(f"{what}: key '{name.text}' appears twice")
            out[name.text] = Node(value, self.path)
        return out

    def string(self, what: str) -> str:
        # Raw scalar text: an unquoted 1.10 stays "1.10", never the float 1.1.
        if not self.is_text:
            raise self.fail(f"{what} must be a string")
        if not self.text:
            raise self.fail(f"{what} must not be empty")
        return self.text

    def boolean(self, what: str) -> bool:
        if not self.is_scalar or self.raw[1] != BOOL_TAG:
            raise self.fail(f"{what} must be true or false")
        return self.text.lower() in ("true", "yes", "on")

    def sequence(self, what: str) -> list[Node]:
        if self.raw[0] != SEQUENCE:
            raise self.fail(f"{what} must be a list")
        return [Node(item, self.path) for item in self.raw[2]]


def check_keys(
    node: Node, items: dict[str, Node], what: str, allowed: set[str], required: set[str]
) -> None:
    for key, value in items.items():
        if key not in allowed:
            known = ", ".join(sorted(allowed))
            raise FatalError(
                f"{node.path}:{_key_line(node, key)}: unknown key '{key}' in {what}",
                f"known keys: {known}",
            )
        del value
    for key in sorted(required - items.keys()):
        raise node.fail(f"{what} is missing required key '{key}'")


def _key_line(node: Node, key: str) -> int:
    assert node.raw[0] == MAPPING
    for k, _ in node.raw[2]:
        if k[2] == key:
            return int(k[4])
    return node.line


def compose(text: str, path: str) -> RawNode:
    """The document ``text`` (the contents of ``path``) holds, as kept from an earlier
    run of the same text, else parsed (and kept)."""
    found = kept.recall(text)
    if found is not None:
        return found
    raw = _parse(text, path)
    kept.keep(text, raw)
    return raw


def _parse(text: str, path: str) -> RawNode:
    import yaml

    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                line = event.start_mark.line + 1 if event.start_mark else 0
                raise FatalError(
                    f"{path}:{line}: YAML anchors and aliases are not allowed in forktool.yaml",
                    "write each value out in full",
                )
            tag = getattr(event, "tag", None)
            if tag is not None and not tag.startswith("tag:yaml.org,2002:"):
                line = event.start_mark.line + 1 if event.start_mark else 0
                raise FatalError(
                    f"{path}:{line}: unknown YAML tag {tag!r}: forktool.yaml takes plain values",
                    f"remove the tag ({tag}) and write the value alone",
                )
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise FatalError(f"{path}{where}: not valid YAML: {problem}") from exc
    if node is None:
        raise FatalError(
            f"{path}: the file is empty", "run 'forktool init --pin TAG' to create one"
        )
    return _raw(node)


def _raw(node: yaml.Node) -> RawNode:
    """``node`` as plain tuples (:data:`RawNode`)."""
    import yaml

    line = int(node.start_mark.line) + 1
    if isinstance(node, yaml.ScalarNode):
        return (SCALAR, node.tag, str(node.value), node.style, line)
    if isinstance(node, yaml.SequenceNode):
        return (SEQUENCE, node.tag, tuple(_raw(item) for item in node.value), None, line)
    pairs = tuple((_raw(key), _raw(value)) for key, value in node.value)
    return (MAPPING, node.tag, pairs, None, line)


def user_regex(node: Node, what: str, group: str, marks: str) -> str:
    """A user's pattern, vetted: it compiles, cannot backtrack for ever, has ``group``."""
    pattern = node.string(what)
    try:
        regex = re.compile(pattern, re.MULTILINE)
    except re.error as exc:
        raise node.fail(f"{what} pattern does not compile: {exc}") from exc
    if nested_repeat(pattern):
        raise node.fail(
            f"{what} pattern nests a repeat inside a repeat, like (a+)+: "
            "it can backtrack for ever on a near-miss line",
            f"repeat a plain item instead, e.g. (?P<{group}>\\S+)",
        )
    if group not in regex.groupindex:
        raise node.fail(f"{what} pattern has no (?P<{group}>...) group", f"the group marks {marks}")
    return pattern


def choice(node: Node, what: str, allowed: tuple[str, ...]) -> str:
    value = node.string(what)
    if value not in allowed:
        raise node.fail(
            f"{what} '{value}' must be one of: {', '.join(allowed)}",
            f"e.g. {what}: {allowed[0]}",
        )
    return value


def inside_fork(value: str) -> bool:
    return not value.startswith("/") and ".." not in Path(value).parts


def seconds(node: Node, what: str) -> int:
    return _whole_number(node, what, (1, 86400), "seconds", example=600)


def _whole_number(
    node: Node, what: str, bounds: tuple[int, int], unit: str, *, example: int
) -> int:
    """A number in the config: a plain YAML integer written in ASCII digits, in range.
    Every number the config holds is read here."""
    text = node.text
    low, high = bounds
    number = whole_number(text, len(str(high))) if node.is_plain else None
    if number is None or not low <= number <= high:
        shown = text if len(text) <= 40 else text[:40] + "..."
        raise node.fail(
            f"{what} {shown!r} must be a whole number of {unit} from {low} to {high}",
            f"write it in ASCII digits, unquoted, e.g. {what.rsplit('.', 1)[-1]}: {example}",
        )
    return number
