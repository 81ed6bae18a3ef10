"""Why nnx_lab keeps its own disk cache of compiled statistics kernels (core/stats/_executables.py)
instead of jax's persistent compilation cache (issue 38 asked to measure the replacement).

jax's cache is one per process: its directory and thresholds are read the first time any
compile consults it, and then kept. Scoping it to nnx_lab's compiles, with jax's config states as
context managers around our compile, therefore fails the user in two ways, shown here, each in a
fresh process:

  1. our compile first (scoped), then the user sets jax_compilation_cache_dir as jax documents:
     the user's directory stays empty and the user's compiles go to OUR directory;
  2. the user's cache set first, then our scoped compile: our entries land in the USER's directory
     (or, with no user cache, wherever the first compile pointed it).

Run: python benchmarks/why_not_jax_cache.py
"""

from __future__ import annotations

import subprocess
import sys
import tempfile

CHILD = r"""
import os, sys
import jax, jax.numpy as jnp
from jax._src import config as c  # jax's config states, usable as context managers
ours, user, order = sys.argv[1], sys.argv[2], sys.argv[3]

def our_compile():
    with c.compilation_cache_dir(ours), c.persistent_cache_min_compile_time_secs(0), \
         c.persistent_cache_min_entry_size_bytes(0):
        jax.jit(lambda x: jnp.sin(x) * 2)(jnp.ones(3)).block_until_ready()

def user_compile():
    jax.config.update("jax_compilation_cache_dir", user)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    jax.jit(lambda x: jnp.cos(x) * 3)(jnp.ones(3)).block_until_ready()

for step in order.split(","):
    {"ours": our_compile, "user": user_compile}[step]()
count = lambda d: len(os.listdir(d)) if os.path.isdir(d) else 0
print(f"RESULT {count(ours)} {count(user)}")
"""


def main() -> None:
    for order, what in (
        ("ours,user", "nnx_lab's scoped compile, then the user's cache"),
        ("user,ours", "the user's cache, then nnx_lab's scoped compile"),
    ):
        with tempfile.TemporaryDirectory() as ours, tempfile.TemporaryDirectory() as user:
            done = subprocess.run([sys.executable, "-c", CHILD, ours, user, order], capture_output=True, text=True)
            line = [x for x in done.stdout.splitlines() if x.startswith("RESULT")]
            if not line:
                print(f"{what}: failed: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
                continue
            n_ours, n_user = line[0].split()[1:]
            print(f"{what}: {n_ours} entries in nnx_lab's directory, {n_user} in the user's")


if __name__ == "__main__":
    main()
