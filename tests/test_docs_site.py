"""The built documentation site in a real browser: headless Chromium, driven over the DevTools
protocol, loads the site from a local HTTP server, and each page renders; typing into the search
box finds `wait_all` in the many-tasks guide.

The site is built by `python3 .ci/dev.py docs` (CI does it before the suite). A missing site, a
stale one or a missing Chromium fails these tests; only outside CI, MCP_TASKS_SKIP_BROWSER=1 skips
them.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import importlib.util
import inspect
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import websocket

import mcp_tasks as mt
from tests.conftest import ROOT
from tests.test_docs import DOCSTRING_EXAMPLES, FENCE

SITE = ROOT / "build" / "site"
DOCS = ROOT / "docs" / "src"
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--remote-debugging-port=0",
)
WAIT = 60.0
"""How long a step may take before the test fails rather than hangs (never a timing assertion)."""


def _unavailable(reason: str) -> None:
    """Fail: in CI always; elsewhere skip only when the developer asked for it."""
    if os.environ.get("MCP_TASKS_SKIP_BROWSER") == "1" and not os.environ.get("CI"):
        pytest.skip(f"{reason} (MCP_TASKS_SKIP_BROWSER=1)")
    pytest.fail(reason)


def _site_digest() -> str:
    """The digest .ci/dev.py stamps the site with: the same function, not a copy of it."""
    spec = importlib.util.spec_from_file_location("ci_dev", ROOT / ".ci" / "dev.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    digest: str = module.site_digest()
    return digest


class DevTools:
    """A DevTools protocol connection to one page of a browser (flattened sessions, one socket)."""

    def __init__(self, url: str) -> None:
        self._socket = websocket.create_connection(url, timeout=WAIT, suppress_origin=True)
        self._next_id = 0
        self._events: list[dict[str, Any]] = []
        self._session: str | None = None

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        """Send a command and return its result; an error answer fails the test."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if self._session is not None and not method.startswith(("Target.", "Browser.")):
            message["sessionId"] = self._session
        self._socket.send(json.dumps(message))
        while True:
            answer = json.loads(self._socket.recv())
            if answer.get("id") == self._next_id:
                assert "error" not in answer, f"{method}: {answer['error']}"
                result: dict[str, Any] = answer["result"]
                return result
            self._events.append(answer)

    def event(self, method: str) -> dict[str, Any]:
        """The first event `method` not seen yet (waiting for it)."""
        while True:
            for index, event in enumerate(self._events):
                if event.get("method") == method:
                    return self._events.pop(index)
            self._events.append(json.loads(self._socket.recv()))

    def open_page(self) -> None:
        """A new tab, attached: later commands go to it."""
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        self._session = self.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.send("Page.enable")
        self.send("Runtime.enable")
        self.send("Network.enable")

    def goto(self, url: str) -> list[str]:
        """Load `url` and wait for its load event; the URLs the page requested until then."""
        self._events.clear()
        self.send("Page.navigate", url=url)
        self.event("Page.loadEventFired")
        return [e["params"]["request"]["url"] for e in self._events if e.get("method") == "Network.requestWillBeSent"]

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (a promise is awaited)."""
        answer = self.send("Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True)
        assert "exceptionDetails" not in answer, answer["exceptionDetails"]
        return answer["result"].get("value")

    def type(self, text: str) -> None:
        """Type `text` into the focused element, key by key, as a person does."""
        for char in text:
            self.send("Input.dispatchKeyEvent", type="keyDown", key=char, text=char)
            self.send("Input.dispatchKeyEvent", type="keyUp", key=char)

    def close(self) -> None:
        self._socket.close()


class Quiet(http.server.SimpleHTTPRequestHandler):
    """Serves the site without a log line per request."""

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    """The built site, served on 127.0.0.1; yields its base URL."""
    if not (SITE / "index.html").exists():
        _unavailable(f"no built site in {SITE}: run python3 .ci/dev.py docs")
    stamp = SITE / ".sources"
    if not stamp.exists() or stamp.read_text() != _site_digest():
        _unavailable(f"the site in {SITE} was built from other sources: run python3 .ci/dev.py docs")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(SITE)))
    thread = threading.Thread(target=server.serve_forever, name="docs-site-http", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture(scope="module")
def browser() -> Iterator[DevTools]:
    """Headless Chromium in a new empty profile, and a DevTools connection to a page of it."""
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    if not os.path.exists(chromium):
        _unavailable("Chromium is not installed: apt-get install -y chromium")
    with tempfile.TemporaryDirectory(prefix="mcp_tasks-chromium-") as profile:
        process = subprocess.Popen(
            [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # its own group: the renderers and the zygote go with it
        )
        assert process.stderr is not None
        drain: threading.Thread | None = None
        devtools: DevTools | None = None
        try:
            url = None
            for line in process.stderr:  # it prints the endpoint once it listens
                found = re.search(r"DevTools listening on (ws://\S+)", line)
                if found:
                    url = found.group(1)
                    break
            assert url, f"Chromium exited ({process.poll()}) without a DevTools endpoint"
            drain = threading.Thread(target=process.stderr.read, name="docs-chromium-stderr", daemon=True)
            drain.start()
            devtools = DevTools(url)
            devtools.open_page()
            yield devtools
        finally:
            if devtools is not None:
                with contextlib.suppress(Exception):
                    devtools.send("Browser.close")
                devtools.close()
            try:
                process.wait(timeout=WAIT)
            finally:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)  # whatever of its group is left
                process.wait()
            if drain is not None:
                drain.join(WAIT)
                assert not drain.is_alive(), "a process of Chromium's kept its stderr open"
            process.stderr.close()


def _pages() -> list[tuple[str, str]]:
    """Each page of the site: its path on the site, and its title (the Markdown's first heading)."""
    pages = []
    for source in sorted(DOCS.rglob("*.md")):
        relative = source.relative_to(DOCS).with_suffix("")
        path = "" if relative.name == "index" else f"{relative.as_posix()}/"
        first = source.read_text().splitlines()[0]
        included = re.fullmatch(r'--8<-- "(.+)"', first)  # a page that is a file of the repository
        if included:
            first = (ROOT / included.group(1)).read_text().splitlines()[0]
        assert first.startswith("# "), f"{source} does not start with its title"
        pages.append((path, first[2:]))
    return pages


PAGES = _pages()


@pytest.mark.parametrize(("path", "title"), PAGES, ids=[path or "index" for path, _ in PAGES])
def test_each_page_renders(site: str, browser: DevTools, path: str, title: str) -> None:
    requested = browser.goto(f"{site}/{path}")
    assert requested, "no request seen"
    assert [url for url in requested if not url.startswith((site, "data:"))] == []  # nothing from other hosts
    heading = browser.evaluate("document.querySelector('article h1').textContent")
    assert heading.strip().rstrip("¶").strip() == title
    # the theme ran (its search box and navigation are there) and the page is not empty
    assert browser.evaluate("!!document.querySelector('.md-search__input') && !!document.querySelector('.md-nav')")
    assert browser.evaluate("document.querySelector('article').innerText.length") > 200


def test_the_api_reference_is_rendered_from_the_docstrings(site: str, browser: DevTools) -> None:
    browser.goto(f"{site}/reference/many/")
    text = browser.evaluate("document.getElementById('mcp_tasks.wait_all').closest('.doc-object').innerText")
    assert "tasks: Iterable[str | Status]" in text  # its signature, from the code
    assert "final Statuses" in text  # its docstring
    # its options, each with what it does, from ManyOptions: not two links away
    parameters = text.split("Parameters:", 1)[1]
    for option in mt.ManyOptions.__annotations__:
        assert f"\n{option} (" in parameters, option
    assert "Seconds for the whole set" in parameters


def _options_apis() -> list[tuple[str, str, list[str]]]:
    """The public functions and methods that take `**options: Unpack[SomeOptions]`: the page of
    the API reference that shows each, its anchor there, and the names of its options."""
    pages = {
        name: source.relative_to(DOCS).with_suffix("").as_posix() + "/"
        for source in (DOCS / "reference").glob("*.md")
        for name in re.findall(r"(?m)^::: mcp_tasks\.([\w.]+)$", source.read_text())
    }
    found = []
    for name in mt.__all__:
        value = getattr(mt, name)
        members = [(name, value)]
        if inspect.isclass(value):
            members += [(f"{name}.{key}", m) for key, m in vars(value).items() if not key.startswith("_")]
        for qualified, member in members:
            member = getattr(member, "__func__", member)  # a classmethod
            if not inspect.isfunction(member):
                continue
            for parameter in inspect.signature(member).parameters.values():
                unpacked = re.fullmatch(r"Unpack\[(\w+)\]", str(parameter.annotation))
                if parameter.kind is parameter.VAR_KEYWORD and unpacked:
                    options = list(getattr(mt, unpacked.group(1)).__annotations__)
                    found.append((pages[qualified.split(".")[0]], f"mcp_tasks.{qualified}", options))
    return found


OPTIONS_APIS = _options_apis()


def test_the_options_apis_are_found() -> None:
    assert {anchor for _, anchor, _ in OPTIONS_APIS} >= {
        "mcp_tasks.wait_all",
        "mcp_tasks.call_and_await",
        "mcp_tasks.await_task",
        "mcp_tasks.submit",
        "mcp_tasks.Client.http",
    }


@pytest.mark.parametrize(("path", "anchor", "options"), OPTIONS_APIS, ids=[a for _, a, _ in OPTIONS_APIS])
def test_each_options_api_shows_its_options(
    site: str, browser: DevTools, path: str, anchor: str, options: list[str]
) -> None:
    """Its keywords in its own entry (the signature and a list, each with what it does and its
    default), not behind a link to the TypedDict that types them."""
    browser.goto(f"{site}/{path}")
    text = browser.evaluate(f"document.getElementById({anchor!r}).closest('.doc-object').innerText")
    signature, _, parameters = text.partition("Parameters:")
    for option in options:
        assert f"\n    {option}: " in signature, f"{anchor}: {option} is not in its signature"
        entry = re.search(rf"(?m)^{option} \((.*)\) – *\n+(.+)", parameters)  # "name (type) – what it does"
        assert entry and entry.group(2).strip(), f"{anchor}: {option} is not listed with what it does"
        kind, does = entry.groups()
        assert "default: ..." not in kind, f"{anchor}: {option}'s default is not said"
        assert "default: " in kind or "Default: " in does, f"{anchor}: {option}'s default is not said"


def test_the_changelog_page_is_the_changelog(site: str, browser: DevTools) -> None:
    browser.goto(f"{site}/changelog/")
    text = browser.evaluate("document.querySelector('article').innerText")
    first_entry = next(line[2:] for line in (ROOT / "CHANGELOG.md").read_text().splitlines() if line.startswith("- "))
    assert first_entry.split("`")[0].strip() in text


FIND_RESULTS = """
new Promise((resolve, reject) => {
  const links = () => [...document.querySelectorAll('.md-search-result__item a')].map(a => a.href);
  const found = () => links().some(href => href.includes('/guides/many-tasks/'));
  if (found()) { resolve(links()); return; }
  const observer = new MutationObserver(() => {
    if (found()) { observer.disconnect(); resolve(links()); }
  });
  observer.observe(document.querySelector('.md-search-result'), {childList: true, subtree: true});
  const fail = () => { observer.disconnect(); reject(new Error('no result in the many-tasks guide: ' + links())); };
  setTimeout(fail, MILLISECONDS);
})
""".replace("MILLISECONDS", str(int(WAIT * 1000)))


def test_the_search_finds_wait_all_in_the_many_tasks_guide(site: str, browser: DevTools) -> None:
    browser.goto(f"{site}/")
    browser.evaluate("document.querySelector('.md-search__input').focus()")
    browser.type("wait_all")
    links = browser.evaluate(FIND_RESULTS)
    assert any("/guides/many-tasks/" in link for link in links), links
    assert browser.evaluate("document.querySelector('.md-search__input').value") == "wait_all"


def test_every_python_block_on_the_site_is_an_example_that_runs(site: str) -> None:
    """The site shows no code but what tests/test_docs.py runs: the pages' Python blocks, the
    docstrings' examples, and the signatures the API reference draws from the code."""
    shown = in_docstrings = 0
    for page in SITE.rglob("*.html"):
        html = page.read_text()
        shown += html.count('<div class="language-python highlight">')
        if "reference" in page.relative_to(SITE).parts:
            in_docstrings += html.count('<div class="language-text highlight">')
            code = html.replace('<div class="language-python doc-signature', "")
            assert code.count('<div class="language-') == code.count('<div class="language-text highlight">'), page
    in_sources = sum(len(FENCE.findall(page.read_text())) for page in DOCS.rglob("*.md"))
    assert shown == in_sources > 0
    assert in_docstrings == len(DOCSTRING_EXAMPLES)


OVERFLOWING = """
[...document.querySelectorAll('article pre > code')]
  .filter(code => code.scrollWidth > code.clientWidth)
  .map(code => `${code.scrollWidth} > ${code.clientWidth}: ${code.innerText.split('\\n')[0].slice(0, 60)}`)
"""
"""The code blocks of the page that scroll sideways: a line of them is cut off at the column."""


@pytest.mark.parametrize("width", [1280, 390])
@pytest.mark.parametrize(("path", "title"), PAGES, ids=[path or "index" for path, _ in PAGES])
def test_every_code_block_fits_the_column(site: str, browser: DevTools, path: str, title: str, width: int) -> None:
    """A desktop window and a phone: each block's lines wrap or fit, none hides its end (what an
    example prints, in its comment) behind a scroll bar."""
    browser.send("Emulation.setDeviceMetricsOverride", width=width, height=900, deviceScaleFactor=1, mobile=width < 600)
    try:
        browser.goto(f"{site}/{path}")
        assert browser.evaluate("window.innerWidth") == width
        assert browser.evaluate(OVERFLOWING) == []
    finally:
        browser.send("Emulation.clearDeviceMetricsOverride")
