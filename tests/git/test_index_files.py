"""Files read out of a temporary index: each path taken literally, the bytes git
stores (no attribute, filter or line-ending conversion), modes kept."""

from __future__ import annotations

from pathlib import Path

from forktool.builder import RepoBuilder


def test_staged_files_are_read_literally_and_raw(tmp_path: Path) -> None:
    repo = RepoBuilder.init(tmp_path / "repo")
    repo.git.run(["config", "filter.boom.smudge", "false"], purpose="a failing filter")
    repo.commit(
        "files\n",
        {
            ".gitattributes": "* text eol=crlf filter=boom\n",
            "a*b": "star\n",
            "ab": "plain\n",
            "[x]": "bracket\n",
            "run.sh": "#!/bin/sh\n",
        },
    )
    (repo.path / "run.sh").chmod(0o755)
    repo.commit("executable\n")
    with repo.git.temp_index("HEAD") as index:
        # "a*b" and "[x]" as patterns would also name "ab" and "x"; "nowhere" is absent
        entries = index.staged_entries(["a*b", "[x]", "run.sh", "nowhere"])
        assert sorted(entries) == ["[x]", "a*b", "run.sh"]
        assert entries["run.sh"][0] == "100755"
        assert entries["a*b"][0] == "100644"
        blobs = index.blobs([oid for _mode, oid in entries.values()], purpose="read")
        assert sorted(blobs.values()) == [b"#!/bin/sh\n", b"bracket\n", b"star\n"]  # LF kept
        assert index.blobs([":a*b", "HEAD:ab", ":nowhere"], purpose="read") == {
            ":a*b": b"star\n",
            "HEAD:ab": b"plain\n",
        }
