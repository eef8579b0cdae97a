"""The package's layers, as rules read from the source (ast), so they cannot quietly regress.

`FLOORS` is the map of the house, lowest first: a module may import from its own floor and the
floors below it, never from above. Parts that stand side by side on one floor import none of one
another. `ONLY_FROM` names the rooms few may enter. And no module imports, however indirectly, a
module that imports it back: the whole import graph has no circle.

An import counts wherever it is made at run time, at the top of a module or inside a function;
an import under ``if TYPE_CHECKING:`` does not (it never runs). A module loaded by its name counts
as imported too: a string given to ``importlib.import_module``, and the module names of a map of
names loaded on first use (`mcp_tasks._lazy`: a dict whose keys, or values, all name modules).
A part named here is a module or a package with all its modules; a module takes the floor of the
longest part that names it. A new module lands on its folder's floor; a new folder or flat module
must be placed here (a test says so), which is the moment to decide its floor.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import NamedTuple

import pytest

from tests.conftest import ROOT

PACKAGE = ROOT / "mcp_tasks"


class Floor(NamedTuple):
    name: str
    parts: tuple[str, ...]  # under mcp_tasks: "_clock" is mcp_tasks._clock, "" the package's face
    why: str
    side_by_side: bool = False  # its parts import none of one another


FLOORS = (
    Floor(
        "ground",
        ("_clock", "_threads", "_redact", "_printable", "_call_text", "_logs", "_version", "_lazy"),
        "pure helpers every part uses: deadlines, threads, short ids, escaping, a call's short "
        "form, log lines, the version, names loaded on first use; they raise only Python's own "
        "errors (the errors tell the clock what a passed deadline raises: `_clock.expire_with`)",
    ),
    Floor(
        "values",
        ("_task_state", "_status", "_status_fields", "_status_rows", "_errors", "_render_hook"),
        "what a call returns and raises: `Status` and the `McpError` family; they show in "
        "notebooks by handing their rows to the renderer registered on `_render_hook`",
    ),
    Floor(
        "wire",
        ("_wire", "_exchange", "_input_kinds"),
        "the protocol's words: messages and methods, the in-process exchange that the direct "
        "transport and the server share, the kinds of input request",
    ),
    Floor(
        "outside",
        ("transports", "_oauth", "server", "_store"),
        "what meets the world, each part on its own: the transports (and their retry policy), "
        "OAuth, the reference server on the far end, the task stores (which know no client)",
        side_by_side=True,
    ),
    Floor(
        "session",
        ("_session", "_options", "_client", "_input", "_tracing"),
        "one client's conversation: the channel and its parts, the question queue (`_turns`), "
        "options, `Client`, input handlers (the prompt registers itself with them), the tracing "
        "hook and its OpenTelemetry side",
    ),
    Floor("tasks", ("_tasks",), "the Tasks extension: calls, waits, sets, futures, the watch, adopt"),
    Floor(
        "people",
        ("_people",),
        "what a person sees and answers: status lines, progress, notebook tables, the prompt",
    ),
    Floor("cli", ("cli",), "the mcp-tasks command"),
    Floor(
        "face",
        ("", "__main__", "examples"),
        "the public surface (re-exports from every floor, each loaded on first use, the renderer when "
        "a value first shows, the prompt with `InputHandlers`), "
        "python -m mcp_tasks, the example servers",
    ),
)

# Who alone may import a part: a module by its name, a folder (all its modules) with a "/".
ONLY_FROM = {
    "_tracing._otel": (
        ("_tracing",),
        "the one module that imports OpenTelemetry: the tracing hook loads it when a client asks "
        "for tracing, and no one else",
    ),
    "server": (
        ("server/", "cli/", "examples/"),
        "the reference server, the client's other end: the command runs one (demo, a module:attr "
        "target) and the examples are servers; the client side never imports it",
    ),
}


# -- how the source is read -------------------------------------------------------------------


def full(part: str) -> str:
    return f"mcp_tasks.{part}" if part else "mcp_tasks"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(path: Path) -> set[str]:
    """Every mcp_tasks module `path` imports at run time (in a function too; not for typing).

    ``from p import m`` imports the module p.m when there is one, and reads p's face too.
    """
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _type_checking(node.test):
            for other in node.orelse:
                visit(other)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names if f"{module}.{alias.name}" in MODULES)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module":
            found.update(arg.value for arg in node.args if isinstance(arg, ast.Constant) and isinstance(arg.value, str))
        elif isinstance(node, ast.Dict):
            for side in (node.keys, node.values):
                names = [item.value if isinstance(item, ast.Constant) else None for item in side]
                if names and all(isinstance(n, str) and n in MODULES for n in names):
                    found.update(n for n in names if isinstance(n, str))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(), str(path)))
    return {m for m in found if m in MODULES and m != name}


GRAPH = {name: imports_of(path) for name, path in MODULES.items()}


def holds(part: str, module: str) -> bool:
    """Whether `part` (a full name) is `module` or a package holding it (the face holds itself alone)."""
    return module == part or (part != "mcp_tasks" and module.startswith(part + "."))


PARTS = {full(part): floor.name for floor in FLOORS for part in floor.parts}
RANK = {floor.name: rank for rank, floor in enumerate(FLOORS)}
SIDE_BY_SIDE = {floor.name for floor in FLOORS if floor.side_by_side}


def placed(module: str) -> str | None:
    """The longest part of `FLOORS` that holds `module` (None: it stands on no floor)."""
    named = [part for part in PARTS if holds(part, module)]
    return max(named, key=len) if named else None


def part_of(module: str) -> str:
    part = placed(module)
    assert part is not None, f"{module} stands on no floor: place it in FLOORS"
    return part


def floor_of(module: str) -> str:
    return PARTS[part_of(module)]


# -- the rules -----------------------------------------------------------------------------------


def test_the_rules_see_the_modules() -> None:
    """The reading itself: function-level imports count, typing-only ones do not, and every
    module stands on a floor.
    """
    assert "mcp_tasks._exchange" in GRAPH["mcp_tasks.transports.direct"]
    assert "mcp_tasks._tracing._otel" in GRAPH["mcp_tasks._tracing"]  # made inside a function
    assert "mcp_tasks._session._channel" not in GRAPH["mcp_tasks._tracing"]  # under TYPE_CHECKING
    assert "mcp_tasks._tasks._wait" in GRAPH["mcp_tasks._tasks"]  # a name loaded on first use
    assert {"mcp_tasks._oauth", "mcp_tasks._people._display"} <= GRAPH["mcp_tasks"]  # ... and by name
    unplaced = [m for m in MODULES if placed(m) is None]
    assert unplaced == [], "place these in FLOORS"
    assert floor_of("mcp_tasks._session._turns") == "session" and floor_of("mcp_tasks") == "face"


def test_every_floor_is_named_once() -> None:
    names = [part for floor in FLOORS for part in floor.parts]
    assert len(names) == len(set(names))
    assert all(full(part) in MODULES for part in names), "a floor names a module that is gone"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_a_module_imports_only_its_own_floor_and_below(module: str) -> None:
    here = floor_of(module)
    above = [f"{target} ({floor_of(target)})" for target in GRAPH[module] if RANK[floor_of(target)] > RANK[here]]
    assert above == [], f"{module} ({here}) imports from above"
    if here in SIDE_BY_SIDE:
        beside = [t for t in GRAPH[module] if floor_of(t) == here and part_of(t) != part_of(module)]
        assert beside == [], f"{module} imports its neighbours on the {here} floor"


def may_enter(module: str, importers: tuple[str, ...]) -> bool:
    return any(holds(full(entry[:-1]), module) if entry.endswith("/") else module == full(entry) for entry in importers)


@pytest.mark.parametrize("room", sorted(ONLY_FROM))
def test_few_may_import_these(room: str) -> None:
    importers = ONLY_FROM[room][0]
    bad = [
        module
        for module, imported in GRAPH.items()
        if not may_enter(module, importers) and any(holds(full(room), target) for target in imported)
    ]
    assert bad == [], f"only {importers} import {full(room)}"


def reachable(start: str) -> dict[str, str]:
    """Every module `start` imports, directly or not, each with the module that imports it (the
    packages holding an imported module run too, as Python imports them first).
    """
    seen: dict[str, str] = {}
    todo = [start]
    while todo:
        current = todo.pop()
        for target in GRAPH[current]:
            parts = target.split(".")
            for i in range(2, len(parts) + 1):
                prefix = ".".join(parts[:i])
                if prefix in MODULES and prefix not in seen and prefix != start:
                    seen[prefix] = current
                    todo.append(prefix)
    return seen


@pytest.mark.parametrize("module", sorted(m for m in MODULES if placed(m) == "mcp_tasks.server"))
def test_the_server_runs_nothing_of_the_client(module: str) -> None:
    """All the reference server runs, however indirectly, is its own and the wire and below."""
    via = reachable(module)
    bad = [m for m in via if part_of(m) != "mcp_tasks.server" and RANK[floor_of(m)] > RANK["wire"]]
    assert bad == [], f"{module} runs {sorted(bad)}"


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in graph[module]:
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_no_import_circle_anywhere() -> None:
    found = cycles(GRAPH)
    assert found == [], "import circles: " + "; ".join(" <-> ".join(component) for component in found)


def test_the_circle_check_sees_a_circle() -> None:
    circled = {name: set(targets) for name, targets in GRAPH.items()}
    assert "mcp_tasks._redact" in circled["mcp_tasks._status"]
    circled["mcp_tasks._redact"].add("mcp_tasks._status")  # a circle of two
    assert any({"mcp_tasks._redact", "mcp_tasks._status"} <= set(component) for component in cycles(circled))


def test_the_renderer_imports_no_value_type() -> None:
    """The value types hand their rows to the renderer, which draws them knowing no Status."""
    assert "mcp_tasks._render_hook" in GRAPH["mcp_tasks._people._display"]  # (it registers itself)
    assert {"mcp_tasks._status", "mcp_tasks._errors"} & GRAPH["mcp_tasks._people._display"] == set()


@pytest.mark.parametrize(
    "module",
    sorted(
        m for m in MODULES if m.startswith("mcp_tasks._session") or m in ("mcp_tasks._client", "mcp_tasks._options")
    ),
)
def test_the_session_never_reads_a_status(module: str) -> None:
    """Errors name a Status; the client and its channel never read one (that is the tasks' work)."""
    assert "mcp_tasks._status" not in GRAPH[module]


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


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith(("mcp_tasks._tasks", "mcp_tasks.server"))))
def test_the_tasks_code_and_the_server_touch_no_private_name(module: str) -> None:
    """Each passes what another module needs explicitly (the server was cut along its jobs so)."""
    assert "mcp_tasks._input_kinds" in GRAPH["mcp_tasks.server._input_rounds"]  # the reading sees the server
    assert private_uses(MODULES[module]) == []
