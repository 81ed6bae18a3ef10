"""Snapshots: describe every Variable of a model, with its arrays' statistics from ``core.stats``.

- :func:`snapshot` / :class:`PendingSnapshot` (``_snapshot.py``): walk, describe, launch the
  statistics, and fetch their few numbers (a :class:`Snapshot` of :class:`Row` objects: ``_data.py``);
- a Variable described without reading its data (``_describe.py``), placement and sharding text
  (``_devices.py``), a model's structure walked once and reused (``_structure.py``: a viewer's own,
  or :func:`remembered` per object for one-off snapshots and ``compare``), stacked layers
  (``_layers.py``: one row per layer of a Variable with a layer axis) and the browser's payload
  (``_payload.py``).

Live refreshing is :class:`~nnx_lab.core.watcher.Watcher`; the statistics engine is ``core.stats``.

>>> from flax import nnx
>>> snap = snapshot(nnx.Linear(2, 3, rngs=nnx.Rngs(0)))
>>> [row.path for row in snap.rows], snap["kernel"].shape
([('bias',), ('kernel',)], (2, 3))
"""

from ._describe import metadata_axis
from ._devices import device_summary, sharding_text
from ._layers import (
    LayerError,
    check_layers,
    declared_axes,
    parse_layer_option,
    parse_layers,
    stacked_modules,
)
from ._layers import expand as expand_layers
from ._snapshot import PRECISION, STATUSES, PendingSnapshot, Row, Snapshot, Unchanged, round_significant, snapshot
from ._structure import Described, StructureCache, remembered

__all__ = [
    "PRECISION",
    "STATUSES",
    "Described",
    "LayerError",
    "PendingSnapshot",
    "Row",
    "Snapshot",
    "StructureCache",
    "Unchanged",
    "check_layers",
    "declared_axes",
    "device_summary",
    "expand_layers",
    "metadata_axis",
    "parse_layer_option",
    "parse_layers",
    "remembered",
    "round_significant",
    "sharding_text",
    "snapshot",
    "stacked_modules",
]
