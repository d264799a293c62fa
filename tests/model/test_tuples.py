"""Records on verify's path are NamedTuples; a field that says where a value came from
(where a config key is written, which hunk placed a line) stays out of equality."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from hypothesis import given
from hypothesis import strategies as st

from forktool.config.settings import Config
from forktool.engine.apply.verdict import HunkPlacement
from forktool.model.tuples import last_field_aside


@last_field_aside
class Spot(NamedTuple):
    file: str
    line: int
    origin: int = 0


@last_field_aside
class Other(NamedTuple):
    file: str
    line: int
    origin: int = 0


@given(st.text(max_size=3), st.integers(0, 3), st.integers(0, 3), st.integers(0, 3))
def test_equal_and_hashed_alike_whatever_the_last_field(
    file: str, line: int, one: int, two: int
) -> None:
    a, b = Spot(file, line, one), Spot(file, line, two)
    assert a == b
    assert not a != b
    assert hash(a) == hash(b)
    assert a != Spot(file, line + 1, one)
    assert a != Other(file, line, one)  # another record with the same values
    assert a != (file, line, one)  # a plain tuple is no record


def test_a_config_is_its_settings_not_where_they_are_written() -> None:
    plain = Config(Path("/f"), Path("/f/forktool.yaml"), "v1", "0" * 40)
    written = plain._replace(lines={"pin.tag": 3, "pin.commit": 4})
    assert written == plain
    assert hash(written) == hash(plain)
    assert written != plain._replace(pin_tag="v2")


def test_a_placement_is_where_the_hunk_went_not_which_hunk() -> None:
    assert HunkPlacement("a.c", 10, 0, hunk=1) == HunkPlacement("a.c", 10, 0, hunk=2)
    assert HunkPlacement("a.c", 10, 0) != HunkPlacement("a.c", 10, 3)
