"""Many tasks in a real terminal (a pseudo-terminal 40, 80 and 200 columns wide): the set's live
line is clipped to the width and never wraps, two tasks' questions each name their task and are
asked one after the other, and no status line overwrites a prompt.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.screen.terminal import Screen, render

PROGRAM = Path(__file__).resolve().parents[1] / "screen" / "many_ask.py"
PROMPT = "(empty to decline): "


@pytest.mark.parametrize("columns", [40, 80, 200])
def test_a_set_and_two_questions_in_a_terminal(tmp_path: Path, columns: int) -> None:
    screen = Screen(tmp_path, columns, str(PROGRAM))
    for round_ in (1, 2):
        screen.expect("The server asks: Tell me, ", round_)
        screen.expect("name [string] " + PROMPT, round_)
        screen.answer("Ada" if round_ == 1 else "Bob")
        screen.expect("age [integer] " + PROMPT, round_)
        screen.answer("36" if round_ == 1 else "41")
    code, out = screen.finish()
    assert code == 0, screen.seen
    report = json.loads(out)
    text = screen.seen.decode(errors="replace")
    # Each question names its task (its call and short id) and is asked whole before the next.
    headers = re.findall(r'\[(ask \{"who": "(\w+)"\} \S+…\S+)\] The server asks: Tell me, (\w+)', text)
    assert len(headers) == 2 and all(called == who for _, called, who in headers), text
    headers = [(label, who) for label, _, who in headers]
    assert {who for _, who in headers} == {"first", "second"}, text
    first, second = headers[0][1], headers[1][1]
    results = {r["who"]: (r.get("name"), r.get("age")) for r in report["results"] if "who" in r}
    assert results == {first: ("Ada", 36), second: ("Bob", 41)}
    between = text[text.index(f"Tell me, {first}") : text.index(f"Tell me, {second}")]
    assert between.count("name [string]") == 1 and between.count("age [integer]") == 1
    # The live line: every redraw fits in the width less one column, and none lands on a prompt.
    for frame in text.split("\r\x1b[K")[1:]:
        assert len(frame.split("\r")[0].split("\n")[0]) <= columns - 1, frame
    shown = render(screen.seen, columns)
    assert all(len(line) <= columns for line in shown)
    prompts = [line for line in shown if PROMPT in line]
    assert [p.rsplit(PROMPT, 1)[1] for p in prompts] == ["Ada", "36", "Bob", "41"], shown
    final = shown[-1] if shown[-1] else shown[-2]
    assert final.startswith("[") and "4/5 done, 1 failed" in final, shown
    assert len([line for line in shown if "4/5 done" in line]) == 1, shown  # the last line, written once
    assert "tok-0123" not in text  # the token the failed call was given is never shown
    if columns == 200:  # the failure named by its call, the token hidden
        assert f'failed: boom {{"report": "q3", "token": "***"}} {report["failed"]}' in final, final
    if columns == 40:
        print("\n".join(shown))  # the session, as the terminal shows it (pytest -s)
