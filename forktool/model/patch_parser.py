"""The one patch parser: a patch file's bytes to a :class:`~forktool.model.patchfile.PatchFile`
(problems are returned, never raised), its header alone, or the outline of its file
diffs."""

from __future__ import annotations

import re
from collections.abc import Sequence

from forktool.model import paths
from forktool.model.patch_header import HeaderReader
from forktool.model.patch_text import (
    CONTENT_CUT,
    EMPTY_BLOBS,
    GIT_EXTENDED,
    NOTHING_UNDER,
    bare,
    body_misfit,
    is_blank,
    is_preamble,
    is_signature,
    name_field,
    names_disagree,
    shown_name,
    spaced_name,
    split_git_names,
    split_lines,
    starts_next_part,
    unquote,
)
from forktool.model.patchfile import (
    SYMLINK_MODE,
    FileDiff,
    Hunk,
    PatchFile,
    PatchHeader,
    PatchProblem,
)

# A character of Parser.kinds() that no hunk body line has.
_NOT_BODY = re.compile(r"[^ +\\\-]")
_HUNK = re.compile(r"^@@ -([0-9]+)(?:,([0-9]+))? \+([0-9]+)(?:,([0-9]+))? @@(.*)$")
_INDEX = re.compile(r"^index [0-9a-fA-F]+\.\.([0-9a-fA-F]+)(?: ([0-7]{6}))?$")
_BINARY_DIFFER = re.compile(r"^Binary files (.+) and (.+) differ$")
_BINARY_BLOCK = re.compile(r"^(?:literal|delta) [0-9]+$")


def _hunk_name(number: int, builder: _FileBuilder) -> str:
    return f"hunk {number} of '{builder.label}'"


def parse_patch(data: bytes, *, strip: int = 1) -> PatchFile:
    """Parse one patch file; problems are returned, never raised."""
    text, newline_at_eof = split_lines(data)
    return _Parser(text, strip).parse(newline_at_eof)


def parse_header(data: bytes, *, strip: int = 1) -> PatchHeader:
    """``parse_patch(data).header``, without reading the diffs: only the lines up to
    the first ``diff --git`` line (that line included) are read. The header ends there
    or before (a diff in another format may start it earlier, and none of its three
    lines can be that line)."""
    cut = data.find(b"\ndiff --git ")
    if cut != -1:
        end = data.find(b"\n", cut + 1)
        data = data if end == -1 else data[: end + 1]
    text, _ = split_lines(data)
    parser = _Parser(text, strip)
    first = parser.next_diff(0)
    return parser.parse_header(text[: len(text) if first is None else first])


class _FileBuilder:
    """What is known about one file diff while its lines are read."""

    def __init__(self, line: int, header_lines: list[str]) -> None:
        self.line = line  # where the diff itself starts, after any separator lines in front
        self.label = ""
        self.header_lines = header_lines
        self.hunks: list[Hunk] = []
        self.git_names: tuple[str, str] | None = None
        self.minus: str | None = None  # name from "---" (or a plain "Binary files" line)
        self.plus: str | None = None
        self.rename_from: str | None = None
        self.rename_to: str | None = None
        self.copy_from: str | None = None
        self.copy_to: str | None = None
        self.old_mode: str | None = None
        self.new_mode: str | None = None
        self.index_mode: str | None = None
        self.index_new: str | None = None  # the blob the index line says the file becomes
        self.is_new = False
        self.is_deleted = False
        self.is_binary = False
        self.reported = False  # a malformed problem was reported; don't pile on
        self.unsafe_reasons: set[str] = set()

    def changes_nothing(self) -> bool:
        """A ``diff --git`` header with nothing under it (no hunk, mode, rename, copy or
        binary data): git never writes one; a hunk was cut out by hand."""
        said = (self.old_mode, self.new_mode, self.rename_from, self.copy_from, self.minus)
        kinds = self.hunks or self.is_binary or self.is_new or self.is_deleted
        return self.git_names is not None and not (self.reported or kinds or any(said))

    def content_cut(self) -> bool:
        """A file created with the content its index line names and no hunk to make it:
        cut by hand (git creates it empty, dpkg-source's GNU patch -E not at all)."""
        new = (self.index_new or "").lower()
        cut = self.is_new and not (self.hunks or self.is_binary or self.reported)
        return cut and len(new) >= 7 and not any(e.startswith(new) for e in EMPTY_BLOBS)

    def raw_old(self) -> str:
        if self.minus is not None:
            return self.minus
        return self.git_names[0] if self.git_names else ""

    def raw_new(self) -> str:
        if self.plus is not None:
            return self.plus
        return self.git_names[1] if self.git_names else ""


class _Parser(HeaderReader):
    def parse(self, newline_at_eof: bool) -> PatchFile:
        first = self.next_diff(0)
        header = self.parse_header(self.lines[: len(self.lines) if first is None else first])
        files: list[FileDiff] = []
        trailer_lines: tuple[str, ...] = ()
        if first is None and self.lines:  # 0 bytes: an empty patch, a no-op for quilt
            self.malformed("contains no diff", None)
        self.cursor.pos = len(self.lines) if first is None else first
        gap: list[str] = []
        while not self.cursor.at_end:
            before = self.cursor.pos
            diff, reported = self.parse_file(gap)
            if self.cursor.pos == before:
                raise RuntimeError(f"patch parser made no progress at line {before + 1}")
            files.append(diff)
            gap = self.gap_after(diff, reported)
            if self.cursor.at_end:
                trailer_lines = tuple(gap)
        problems = sorted(self.problems, key=lambda p: p.line or 0)
        return PatchFile(header, tuple(files), trailer_lines, tuple(problems), newline_at_eof)

    def diff_starts_at(self, index: int) -> bool:
        text = bare(self.lines[index])
        if text.startswith("diff --git "):
            return True
        if _BINARY_DIFFER.match(text):
            return True
        # Like git: "---" and "+++" only start a diff when a hunk follows, so a
        # "--- " line in a commit message is not mistaken for one.
        return (
            text.startswith("--- ")
            and index + 2 < len(self.lines)
            and bare(self.lines[index + 1]).startswith("+++ ")
            and bare(self.lines[index + 2]).startswith("@@ ")
        )

    def next_diff(self, start: int) -> int | None:
        """Index where the next file diff (its preamble included) starts, from ``start`` on."""
        for index in range(start, len(self.lines)):
            if self.diff_starts_at(index):
                while index > start and is_preamble(self.lines[index - 1]):
                    index -= 1
                return index
        return None

    def gap_after(self, diff: FileDiff, reported: bool) -> list[str]:
        """Consume the lines between this file diff and the next one (or the end).

        Blank lines may separate diffs, and so may a patch's own structure (a commit or
        submodule header, the next mail: :func:`starts_next_part`); after the last diff, a
        signature (``-- ``, or topgit's ``---`` and ``tg:``). Other text is reported."""
        start = self.cursor.pos
        end = self.next_diff(start)
        stop = len(self.lines) if end is None else end
        gap = list(self.lines[start:stop])
        self.cursor.pos = stop
        for offset, line in enumerate(gap):
            if is_blank(line):
                continue
            after = gap[offset + 1] if offset + 1 < len(gap) else None
            ends = end is None and is_signature(line, after)
            if not ends and not starts_next_part(gap, offset) and not reported:
                # (a line that broke the diff was named already)
                self.malformed(
                    f"unexpected text after the last hunk of '{diff.path}'", start + offset + 1
                )
            break
        return gap

    def parse_file(self, gap: list[str]) -> tuple[FileDiff, bool]:
        """One file diff from the cursor, and whether a malformed problem ended it early."""
        cursor = self.cursor
        builder = _FileBuilder(line=cursor.number, header_lines=list(gap))
        while (text := cursor.peek()) is not None and is_preamble(text):
            self.read_preamble(builder)
        text = cursor.peek() or ""
        if text.startswith("diff --git "):
            self.read_git_line(builder)
            self.read_git_extended(builder)
        elif (binary := _BINARY_DIFFER.match(text)) is not None:
            builder.minus, builder.plus = binary.group(1), binary.group(2)
            builder.is_binary = True
            self.check_path(builder, builder.minus, cursor.number)
            self.check_path(builder, builder.plus, cursor.number)
            builder.header_lines.append(cursor.take())
        self.read_names(builder)
        self.read_hunks(builder)
        if builder.changes_nothing():
            self.report(builder, NOTHING_UNDER.format(builder.label), builder.line)
        elif builder.content_cut():
            self.report(builder, CONTENT_CUT.format(builder.label, builder.index_new), builder.line)
        return self.finish(builder), builder.reported

    def read_preamble(self, builder: _FileBuilder) -> None:
        text = self.cursor.peek() or ""
        if text.startswith("Index: "):
            # Never stripped, but GNU patch may fall back to it: it must be safe too.
            reason = paths.check_relative_path(text[len("Index: ") :])
            self.unsafe(builder, reason, self.cursor.number)
        builder.header_lines.append(self.cursor.take())

    def read_git_line(self, builder: _FileBuilder) -> None:
        number = self.cursor.number
        text = self.cursor.peek() or ""
        builder.git_names = split_git_names(text[len("diff --git ") :], self.strip)
        if builder.git_names is not None:
            builder.label = paths.strip_components(builder.git_names[1], self.strip) or ""
            for name in builder.git_names:
                self.check_path(builder, name, number)
        builder.header_lines.append(self.cursor.take())

    def read_git_extended(self, builder: _FileBuilder) -> None:
        cursor = self.cursor
        while (text := cursor.peek()) is not None:
            if text == "GIT binary patch":
                self.read_binary(builder)
                continue
            if _BINARY_DIFFER.match(text):
                builder.is_binary = True
            elif not text.startswith(GIT_EXTENDED):
                return
            self.read_extended(builder, text)
            builder.header_lines.append(cursor.take())

    def read_extended(self, builder: _FileBuilder, text: str) -> None:
        number = self.cursor.number
        key, _, value = text.partition(" ")
        if text.startswith(("rename from ", "rename to ", "copy from ", "copy to ")):
            kind, _, value = value.partition(" ")
            name = self.unquote_name(value, number)
            if name is None:
                return
            self.unsafe(builder, paths.check_relative_path(name), number)
            setattr(builder, f"{key}_{kind}", name)
        elif text.startswith("old mode "):
            builder.old_mode = value.partition(" ")[2]
        elif text.startswith("new mode "):
            builder.new_mode = value.partition(" ")[2]
        elif text.startswith("deleted file mode "):
            builder.is_deleted = True
            builder.old_mode = text[len("deleted file mode ") :]
        elif text.startswith("new file mode "):
            builder.is_new = True
            builder.new_mode = text[len("new file mode ") :]
        elif (index := _INDEX.match(text)) is not None:
            builder.index_new, builder.index_mode = index.group(1), index.group(2)

    def read_binary(self, builder: _FileBuilder) -> None:
        """``GIT binary patch``: a forward and an optional reverse block, each ending blank."""
        cursor = self.cursor
        builder.is_binary = True
        start = cursor.number
        builder.header_lines.append(cursor.take())
        for block in range(2):
            if not _BINARY_BLOCK.match(cursor.peek() or ""):
                if block == 0:
                    self.report(builder, f"binary patch of '{builder.label}' has no data", start)
                return
            builder.header_lines.append(cursor.take())
            while (text := cursor.peek()) is not None and text != "":
                builder.header_lines.append(cursor.take())
            if text is None:
                self.report(builder, f"binary patch of '{builder.label}' is truncated", start)
                return
            builder.header_lines.append(cursor.take())

    def read_names(self, builder: _FileBuilder) -> None:
        cursor = self.cursor
        old, new = cursor.peek(), cursor.peek(1)
        if old is None or new is None or not old.startswith("--- ") or not new.startswith("+++ "):
            return
        for attr, text in (("minus", old), ("plus", new)):
            number = cursor.number
            name = self.unquote_name(text[4:], number, field_name=True)
            if name is not None:
                setattr(builder, attr, name)
                self.check_path(builder, name, number)
                if not builder.reported and (why := spaced_name(text[4:], name)):
                    self.report(builder, why, number)
            builder.header_lines.append(cursor.take())
        builder.label = shown_name((builder.plus, builder.minus), self.strip, builder.label)
        if (cursor.peek() or "")[:2] != "@@" and not builder.is_binary:
            message = f"'{builder.label}' has '---'/'+++' lines but no hunk"
            self.report(builder, message, cursor.number - 1)

    def read_hunks(self, builder: _FileBuilder) -> None:
        while not builder.reported and (self.cursor.peek() or "").startswith("@@"):
            hunk = self.read_hunk(builder, len(builder.hunks) + 1)
            if hunk is None:
                return
            builder.hunks.append(hunk)

    def read_hunk(self, builder: _FileBuilder, number: int) -> Hunk | None:
        cursor = self.cursor
        lines = cursor.lines
        start = cursor.number
        header = lines[cursor.pos]
        match = _HUNK.match(bare(header))
        if match is None:
            self.report(builder, f"{_hunk_name(number, builder)} has a malformed header", start)
            return None
        old_start, old_size, new_start, new_size, section = match.groups()
        old_count = 1 if old_size is None else int(old_size)
        new_count = 1 if new_size is None else int(new_size)
        cursor.pos += 1
        length = self.body_length(cursor.pos, old_count, new_count)
        body: Sequence[str]
        if length is not None:
            body = lines[cursor.pos : cursor.pos + length]
            cursor.pos += length
        else:
            where = _hunk_name(number, builder)
            body = self.read_body(builder, where, start, old_count, new_count)
        # "\ No newline at end of file" follows the line it qualifies.
        end = cursor.pos
        while end < len(lines) and lines[end][:1] == "\\":
            end += 1
        if end != cursor.pos:
            body = [*body, *lines[cursor.pos : end]]
            cursor.pos = end
        return Hunk(
            old_start=int(old_start),
            old_count=old_count,
            new_start=int(new_start),
            new_count=new_count,
            section=section[1:] if section.startswith(" ") else section,
            line=start,
            lines=tuple(body),
            header=header,
        )

    def kinds(self) -> str:
        """Each line's kind as a hunk body reads it, one character a line: its first
        character, a space for an empty line (an empty context line may lose its space;
        git accepts that, and so do we) and for a lone CR (so CR LF patch files count
        too)."""
        if self._kinds is None:
            kinds = "".join([raw[:1] or " " for raw in self.lines])
            if "\r" in kinds:  # a lone CR is an empty line of a CR LF file
                pairs = zip(self.lines, kinds, strict=True)
                kinds = "".join(" " if raw == "\r" else kind for raw, kind in pairs)
            self._kinds = kinds
        return self._kinds

    def body_length(self, pos: int, old_count: int, new_count: int) -> int | None:
        """How many lines from ``pos`` make a hunk body of exactly these counts, read in
        bulk; None when the lines do not (:meth:`read_body` then says why).

        The body is the shortest run of lines whose context and removed lines number
        ``old_count`` and whose context and added lines number ``new_count``, every line
        a context, removed, added or ``\\`` line. Each line adds at most one to each
        count, so the run is at least as long as the larger shortfall: it grows by that
        until the counts meet, and a run that overshoots one count cannot be a body
        (line by line, the first line too many is a misfit)."""
        kinds = self.kinds()
        length = max(old_count, new_count)
        while True:
            stop = pos + length
            if stop > len(kinds):
                return None
            context = kinds.count(" ", pos, stop)
            old_short = old_count - context - kinds.count("-", pos, stop)
            new_short = new_count - context - kinds.count("+", pos, stop)
            if old_short < 0 or new_short < 0:
                return None
            if old_short == 0 and new_short == 0:
                break
            length += max(old_short, new_short)
        return None if _NOT_BODY.search(kinds, pos, pos + length) else length

    def read_body(
        self, builder: _FileBuilder, where: str, start: int, old_count: int, new_count: int
    ) -> list[str]:
        """A hunk body read line by line, reporting the first line that does not fit."""
        cursor = self.cursor
        body: list[str] = []
        old_left, new_left = old_count, new_count
        lines, pos, end = cursor.lines, cursor.pos, len(cursor.lines)
        while old_left > 0 or new_left > 0:
            if pos >= end:
                cursor.pos = pos
                self.report(
                    builder,
                    f"{where} is truncated: {old_left} old and {new_left} new lines missing",
                    start,
                )
                break
            raw = lines[pos]
            # An empty context line may lose its space (git accepts that, and so
            # do we); a lone CR counts as empty so CR LF patch files count too.
            kind = (raw[:1] if raw != "\r" else "") or " "
            if kind == " " and old_left and new_left:
                old_left -= 1
                new_left -= 1
            elif kind == "-" and old_left:
                old_left -= 1
            elif kind == "+" and new_left:
                new_left -= 1
            else:
                wrong = body_misfit(kind, old_left, new_left)
                if wrong is not None:
                    cursor.pos = pos
                    self.report(builder, f"{where}: {wrong}", cursor.number)
                    break
            body.append(raw)
            pos += 1
        else:
            cursor.pos = pos
        return body

    def finish(self, builder: _FileBuilder) -> FileDiff:
        raw_old, raw_new = builder.raw_old(), builder.raw_new()
        is_new = builder.is_new or paths.is_dev_null(raw_old)
        is_deleted = builder.is_deleted or paths.is_dev_null(raw_new)
        old_path = None if is_new else builder.rename_from or builder.copy_from
        new_path = None if is_deleted else builder.rename_to or builder.copy_to
        moves = (builder.rename_from, builder.rename_to, builder.copy_from, builder.copy_to)
        if old_path is None and not is_new:
            old_path = paths.strip_components(raw_old, self.strip)
        if new_path is None and not is_deleted:
            new_path = paths.strip_components(raw_new, self.strip)
        if not raw_old and not raw_new:
            self.report(builder, "cannot tell which file this diff changes", builder.line)
        elif old_path is None and new_path is None and not builder.unsafe_reasons:
            self.report(builder, "both sides of the diff are /dev/null", builder.line)
        elif not (builder.reported or builder.unsafe_reasons):  # else said already
            said = (builder.git_names, builder.minus, builder.plus, self.strip, moves)
            if why := names_disagree(*said):
                self.report(builder, f"'{builder.label}': {why}", builder.line)
        old_mode = builder.old_mode or builder.index_mode
        new_mode = builder.new_mode or builder.index_mode
        return FileDiff(
            old_path=old_path,
            new_path=new_path,
            raw_old=raw_old,
            raw_new=raw_new,
            old_mode=old_mode,
            new_mode=new_mode,
            is_new=is_new,
            is_deleted=is_deleted,
            is_rename=builder.rename_from is not None or builder.rename_to is not None,
            is_copy=builder.copy_from is not None or builder.copy_to is not None,
            is_binary=builder.is_binary,
            is_symlink=SYMLINK_MODE in (old_mode, new_mode),
            line=builder.line,
            hunks=tuple(builder.hunks),
            header_lines=tuple(builder.header_lines),
        )

    def unquote_name(self, text: str, number: int, *, field_name: bool = False) -> str | None:
        """A name from a header line, C-unquoted; ``field_name`` also drops a timestamp."""
        if field_name:
            name = name_field(text)
        elif text.startswith('"'):
            unquoted = unquote(text)
            name = None if unquoted is None or unquoted[1] != len(text) else unquoted[0]
        else:
            name = text
        if name is None:
            self.malformed("badly quoted file name", number)
        return name

    def check_path(self, builder: _FileBuilder, raw: str, number: int) -> None:
        self.unsafe(builder, paths.check_patch_path(raw, self.strip), number)

    def unsafe(self, builder: _FileBuilder, reason: str | None, number: int) -> None:
        # The same name usually appears on the diff --git, ---, and +++ lines:
        # report each reason once per file diff, at its first line.
        if reason is None or reason in builder.unsafe_reasons:
            return
        builder.unsafe_reasons.add(reason)
        self.problems.append(PatchProblem("unsafe", reason, number))

    def report(self, builder: _FileBuilder, message: str, number: int | None) -> None:
        builder.reported = True
        self.malformed(message, number)
