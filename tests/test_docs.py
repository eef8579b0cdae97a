"""The README's examples run, the demo tells its story, the command line works."""

from __future__ import annotations

import inspect
import io
import itertools
import json
import os
import re
import subprocess
import sys
import textwrap
import tokenize
from dataclasses import dataclass
from pathlib import Path

import pytest

import mcp_tasks as mt
import mcp_tasks.server
from mcp_tasks import cli
from mcp_tasks.cli._demo import run_demo
from tests.conftest import ROOT, STDIO_SERVER

README = (ROOT / "README.md").read_text()
DOCS = ROOT / "docs" / "src"
PAGES = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
"""The README and every page of the site: each Python block in them runs in a test."""

FENCE = re.compile(r"(?:<!-- stdin: (?P<stdin>.*?) -->\n)?```python\n(?P<code>.*?)```", re.S)


@dataclass(frozen=True)
class Example:
    """One Python block of a page: where it is, its code, and what a person types for it."""

    page: str
    heading: str
    code: str
    stdin: str

    @property
    def prints(self) -> list[str]:
        """What it says it prints: the ``# -> text`` lines right after each call of print().

        Each print() that prints something (all but the bare ``print()``) is followed by one or
        more lines ``# -> text``, each a piece of what it prints. Such a line anywhere else, a
        print() without one, or a comment at the end of a print's line (where a narrow column
        cuts it off) is a ValueError.
        """
        lines = self.code.splitlines()
        ends = set()  # the last line of each print() that prints something
        logical: list[tokenize.TokenInfo] = []
        for token in tokenize.generate_tokens(io.StringIO(self.code).readline):
            logical.append(token)
            if token.type not in (tokenize.NEWLINE, tokenize.ENDMARKER):
                continue
            code = [
                t for t in logical if t.type not in (tokenize.COMMENT, tokenize.NL, tokenize.INDENT, tokenize.DEDENT)
            ]
            calls = [t for t, after in itertools.pairwise(code) if t.string == "print" and after.string == "("]
            if calls:
                first = calls[0].start[0]
                if any(t.type == tokenize.COMMENT and t.start[0] >= first for t in logical):
                    raise ValueError(f"{self._at(first)}: say what print() prints on a line of its own: # -> ...")
                if [t.string for t in code[:-1]] != ["print", "(", ")"]:
                    ends.add(token.start[0])
            logical = []
        said = []
        for number, line in enumerate(lines, 1):
            if line.strip().startswith("# ->"):
                above = number - 1
                while above > 0 and lines[above - 1].strip().startswith("# ->"):
                    above -= 1
                if above not in ends:
                    raise ValueError(f"{self._at(number)}: a '# ->' line that follows no print()")
                said.append(line.strip()[len("# ->") :].strip())
        for end in sorted(ends):
            if end >= len(lines) or not lines[end].strip().startswith("# ->"):
                raise ValueError(f"{self._at(end)}: say what this print() prints on the next line: # -> ...")
        return said

    def _at(self, line: int) -> str:
        return f"{self.page} ({self.heading}), line {line}"


def _examples(page: Path) -> list[Example]:
    text = page.read_text()
    found = []
    for match in FENCE.finditer(text):
        before = re.sub(r"(?ms)^```.*?^```", "", text[: match.start()])
        headings = re.findall(r"(?m)^#{1,3} (.+)$", before)
        stdin = (match.group("stdin") or "").encode().decode("unicode_escape")
        name = str(page.relative_to(ROOT))
        found.append(Example(name, headings[-1] if headings else "", match.group("code"), stdin))
    return found


EXAMPLES = [example for page in PAGES for example in _examples(page)]


def _example_env() -> dict[str, str]:
    """The environment of an example: the package of the tree under test, nothing else of it."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(ROOT)
    return env


def test_the_site_and_the_readme_have_examples() -> None:
    pages = {example.page for example in EXAMPLES}
    assert "README.md" in pages
    for guide in sorted((DOCS / "guides").glob("*.md")):
        assert str(guide.relative_to(ROOT)) in pages, f"{guide.name} has no example"


def test_every_example_that_prints_says_what() -> None:
    """On the line after the print(), where a narrow column shows it whole."""
    for example in EXAMPLES:
        if "print(" in example.code:
            assert example.prints, f"{example.page} ({example.heading}): say what a print() prints"


@pytest.mark.parametrize(
    ("code", "problem"),
    [
        ('print("a")  # a\n', "on a line of its own"),
        ('print("a")\nx = 1\n', "on the next line"),
        ("x = 1\n# -> a\n", "follows no print"),
        ('print("a")\n\n# -> a\n', "follows no print"),
        ('print(\n    "a",  # the letter\n)\n# -> a\n', "on a line of its own"),
    ],
)
def test_what_a_print_says_is_on_the_next_line(code: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        _ = Example("page.md", "", code, "").prints


def test_what_a_print_says_may_take_lines() -> None:
    code = 'print("a")\n# -> a\nfor n in "bc":\n    print(n)\n    # -> b\n    # -> c\n'
    code += 'print()\nprint(\n    "d",\n)\n# -> d\n'
    assert Example("page.md", "", code, "").prints == ["a", "b", "c", "d"]


LINE = 76
"""The longest line of code a page may show: what fits the site's column at 1280 px (about 80
characters; tests/test_docs_site.py measures it) and GitHub's, with room for a wider font."""


@pytest.mark.parametrize("page", PAGES, ids=[str(page.relative_to(ROOT)) for page in PAGES])
def test_code_lines_are_short(page: Path) -> None:
    """Python and shell lines are reflowed, never cut off at the column's edge (a transcript,
    `text`, shows what a program printed: it may wrap)."""
    for block in re.findall(r"```(?:python|sh)\n(.*?)```", page.read_text(), re.S):
        for line in block.splitlines():
            assert len(line) <= LINE, f"{page.name}: {len(line)} characters: {line}"


def test_the_examples_run_the_tree_under_test(tmp_path: Path) -> None:
    """Not whatever mcp_tasks the interpreter would find: the one in this checkout."""
    done = subprocess.run(
        [sys.executable, "-c", "import mcp_tasks; print(mcp_tasks.__file__)"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env=_example_env(),
    )
    assert Path(done.stdout.strip()).resolve() == (ROOT / "mcp_tasks" / "__init__.py").resolve(), done.stderr


@pytest.mark.parametrize("example", EXAMPLES, ids=[f"{e.page}:{e.heading}" for e in EXAMPLES])
def test_each_example_runs_alone_from_any_directory(example: Example, tmp_path: Path) -> None:
    """Each block in a fresh interpreter, in an empty directory: nothing from the others, nor the repo."""
    done = subprocess.run(
        [sys.executable, "-c", example.code],
        input=example.stdin,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=_example_env(),
    )
    assert done.returncode == 0, done.stderr
    for text in example.prints:
        assert text in done.stdout, f"{text!r} not printed; it printed:\n{done.stdout}"


LITERAL = re.compile(r"::\n\n((?:(?: {4}.*)?\n)+)")
"""A literal block in a docstring (reST's `::`): the API reference shows it as code."""

PRELUDE = """
import mcp_tasks as mt
from mcp_tasks.server import Server

server = Server(poll_interval=0.05)
server.add_tool(lambda ctx: {"done": True}, name="export", task="required")
client = mt.Client.direct(server)
task = mt.call_tool(client, "export")
"""
"""What a docstring's example may take as given: a `client`, and a `task` it started."""


def _docstring_examples() -> list[tuple[str, str]]:
    """The code blocks in the docstrings of the public names and their members, by name."""
    found = []
    for module in (mt, mcp_tasks.server):
        for name in module.__all__:
            value = getattr(module, name)
            members = [(name, value)]
            if inspect.isclass(value):
                members += [(f"{name}.{key}", member) for key, member in vars(value).items() if not key.startswith("_")]
            for qualified, member in members:
                doc = inspect.getdoc(member) if callable(member) or isinstance(member, property) else None
                for block in LITERAL.findall((doc or "") + "\n"):
                    found.append((f"{module.__name__}.{qualified}", textwrap.dedent(block)))
    return found


DOCSTRING_EXAMPLES = _docstring_examples()


@pytest.mark.parametrize(("name", "code"), DOCSTRING_EXAMPLES, ids=[name for name, _ in DOCSTRING_EXAMPLES])
def test_each_docstring_example_runs(name: str, code: str, tmp_path: Path) -> None:
    """The API reference shows these as code: each runs, given a client and a task."""
    program = PRELUDE + code + "\nclient.close()\nserver.close()\n"
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=120, cwd=tmp_path, env=_example_env()
    )
    assert done.returncode == 0, f"{name}: {done.stderr}"


def test_every_public_name_is_in_the_api_reference() -> None:
    pages = "".join(page.read_text() for page in (DOCS / "reference").glob("*.md"))
    documented = set(re.findall(r"(?m)^::: ([\w.]+)$", pages))
    for module in (mt, mcp_tasks.server):
        for name in module.__all__:
            if name != "__version__":
                qualified = f"{module.__name__}.{name}"
                assert qualified in documented, f"{qualified} is not in docs/src/reference"


def test_the_readme_links_every_guide() -> None:
    for guide in sorted((DOCS / "guides").glob("*.md")):
        assert f"](docs/src/guides/{guide.name})" in README, f"README.md does not link {guide.name}"


def test_the_changelog_page_includes_the_changelog() -> None:
    """Included when the site is built, never copied: one CHANGELOG.md."""
    assert (DOCS / "changelog.md").read_text().strip() == '--8<-- "CHANGELOG.md"'


def test_the_quick_start_has_exactly_two_commands() -> None:
    quick = README.split("## Quick start", 1)[1].split("##", 1)[0]
    commands = re.findall(r"```sh\n(.*?)```", quick, re.S)[0].strip().splitlines()
    assert [c.split("#")[0].strip() for c in commands] == ["python3 .ci/dev.py demo", "python3 .ci/dev.py test"]


@pytest.mark.parametrize("transport", ["direct", "stdio", "http"])
def test_the_demo_tells_its_story(transport: str) -> None:
    out = io.StringIO()
    result = run_demo(transport, out)
    text = out.getvalue()
    assert result["structuredContent"] == {"report": "sales", "exported": 3, "file": "sales.csv"}
    for step in ("1. Started", "2. Does the server support", "3. Calling export", "4. Waiting", "5. The result"):
        assert step in text
    assert "the server asks" in text
    # Polled every 0.1 s against rows 0.2 s apart: a loaded machine may read past one row (a poll
    # sees the latest status, not each one), never past them all, and the end comes last.
    assert "exporting row" in text
    assert text.index("exporting row") < text.index("- completed") < text.index("5. The result")


def test_the_demo_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mcp_tasks", "demo"], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    assert "5. The result" in done.stdout


def test_cli_call_get_cancel(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_TASKS_TEST_SERVER", "{}")
    target = " ".join([sys.executable, *STDIO_SERVER])
    monkeypatch.chdir(ROOT)
    assert cli.main(["call", target, "slow_compute", '{"label": "cli"}', "--timeout", "10"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["structuredContent"] == {"label": "cli", "computed": True}
    assert "working" in out.err
    assert cli.main(["call", target, "failing_job"]) == cli.EXIT_TOOL_ERROR
    assert cli.main(["get", target, "no-such-task"]) == cli.EXIT_NO_TASK
    assert "-32602" in capsys.readouterr().err
    assert cli.main(["call", target, "greet", "not json"]) == cli.EXIT_USAGE


def test_cli_prompts_for_a_form(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("yes\n"))
    server = mcp_tasks.server.Server(poll_interval=0.01)

    @server.tool(task="optional")
    def confirm(ctx: mcp_tasks.server.ToolContext) -> dict[str, object]:
        return {"answer": ctx.elicit("c", "Sure?", {"type": "object", "properties": {"ok": {"type": "boolean"}}})}

    monkeypatch.setattr(sys.modules[__name__], "PROMPT_SERVER", server, raising=False)
    assert cli.main(["call", f"{__name__}:PROMPT_SERVER", "confirm"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["structuredContent"] == {"answer": {"action": "accept", "content": {"ok": True}}}
    assert "The server asks: Sure?" in out.err
    server.close()


def test_every_public_name_has_a_docstring() -> None:
    for module in (mt, mcp_tasks.server):
        for name in module.__all__:
            if name in ("__version__", "UNSET"):
                continue
            assert getattr(module, name).__doc__, f"{module.__name__}.{name} has no docstring"


def test_every_package_directory_is_a_package() -> None:
    """setup.cfg finds packages by their __init__.py: a folder without one would be left out."""
    for folder in (ROOT / "mcp_tasks").rglob("*"):
        if folder.is_dir() and folder.name != "__pycache__" and any(folder.glob("*.py")):
            assert (folder / "__init__.py").exists(), folder
