"""The JSON every command prints: a line per top-level key and per element of a
top-level list, made by json's C encoder; it must read back as the payload exactly."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from forktool.output import json_lines

_SCALAR = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=8)
)
_VALUE = st.recursive(
    _SCALAR,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(st.dictionaries(st.text(max_size=8), _VALUE, max_size=6))
def test_json_lines_read_back_as_the_payload(payload: dict[str, Any]) -> None:
    text = "\n".join(json_lines(payload))

    assert json.loads(text) == payload


def test_a_series_result_puts_each_patch_on_its_own_line() -> None:
    payload = {
        "ok": True,
        "patches": [{"patch": "0001.patch", "status": "exact"}, {"patch": "0002.patch"}],
        "empty": [],
        "note": "caf\u00e9 \u2028 \x1b[31m",
    }

    lines = list(json_lines(payload))

    assert lines == [
        "{",
        '  "ok": true,',
        '  "patches": [',
        '    {"patch": "0001.patch", "status": "exact"},',
        '    {"patch": "0002.patch"}',
        "  ],",
        '  "empty": [],',
        '  "note": "caf\\u00e9 \\u2028 \\u001b[31m"',
        "}",
    ]
