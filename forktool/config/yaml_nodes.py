"""``forktool.yaml`` read as YAML nodes, each error naming the file and line.

PyYAML is used to read only. Aliases and anchors are refused outright (a config
needs none, and they are how a YAML bomb expands), and so is any tag beyond the
plain ones. Every value is read through :class:`Node`: strings as their raw text,
numbers in ASCII digits, user regexes vetted before they are kept.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from forktool.errors import FatalError
from forktool.model.text import whole_number
from forktool.regex_safety import nested_repeat

NOT_TEXT = {"tag:yaml.org,2002:null", "tag:yaml.org,2002:bool"}


class Node:
    """A YAML node with the file name, so every error can say where it is."""

    def __init__(self, node: yaml.Node, path: str) -> None:
        self.node = node
        self.path = path

    @property
    def line(self) -> int:
        return int(self.node.start_mark.line) + 1

    def fail(self, message: str, hint: str | None = None) -> FatalError:
        return FatalError(f"{self.path}:{self.line}: {message}", hint)

    def mapping(self, what: str) -> dict[str, Node]:
        if not isinstance(self.node, yaml.MappingNode):
            raise self.fail(f"{what} must be a mapping")
        out: dict[str, Node] = {}
        for key, value in self.node.value:
            if not isinstance(key, yaml.ScalarNode):
                raise Node(key, self.path).fail(f"{what}: keys must be plain names")
            if key.value in out:
                raise Node(key, self.path).fail(f"{what}: key '{key.value}' appears twice")
            out[key.value] = Node(value, self.path)
        return out

    def string(self, what: str) -> str:
        # Raw scalar text: an unquoted 1.10 stays "1.10", never the float 1.1.
        plain = isinstance(self.node, yaml.ScalarNode) and self.node.tag not in NOT_TEXT
        if not plain:
            raise self.fail(f"{what} must be a string")
        value = str(self.node.value)
        if not value:
            raise self.fail(f"{what} must not be empty")
        return value

    def boolean(self, what: str) -> bool:
        if not isinstance(self.node, yaml.ScalarNode) or self.node.tag != "tag:yaml.org,2002:bool":
            raise self.fail(f"{what} must be true or false")
        return str(self.node.value).lower() in ("true", "yes", "on")

    def sequence(self, what: str) -> list[Node]:
        if not isinstance(self.node, yaml.SequenceNode):
            raise self.fail(f"{what} must be a list")
        return [Node(item, self.path) for item in self.node.value]


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
    assert isinstance(node.node, yaml.MappingNode)
    for k, _ in node.node.value:
        if k.value == key:
            return int(k.start_mark.line) + 1
    return node.line


def compose(text: str, path: str) -> yaml.Node:
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
    return node


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
    plain = isinstance(node.node, yaml.ScalarNode) and node.node.style is None
    text = str(node.node.value) if isinstance(node.node, yaml.ScalarNode) else ""
    low, high = bounds
    number = whole_number(text, len(str(high))) if plain else None
    if number is None or not low <= number <= high:
        shown = text if len(text) <= 40 else text[:40] + "..."
        raise node.fail(
            f"{what} {shown!r} must be a whole number of {unit} from {low} to {high}",
            f"write it in ASCII digits, unquoted, e.g. {what.rsplit('.', 1)[-1]}: {example}",
        )
    return number
