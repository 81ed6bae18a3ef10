"""UI-free core: walks NNX objects with flax's graph API and describes them as snapshots.

Imports neither IPython nor ipywidgets. Modules: ``graph`` (the walk, paths, module selection), ``stats``
(on-device reductions), ``devices`` (placement and memory), ``snapshot`` (rows,
totals, ``to_dict``), ``render`` (static text and HTML).
"""
