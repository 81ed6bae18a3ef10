"""UI-free core: walks NNX objects with flax's graph API and describes them as snapshots.

Imports neither IPython nor ipywidgets. Feature packages, each behind one facade: ``graph`` (the
walk, paths, module selection), ``snapshot`` (statistics kernels, placement, ``Snapshot``, history,
live refresh), ``capture``, ``views``; modules ``split`` (the split report) and ``render`` (static
text and HTML).
"""
