"""The layering rules of docs/architecture.md, read off the source."""

from __future__ import annotations

import ast
from pathlib import Path

import forktool

PACKAGE = Path(forktool.__file__).parent
ENGINE = PACKAGE / "engine"

# Engines that still write git command lines of their own (none: every git and GNU
# patch command line is in forktool/git/). Add a module here only while its lines move.
STILL_MOVING: set[str] = set()


def _git_command_lines(path: Path) -> list[str]:
    """``<file>:<line>`` of each ``x.run([...])`` / ``x.out([...])`` given a literal
    argument list (a subprocess the module starts for itself is not git)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        receiver = node.func.value
        if isinstance(receiver, ast.Name) and receiver.id == "subprocess":
            continue
        if node.func.attr in ("run", "out") and node.args:
            if isinstance(node.args[0], (ast.List, ast.Tuple)):
                found.append(f"{path.name}:{node.lineno}")
    return found


def test_engines_leave_git_command_lines_to_git_py() -> None:
    offenders = [
        where
        for path in sorted(ENGINE.rglob("*.py"))
        if path.name not in STILL_MOVING
        for where in _git_command_lines(path)
    ]
    assert offenders == []


# The layers of docs/architecture.md, lowest first: a module imports only from its own
# layer or those below (a lazy import inside a function counts too).
LAYERS = (
    ("errors", "faults", "model", "escape", "__init__"),
    (
        "git",
        "inputs",
        "fsutil",
        "cache_files",
        "state",
        "config",
        "fork",
        "builder",
        "regex_safety",
    ),
    ("engine", "docker_client", "registry"),
    ("report", "output", "console"),
    (
        "app",
        "options",
        "error_handler",
        "commands",
        "cli",
        "demo",
        "head_start",
        "plain",
        "entry",
        "__main__",
    ),
)


def _module_name(path: Path) -> str:
    parts = ("forktool", *path.relative_to(PACKAGE).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """forktool module -> the forktool modules it imports, at the top or in a function."""
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("forktool"):
                for alias in node.names:
                    named = f"{node.module}.{alias.name}"
                    deps.add(named if named in modules else str(node.module))
            elif isinstance(node, ast.Import):
                deps.update(a.name for a in node.names if a.name.startswith("forktool."))
        graph[name] = {d for d in deps if d in modules and d != name}
    return graph


def layer(module: str) -> int:
    top = module.split(".")[1] if "." in module else "__init__"
    return next(i for i, names in enumerate(LAYERS) if top in names)


def test_every_module_has_a_layer() -> None:
    for module in import_graph():
        assert layer(module) >= 0


def test_no_import_runs_up_the_layers() -> None:
    up = [
        f"{module} -> {dep}"
        for module, deps in sorted(import_graph().items())
        for dep in sorted(deps)
        if layer(dep) > layer(module)
    ]
    assert up == []


def test_the_import_graph_has_no_cycle() -> None:
    graph = import_graph()
    done: set[str] = set()

    def walk(module: str, path: tuple[str, ...]) -> list[str]:
        if module in path:
            return [" -> ".join([*path[path.index(module) :], module])]
        if module in done:
            return []
        found = [c for dep in sorted(graph[module]) for c in walk(dep, (*path, module))]
        done.add(module)
        return found

    cycles = [c for module in sorted(graph) for c in walk(module, ())]
    assert cycles == []


# What starts a process, and why each may: git and GNU patch only through the runner.
SPAWNERS = {
    "git/runner.py": "git, and GNU patch for git/patch_tools.py",
    "regex_safety.py": "this interpreter, to run a user's regex under a time limit",
    "demo/images.py": "busybox, to build the demo's base image",
}


def test_only_the_runner_starts_git_or_gnu_patch() -> None:
    spawning = {
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*.py")
        if "import subprocess" in path.read_text(encoding="utf-8")
    }
    assert spawning == set(SPAWNERS)
