"""Built-in, deterministic teaching scenarios: each makes one part of the principle visible.

>>> from loopnb import scenarios
>>> outcome = scenarios.get("mistyped_path").run()
>>> outcome.ending, outcome.output
('ok', 'src/main.rs is `fn main() {}`: it prints nothing.')

``outcome.run`` is the ``RunResult`` (or the salvaged run of a hard ending), ``outcome.error``
the ``LoopError`` (``None`` when ok), ``outcome.events`` every event. ``scenario.engine()`` gives
the engine itself, e.g. to attach a recorder or a live view. ``FILES``, ``make_read_file()`` and
``make_list_dir()`` are the scenarios' small workspace, for building runs of your own on it.
"""

import loopnb._face as _face
from loopnb.scenarios._catalog import SCENARIOS, get, names
from loopnb.scenarios._scenario import Build, Ending, Outcome, Scenario
from loopnb.scenarios._workspace import FILES, make_list_dir, make_read_file

__all__ = [
    "FILES",
    "SCENARIOS",
    "Build",
    "Ending",
    "Outcome",
    "Scenario",
    "get",
    "make_list_dir",
    "make_read_file",
    "names",
]

_face.publish(globals())
