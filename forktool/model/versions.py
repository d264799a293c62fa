"""How a version is read out of a release tag: the one version reader.

Upstreams spell releases in many ways: ``v1.2.0``, ``2.4.57``, ``curl-7_88_1``,
``OpenSSL_1_1_1t``, ``REL_15_2``, ``release-1.22.1``, ``version-3.40.1``, ``v252``,
``jq-1.7rc1``, ``OpenSSL_1_1_1-pre9``, ``REL_16_RC1``, ``V_9_6_P1``, ``8.0-m01``, ``v3.4-dev10``. A :class:`VersionScheme` says
how one upstream does it: a literal ``prefix`` and the ``separator`` between release
numbers (``.``, ``_`` or ``-``). After the numbers a tag may carry one or two patch
letters (OpenSSL's ``1.1.1t``, after ``1.1.1s``), a numbered patch level ``p``/``P``
(openssh's portable releases, ``V_9_6_P1``, ``9.6p1``: after the release, ``9.6.post1``
to packaging) and a pre-release marker
(``alpha``, ``beta``, ``pre``, ``rc``, ``milestone``, ``dev``, ``a``, ``b``, ``c``, ``m``, any
case, optionally set off by ``.``, ``_`` or ``-``, optionally numbered, the number set off
by ``.`` as semver writes it: ``v1.0.0-beta.1``, ``v2.0.0-rc.2``; a ``preview`` is a beta:
PowerShell's and .NET's previews come before their release candidates) and semver's build metadata (``+build.5``, never ordered
by). Versions are
ordered by ``packaging.version``: a patch letter is one more release number
(``1.1.1t`` is ``1.1.1.20``), ``pre`` and ``c`` are release candidates, a milestone
(redis's ``8.0-m01``) an alpha, and a development release (haproxy's ``v3.4-dev10``)
comes before them all. With the ``.`` separator a
tag that packaging reads as it is (``1.2.0.dev1``, ``1!2.0``) is read that way too.

:func:`scheme_for_tag` derives the scheme from one tag's shape (``init`` does it for
the pinned tag; a fork whose forktool.yaml names no ``release_version`` gets it from
its pinned tag the same way).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from packaging.version import Version

# packaging is imported where a version is read (5 ms): the configuration names a
# version scheme, and verify reads it before git starts without reading a version.

SEPARATORS = (".", "_", "-")
PRE_MARKERS = ("alpha", "beta", "preview", "pre", "rc", "milestone", "dev", "a", "b", "c", "m")
_PACKAGING_LABEL = {
    "milestone": "a",  # redis's 8.0-m01 < 8.0-rc1 < 8.0.0
    "m": "a",
    "alpha": "a",
    "beta": "b",
    "pre": "rc",
    "preview": "b",  # before the rcs: PowerShell's and .NET's previews precede their rc.1
    "rc": "rc",
    "a": "a",
    "b": "b",
    "c": "rc",
}
_GLOB = re.compile(r"[*?\[]")


class TagVersion(NamedTuple):
    """A version as a tag spells it, every piece kept so the tag can be written back."""

    release: tuple[str, ...]  # the release numbers as written ("7", "88", "1")
    letters: str = ""  # patch letters after the numbers ("t" in OpenSSL_1_1_1t)
    pre_separator: str = ""  # what sets the marker off ("-" in -rc1, "" in rc1)
    pre_label: str = ""  # the marker as written ("rc", "RC", "pre", "alpha")
    pre_number: str = ""  # its number as written ("" when unnumbered)
    post_separator: str = ""  # what sets a patch level off ("_" in V_9_6_P1)
    post_label: str = ""  # "p" or "P": a portable release or patch level (openssh)
    post_number: str = ""  # its number as written
    pre_number_separator: str = ""  # "." in semver's -beta.1, -rc.2 ("" in rc1)
    build: str = ""  # semver's build metadata ("+build.5"): written back, never ordered by

    def version(self) -> Version:
        """This version for ordering (``packaging.version``)."""
        from packaging.version import Version

        text = ".".join(str(int(n)) for n in self.release)
        if self.letters:
            text += f".{letters_rank(self.letters)}"
        label = self.pre_label.lower()
        if label and label != "dev":
            text += _PACKAGING_LABEL[label] + str(int(self.pre_number or "0"))
        if self.post_label:
            text += f".post{int(self.post_number)}"
        if label == "dev":  # haproxy's v3.4-dev10: before every alpha, rc and release of 3.4
            text += f".dev{int(self.pre_number or '0')}"
        return Version(text)


def letters_rank(letters: str) -> int:
    """``a`` 1 ... ``z`` 26, ``za`` 26*27+1: OpenSSL went from 0.9.8z to 0.9.8za."""
    rank = 0
    for char in letters.lower():
        rank = rank * 27 + (ord(char) - ord("a") + 1)
    return rank


class VersionScheme(NamedTuple):
    """How one upstream spells a release: ``prefix`` + numbers joined by ``separator``."""

    prefix: str = "v"
    separator: str = "."

    def parts(self, tag: str) -> TagVersion | None:
        """The pieces of ``tag``'s version, or None when ``tag`` names no version."""
        if not tag.startswith(self.prefix):
            return None
        match = _rest_regex(self.separator).fullmatch(tag[len(self.prefix) :])
        if match is None:
            return None
        return TagVersion(
            tuple(match["release"].split(self.separator)),
            match["letters"] or "",
            match["pre_sep"] or "",
            match["pre"] or "",
            match["pre_num"] or "",
            match["post_sep"] or "",
            match["post"] or "",
            match["post_num"] or "",
            match["pre_num_sep"] or "",
            match["build"] or "",
        )

    def read(self, tag: str) -> Version | None:
        """The version ``tag`` names, or None: the one version reader."""
        parts = self.parts(tag)
        if parts is not None:
            return parts.version()
        if self.separator == "." and tag.startswith(self.prefix):
            from packaging.version import InvalidVersion, Version

            try:
                return Version(tag[len(self.prefix) :])
            except InvalidVersion:
                return None
        return None

    def tag(self, parts: TagVersion) -> str:
        """The tag this scheme writes for ``parts`` (:meth:`parts` reads it back)."""
        release = self.separator.join(parts.release)
        pre = (
            f"{parts.pre_separator}{parts.pre_label}{parts.pre_number_separator}{parts.pre_number}"
            if parts.pre_label
            else ""
        )
        post = (
            f"{parts.post_separator}{parts.post_label}{parts.post_number}"
            if parts.post_label
            else ""
        )
        return f"{self.prefix}{release}{parts.letters}{post}{pre}{parts.build}"

    @property
    def glob(self) -> str:
        """The ``release_tags`` pattern that selects this scheme's tags."""
        return f"{self.prefix}*" if self.prefix else "[0-9]*"

    def to_json(self) -> dict[str, str]:
        return {"prefix": self.prefix, "separator": self.separator}


_REGEXES: dict[str, re.Pattern[str]] = {}


def _rest_regex(separator: str) -> re.Pattern[str]:
    if separator not in _REGEXES:
        sep = re.escape(separator)
        markers = "|".join(PRE_MARKERS)
        _REGEXES[separator] = re.compile(
            rf"(?P<release>[0-9]+(?:{sep}[0-9]+)*)"
            rf"(?P<letters>(?!(?:alpha|beta|pre|rc)(?:[0-9]|$|\+))[a-z]{{1,2}}(?![a-z0-9]))?"
            rf"(?:(?P<post_sep>[-_.]?)(?P<post>p)(?P<post_num>[0-9]+))?"
            rf"(?:(?P<pre_sep>[-_.]?)(?P<pre>{markers})(?:(?P<pre_num_sep>\.?)(?P<pre_num>[0-9]+))?)?"
            r"(?P<build>\+[0-9A-Za-z]+(?:[.-][0-9A-Za-z]+)*)?",
            re.IGNORECASE,
        )
    return _REGEXES[separator]


def scheme_for_tag(tag: str) -> VersionScheme | None:
    """The scheme a release tag is written in, or None when no scheme reads a version
    from it. The prefix ends where the version starts (the first run of digits that,
    with what follows, reads as a version: ``gtk2-2.24.0`` has prefix ``gtk2-``); the
    separator is whatever joins its first two numbers; for a single number, the
    character that ends the prefix when it also follows the number (``REL_16_RC1``),
    else ``.``."""
    for start in range(len(tag)):
        if not tag[start].isdigit() or (start and tag[start - 1].isdigit()):
            continue
        digits = start
        while digits < len(tag) and tag[digits].isdigit():
            digits += 1
        following = tag[digits : digits + 2]
        separator = "."
        if following[:1] in SEPARATORS and following[1:].isdigit():
            separator = following[0]
        elif following[:1] in SEPARATORS and tag[:start].endswith(following[0]):
            separator = following[0]  # one number, then a marker: REL_16_RC1
        scheme = VersionScheme(tag[:start], separator)
        if scheme.parts(tag) is not None:
            return scheme
    return None


def scheme_for_pattern(pattern: str) -> VersionScheme:
    """The scheme a ``release_tags`` pattern implies on its own: its literal prefix and
    the ``.`` separator (how forktool read versions before schemes were configurable)."""
    prefix = _GLOB.split(pattern, maxsplit=1)[0]
    return VersionScheme(prefix, ".")


def effective_scheme(pattern: str, pin_tag: str) -> VersionScheme:
    """The scheme of a fork that configures none: the pinned tag's, when the pin is one
    of the ``release_tags`` and its shape reads a version; else the pattern's."""
    from fnmatch import fnmatchcase

    if fnmatchcase(pin_tag, pattern):
        derived = scheme_for_tag(pin_tag)
        if derived is not None and fnmatchcase(derived.prefix + "1", pattern):
            return derived
    return scheme_for_pattern(pattern)
