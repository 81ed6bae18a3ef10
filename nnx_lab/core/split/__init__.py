"""The split report: which Variables each NNX filter takes, which it shadows, what is left.

Filters are order-dependent: the first filter that matches a Variable takes it. The report runs
flax's own predicates (``filterlib.to_predicate``) on every Variable and says, per filter, what it
took; which Variables a later filter also matched (*shadowed*); filters that took nothing; the
remainder when the filters are not exhaustive; and shared Variables.

>>> from flax import nnx
>>> model = nnx.Sequential(nnx.Linear(2, 3, rngs=nnx.Rngs(0)), nnx.BatchNorm(3, rngs=nnx.Rngs(0)))
>>> report = split_report(model, nnx.Param, nnx.BatchStat)
>>> [(f.name, f.count) for f in report.filters]
[('param', 4), ('batch_stat', 2)]
>>> report.exhaustive, report.code("model")
(True, 'graphdef, param, batch_stat = nnx.split(model, nnx.Param, nnx.BatchStat)')
>>> report = split_report(model, ..., nnx.Param)
Traceback (most recent call last):
...
nnx_lab.core.split._report.SplitError: `...` matches everything, so it can only be the last filter (it is filter 1 of 2)
"""

from ._report import SplitError, SplitReport
from ._split import split_report

__all__ = ["SplitError", "SplitReport", "split_report"]
