"""UI-free core: walks NNX objects with flax's graph API and describes them as snapshots.

Imports neither IPython nor ipywidgets. Feature packages, each behind one facade: ``graph`` (the
walk, paths, module selection), ``snapshot`` (statistics kernels, placement, ``Snapshot``, history,
live refresh), ``capture``, ``views``, ``render`` (every static text and HTML rendering, and the
formats the browser shares); module ``split`` (the split report).
"""
