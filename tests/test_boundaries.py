"""The import rules between the package's parts, read from the source (ast), so they cannot
quietly regress: transports know nothing of the reference server, and the server knows nothing of
the client. The rules hold for every import, direct or through other modules of the package.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import ROOT

PACKAGE = ROOT / "mcp_tasks"

CLIENT_MODULES = frozenset(
    {
        "mcp_tasks",  # the package's __init__ is the client's public face
        "mcp_tasks._client",
        "mcp_tasks._input",
        "mcp_tasks._tasks",
        "mcp_tasks._wait",
        "mcp_tasks._session._subscription",
        "mcp_tasks.transports",
    }
)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path) -> set[str]:
    """Every mcp_tasks module `path` imports (TYPE_CHECKING imports included)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            found.add(module)
            # `from mcp_tasks.server import _http` imports a module, not a name.
            found.update(f"{module}.{alias.name}" for alias in node.names if f"{module}.{alias.name}" in MODULES)
    return {m for m in found if m == "mcp_tasks" or m.startswith("mcp_tasks.")}


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}
GRAPH = {name: imports_of(path) for name, path in MODULES.items()}


def reachable(start: str) -> dict[str, str]:
    """Every module `start` imports, directly or not, each with the module that imports it."""
    seen: dict[str, str] = {}
    todo = [start]
    while todo:
        current = todo.pop()
        for target in GRAPH.get(current, ()):
            # Importing mcp_tasks.a.b runs mcp_tasks.a's __init__ too. The root package's
            # __init__ runs for every import (Python's rule, not ours); only naming it counts,
            # and the direct check catches that.
            parts = target.split(".")
            for i in range(1 if target == "mcp_tasks" else 2, len(parts) + 1):
                prefix = ".".join(parts[:i])
                if prefix in MODULES and prefix not in seen and prefix != start:
                    seen[prefix] = current
                    todo.append(prefix)
    return seen


def chain(start: str, target: str, via: dict[str, str]) -> str:
    path = [target]
    while path[-1] in via and path[-1] != start:
        path.append(via[path[-1]])
    return " <- ".join(path)


TRANSPORTS = sorted(n for n in MODULES if n.startswith("mcp_tasks.transports"))
SERVER = sorted(n for n in MODULES if n.startswith("mcp_tasks.server"))


def test_the_rules_see_the_modules() -> None:
    assert "mcp_tasks.transports.direct" in TRANSPORTS and "mcp_tasks.server._server" in SERVER
    assert "mcp_tasks._exchange" in GRAPH["mcp_tasks.transports.direct"]
    assert "mcp_tasks._input_kinds" in GRAPH["mcp_tasks.server._input_rounds"]


@pytest.mark.parametrize("module", TRANSPORTS)
def test_a_transport_does_not_import_the_reference_server(module: str) -> None:
    via = reachable(module)
    bad = [chain(module, m, via) for m in via if m.startswith("mcp_tasks.server")]
    assert bad == []


@pytest.mark.parametrize("module", SERVER)
def test_the_server_does_not_import_the_client(module: str) -> None:
    direct = GRAPH[module] & CLIENT_MODULES
    assert direct == set(), f"{module} imports {sorted(direct)}"
    via = reachable(module)
    bad = [chain(module, m, via) for m in via if m in CLIENT_MODULES]
    bad += [chain(module, m, via) for m in via if m.startswith("mcp_tasks.transports")]
    assert bad == []


SESSION = (
    "mcp_tasks._client",
    "mcp_tasks._session._channel",
    "mcp_tasks._session._negotiation",
    "mcp_tasks._session._requester",
    "mcp_tasks._session._tool_headers",
    "mcp_tasks._session._dispatch",
    "mcp_tasks._session._agreement",
    "mcp_tasks._options",
)
TASKS = sorted(n for n in MODULES if n.startswith("mcp_tasks._tasks"))


def private_uses(path: Path) -> list[str]:
    """Where a module reads a private name of another object (``x._name`` with x not self or
    cls) or imports one (``from m import _name``).
    """
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            owner = node.value
            if not (isinstance(owner, ast.Name) and owner.id in ("self", "cls")):
                found.append(f"{path.name}:{node.lineno} .{node.attr}")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("mcp_tasks"):
            private = [a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
            found += [f"{path.name}:{node.lineno} {name}" for name in private]
    return found


@pytest.mark.parametrize("module", TASKS)
def test_the_tasks_code_touches_no_private_name(module: str) -> None:
    assert private_uses(MODULES[module]) == []


@pytest.mark.parametrize("module", SERVER)
def test_the_server_modules_touch_no_private_name_and_stay_small(module: str) -> None:
    """The reference server is cut along its jobs (issue 34): each module passes what another
    needs explicitly, and none grows past 400 lines.
    """
    assert private_uses(MODULES[module]) == []
    lines = MODULES[module].read_text().count("\n")
    assert lines <= 400, f"{module} has {lines} lines: one job per module"


@pytest.mark.parametrize("module", SESSION)
def test_the_client_and_its_channel_know_nothing_of_tasks(module: str) -> None:
    via = reachable(module)
    bad = [chain(module, m, via) for m in via if m.startswith("mcp_tasks._tasks")]
    assert bad == []
    assert "mcp_tasks._status" not in GRAPH[module]  # errors name a Status; the core never reads one


def test_the_client_is_a_thin_facade() -> None:
    assert "mcp_tasks._tasks._wait" in TASKS
    lines = (PACKAGE / "_client.py").read_text().count("\n")
    assert lines <= 350, f"_client.py has {lines} lines: move the work to the channel"


def module_level_imports(path: Path) -> set[str]:
    """The mcp_tasks modules `path` imports when it loads: not inside functions, not for typing."""
    found: set[str] = set()
    for node in ast.parse(path.read_text(), str(path)).body:
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {m for m in found if m.startswith("mcp_tasks.")}


@pytest.mark.parametrize("module", ["mcp_tasks._errors._display", "mcp_tasks._status"])
def test_errors_and_statuses_load_the_display_only_to_display(module: str) -> None:
    loaded = module_level_imports(MODULES[module])
    assert "mcp_tasks._errors" in loaded or "mcp_tasks._redact" in loaded  # the check sees imports
    assert "mcp_tasks._people._display" not in loaded
    assert "mcp_tasks._people._display" in GRAPH[module]  # imported where something is displayed


def test_no_import_cycle_inside_the_tasks_code() -> None:
    """One way down inside _tasks/ (design §8.1): the waits on one task, on a set, and the futures
    above the group core, the core above the watch; no module imports one that imports it back
    (the package's __init__, which only re-exports, left out).
    """
    inside = {name for name in TASKS if name != "mcp_tasks._tasks"}
    edges = {name: GRAPH[name] & inside for name in inside}
    assert "mcp_tasks._tasks._helpers" in edges["mcp_tasks._tasks._many"]  # the rule sees the imports

    def cycle_from(start: str) -> list[str] | None:
        todo = [(start, [start])]
        seen: set[str] = set()
        while todo:
            current, path = todo.pop()
            for target in edges[current]:
                if target == start:
                    return [*path, start]
                if target not in seen:
                    seen.add(target)
                    todo.append((target, [*path, target]))
        return None

    cycles = [" -> ".join(found) for name in sorted(inside) if (found := cycle_from(name)) is not None]
    assert cycles == []


@pytest.mark.parametrize(
    ("module", "most"),
    [
        ("_many", 350),
        ("_watch", 350),
        ("_streams", 350),
        ("_news", 350),
        ("_future", 350),
        ("_group", 400),
        ("_driver", 400),
    ],
)
def test_the_engine_modules_stay_small(module: str, most: int) -> None:
    lines = (PACKAGE / "_tasks" / f"{module}.py").read_text().count("\n")
    assert lines <= most, f"_tasks/{module}.py has {lines} lines: one job per module"
