"""docs/server.md against the code: its module table names every module of server/ and
the wire package and no module that is gone, its route table the routes the web layer
registers, its settings table every option and environment variable the server reads;
and the paths and dotted names the docs and the docstrings mention exist."""

from __future__ import annotations

import ast
import importlib
import io
import re
import tokenize
from pathlib import Path

import pytest

from server.config import OPTIONS
from tests.support import REPO_ROOT

SERVER_MD = (REPO_ROOT / "docs" / "server.md").read_text()
CODE_ROOTS = ("server", "wire/crescent_wire")
TICKED = re.compile(r"`([^`]+)`")


def table_after(header: str) -> list[list[str]]:
    """The rows (cells, stripped) of the Markdown table whose header line is ``header``."""
    lines = SERVER_MD.splitlines()
    start = lines.index(header)
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def is_module(path: Path) -> bool:
    """A Python module of its own: any file but a package's ``__init__.py`` that only
    gathers names (one with functions or classes of its own counts)."""
    if path.name != "__init__.py":
        return True
    tree = ast.parse(path.read_text())
    return any(isinstance(node, ast.FunctionDef | ast.ClassDef) for node in tree.body)


def existing_modules() -> set[str]:
    return {
        str(path.relative_to(REPO_ROOT))
        for root in CODE_ROOTS
        for path in (REPO_ROOT / root).rglob("*.py")
        if is_module(path)
    }


def listed_paths() -> list[str]:
    """The first cell of each row of the module table: `a/b.py`, `c.py` is a/b.py and
    a/c.py; a path ending in / is a whole package."""
    paths = []
    for row in table_after("| module | does | knows |"):
        folder = ""
        for item in TICKED.findall(row[0]):
            if "/" in item.rstrip("/"):
                folder = item.rstrip("/").rpartition("/")[0] + "/"
                paths.append(item)
            else:
                paths.append(folder + item)
    return paths


def test_the_module_table_lists_every_module_and_only_those() -> None:
    paths = listed_paths()
    gone = [path for path in paths if not (REPO_ROOT / path).exists()]
    assert not gone, f"docs/server.md's module table lists modules that do not exist: {gone}"
    covered = {path for path in existing_modules() if any(path.startswith(p) for p in paths)}
    missing = sorted(existing_modules() - covered)
    assert not missing, f"docs/server.md's module table leaves out: {missing}"
    twice = sorted({path for path in paths if paths.count(path) > 1})
    assert not twice, f"listed twice: {twice}"


def registered_routes() -> set[str]:
    """The paths ``server/web/app.py`` hands to ``app.router.add_*`` (and
    ``archive_routes.py`` to ``router.add_*``)."""
    return {
        node.args[0].value
        for name in ("app.py", "archive_routes.py")
        for node in ast.walk(ast.parse((REPO_ROOT / "server" / "web" / name).read_text()))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr.startswith("add_")
        and (
            (isinstance(node.func.value, ast.Attribute) and node.func.value.attr == "router")
            or (isinstance(node.func.value, ast.Name) and node.func.value.id == "router")
        )
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    }


def test_the_route_table_is_the_routes_the_app_registers() -> None:
    documented = {
        route for row in table_after("| route | answers |") for route in TICKED.findall(row[0])
    }
    assert registered_routes(), "no route found: has app.py's router call changed?"
    assert documented == registered_routes()


def read_settings() -> tuple[set[str], set[str]]:
    """The command line's options (``server.config.OPTIONS``) and the environment
    variables the server reads: the options' and those any module reads itself
    (``env.get("…")``, ``os.environ["…"]``)."""
    options = {"--" + option.name.replace("_", "-") for option in OPTIONS}
    read = re.compile(r'(?:env|environ)(?:\.get\(|\[)\s*"(CRESCENT_\w+)"')
    variables = {option.env_var for option in OPTIONS} | {
        name
        for path in (REPO_ROOT / "server").rglob("*.py")
        for name in read.findall(path.read_text())
    }
    return options, variables


def test_the_settings_table_has_every_option_and_variable() -> None:
    rows = table_after("| option | environment | default | |")
    documented = {item for row in rows for cell in row[:2] for item in TICKED.findall(cell)}
    documented = {item.split("=")[0] for item in documented}  # `CRESCENT_REDIS_CLUSTER=1`
    options, variables = read_settings()
    assert options and variables
    assert options <= documented, f"options not in the table: {sorted(options - documented)}"
    missing = sorted(variables - documented)
    assert not missing, f"environment variables not in the table: {missing}"


# ------------------------------------------------------------------ references

# A path the docs name: from one of the repository's top folders.
PATH = re.compile(r"`((?:server|wire|client|bench|tests|scripts|deploy|docs)/[^`\s]*)`")
# A dotted name of our packages, not part of a longer word or file name.
DOTTED = re.compile(r"(?<![\w./-])((?:server|crescent_wire|crescent_client)(?:\.[A-Za-z_]\w*)+)")
# Where the docs keep history (old paths are part of the story there).
HISTORY = {"performance-journal.md"}


def docs() -> list[Path]:
    return [REPO_ROOT / "README.md"] + [
        path for path in sorted((REPO_ROOT / "docs").glob("*.md")) if path.name not in HISTORY
    ]


def prose_of(path: Path) -> str:
    """What a module says rather than does: its docstrings and comments."""
    text = path.read_text()
    parts = [
        ast.get_docstring(node, clean=False) or ""
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
    ]
    parts += [
        token.string
        for token in tokenize.generate_tokens(io.StringIO(text).readline)
        if token.type == tokenize.COMMENT
    ]
    return "\n".join(parts)


def resolves(name: str) -> bool:
    """``server.a.b.C``: a module, then attributes of it."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(obj, attribute):
                return False
            obj = getattr(obj, attribute)
        return True
    return False


def path_exists(path: str) -> bool:
    path = path.rstrip(".,:;")
    if any(mark in path for mark in ("<", "{", "…", "NNNN")):  # a pattern, not a path
        return True
    return (
        bool(list(REPO_ROOT.glob(path.rstrip("/")))) if "*" in path else (REPO_ROOT / path).exists()
    )


def python_files() -> list[Path]:
    return sorted(path for root in CODE_ROOTS for path in (REPO_ROOT / root).rglob("*.py"))


@pytest.mark.parametrize("doc", docs(), ids=lambda p: p.name)
def test_the_paths_and_names_a_doc_mentions_exist(doc: Path) -> None:
    text = doc.read_text()
    stale = [path for path in PATH.findall(text) if not path_exists(path)]
    stale += [
        name
        for ticked in TICKED.findall(text)
        for name in DOTTED.findall(ticked)
        if not name.endswith((".py", ".md")) and not resolves(name)
    ]
    assert not stale, f"{doc.name} names what does not exist: {sorted(set(stale))}"


def test_the_names_docstrings_and_comments_mention_exist() -> None:
    stale = [
        f"{path.relative_to(REPO_ROOT)}: {name}"
        for path in python_files()
        for name in DOTTED.findall(prose_of(path))
        if not resolves(name.rstrip("."))
    ]
    assert not stale, f"docstrings or comments name what does not exist: {stale}"
