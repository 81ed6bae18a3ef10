"""UI-free core: walks NNX objects with flax's graph API and describes them as snapshots.

Imports neither IPython nor ipywidgets. Feature packages, each behind one facade: ``graph`` (the
walk, paths, module selection), ``stats`` (the device statistics engine), ``snapshot`` (describing
a model: rows, structure, layers, ``Snapshot``), ``live`` (the refresh engine, targets, history),
``training`` (gradients and optimizer series, update ratio, scalars, NaN/Inf alert), ``capture``,
``views``, ``summary``, ``compare``, ``checkpoint``, ``render`` (every static text and HTML
rendering, and the formats the browser shares); modules ``watcher`` (the live Watcher) and ``split``
(the split report). The IPython shell's namespace is read through ``shell`` (no import).
"""
