"""nnx_lab's IPython side, without jax: what ``%load_ext nnx_lab`` adds and takes away
(:mod:`.extension`), the cell hooks that refresh widgets after every cell and number the cells
(:mod:`.cell_hooks`), the queue of browser messages received while a cell runs
(:mod:`.busy_queue`), and the user namespace a viewer following a name reads (:mod:`.namespace`).

Importing this package (or any module in it) never imports jax, flax or the widgets.
"""
