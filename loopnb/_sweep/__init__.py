"""Many runs at once: ``sweep`` on Dask distributed, and ``query``, DuckDB SQL over recordings.

Behind extras: ``loopnb[sweep]`` (dask, distributed) and ``loopnb[sql]`` (duckdb), imported when a
sweep or a query runs, never on import. ``loopnb.sweep``, ``loopnb.Sweep``, ``loopnb.SweepConfig``
and ``loopnb.query`` are these names (this package is private: reach them through ``loopnb``).
"""

import loopnb._face as _face
from loopnb._sweep._config import SweepConfig as SweepConfig
from loopnb._sweep._query import query as query
from loopnb._sweep._results import Sweep as Sweep
from loopnb._sweep._run import sweep as sweep

_face.publish(globals())
