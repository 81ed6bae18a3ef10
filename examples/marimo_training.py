"""nnx_lab in a marimo notebook: train a small Flax NNX model and watch it live.

Run it with marimo's own server::

    marimo edit examples/marimo_training.py     # or: marimo run examples/marimo_training.py

Every nnx_lab widget is an anywidget, which marimo shows as a cell's output (``mo.ui.anywidget``
wraps one explicitly). marimo has no IPython: the ``%nnx_*`` magics do not exist here, and the
viewer refreshes on ``viewer.tick()`` inside the loop rather than after each cell.
"""

import marimo

__generated_with = "0.25.2"
app = marimo.App(width="full")


@app.cell
def _():
    import time

    import jax
    import jax.numpy as jnp
    import marimo as mo
    import optax
    from flax import nnx

    import nnx_lab

    return jax, jnp, mo, nnx, nnx_lab, optax, time


@app.cell
def _(mo):
    mo.md("""
    # nnx_lab in marimo

    A two-layer MLP learns a noisy linear map. Below: its model summary, which Variables
    `nnx.Param` takes, its `set_view` options, every layer's output, a live viewer that refreshes
    during the training loop, what training changed, what holds the device's memory, and where a
    deliberately broken copy first makes NaN.
    """)
    return


@app.cell
def _(jax, nnx):
    class MLP(nnx.Module):
        def __init__(self, din: int, dhidden: int, dout: int, *, rngs: nnx.Rngs):
            self.hidden = nnx.Linear(din, dhidden, rngs=rngs)
            self.dropout = nnx.Dropout(0.1, rngs=rngs)
            self.out = nnx.Linear(dhidden, dout, rngs=rngs)

        def __call__(self, x):
            return self.out(self.dropout(jax.nn.relu(self.hidden(x))))

    return (MLP,)


@app.cell
def _(MLP, jax, jnp, nnx, optax):
    model = MLP(8, 32, 2, rngs=nnx.Rngs(0))
    before = nnx.clone(model)  # the untrained model, for the comparison at the end
    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
    x = jax.random.normal(jax.random.key(1), (64, 8))
    y = x @ jax.random.normal(jax.random.key(2), (8, 2)) + 0.1 * jnp.tanh(x[:, :2])
    return before, model, optimizer, x, y


@app.cell
def _(model, nnx_lab, x):
    # A cell's last value is shown: the Summary is drawn by its widget (an anywidget).
    nnx_lab.summary(model, x)
    return


@app.cell
def _(model, nnx, nnx_lab):
    nnx_lab.split_report(model, nnx.Param, ...)
    return


@app.cell
def _(model, nnx_lab):
    nnx_lab.view_panel(model)
    return


@app.cell
def _(model, nnx_lab, x):
    panel = nnx_lab.capture_panel(model, methods=True)
    _ = panel(x)  # the panel shows every method's output in this call
    panel
    return


@app.cell
def _(model, mo, nnx_lab, optimizer):
    # mo.ui.anywidget(...) wraps the widget explicitly; showing `viewer` itself does the same.
    viewer = nnx_lab.watch(model, optimizer=optimizer, max_rate=10)
    mo.ui.anywidget(viewer)
    return (viewer,)


@app.cell
def _(model, nnx, optimizer, time, viewer, x, y):
    @nnx.jit
    def train_step(model, optimizer, x, y):
        def loss_fn(model):
            return ((model(x) - y) ** 2).mean()

        loss, grads = nnx.value_and_grad(loss_fn)(model)
        optimizer.update(model, grads)
        return loss

    steps = 200
    for _step in range(steps):
        _loss = train_step(model, optimizer, x, y)
        viewer.tick(loss=_loss)  # refreshes the viewer while this cell runs (throttled to max_rate)
        time.sleep(0.03)  # a slow step: the page sees the viewer refresh while the loop runs
    viewer.refresh()  # the last step's values (marimo has no after-cell hook to do it)
    f"trained {steps} steps, final loss {float(_loss):.4f}"
    return (steps,)


@app.cell
def _(before, model, nnx_lab, steps):
    assert steps  # runs after the training cell
    nnx_lab.compare(before, model)
    return


@app.cell
def _(model, nnx_lab, steps):
    assert steps
    nnx_lab.snapshot(model)
    return


@app.cell
def _(model, nnx_lab, optimizer, steps):
    assert steps
    # Every live array on the device, under the name holding it (marimo has no IPython namespace to
    # read the names from: pass them); arrays no name reaches are listed as unreached.
    nnx_lab.memory(namespace={"model": model, "optimizer": optimizer})
    return


@app.cell
def _(MLP, jnp, nnx, nnx_lab, x, y):
    # A deliberately broken copy: its hidden layer takes the log of a linear map that goes negative.
    class LogLinear(nnx.Linear):
        def __call__(self, inputs):
            return jnp.log(super().__call__(inputs))

    broken = MLP(8, 32, 2, rngs=nnx.Rngs(0))
    broken.hidden = LogLinear(8, 32, rngs=nnx.Rngs(3))
    # Where NaN first appears: the module call and the primitive (the model itself is not changed).
    nnx_lab.find_nonfinite(lambda m, x, y: ((m(x) - y) ** 2).mean(), broken, x, y)
    return (LogLinear, broken)


if __name__ == "__main__":
    app.run()
