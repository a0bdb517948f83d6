"""One stop, one number: the loop detector's words (what the model reads, what the view's header
shows) and its count (the gauge's line, the audit) name the same call, the one being refused or
stopped: with the defaults the 4th identical call is refused as the 4th and the 6th ends the run."""

from __future__ import annotations

import re

from loopnb.scenarios import SCENARIOS


def test_the_words_and_the_count_agree_and_the_sixth_ends_the_run() -> None:
    events = SCENARIOS["stubborn_loop"].run().events
    fired = [e for e in events if e.kind == "detector_fired" and e.detector == "loop"]
    assert fired
    for e in fired:
        said = re.search(r"\((\d+) identical calls in a row\)", e.text)
        assert said is not None and int(said.group(1)) == e.count, e.text
    assert [(e.action, e.count) for e in fired] == [("refuse", 4), ("refuse", 5), ("stop", 6)]
