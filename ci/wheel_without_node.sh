#!/usr/bin/env bash
# README's install from a wheel, on a machine without Node.js: the wheel `python -m build --wheel`
# makes here (hatch_build.py builds the widgets' JavaScript into it with npm), installed with its
# dependencies from the index into a fresh virtual environment whose PATH has no node or npm; there
# the wheel's bundles are checked and tutorial 01 runs under nbval (its saved outputs compared).
# .ci/run runs this on the newest stack; it needs python with pip, node and npm, and the index.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python -m pip install --quiet build
python -m build --wheel --outdir "$work/dist" . >"$work/build.log" 2>&1 || {
  tail -40 "$work/build.log" >&2
  exit 1
}
wheels=("$work"/dist/nnx_lab-*.whl)
if [ "${#wheels[@]}" -ne 1 ] || [ ! -f "${wheels[0]}" ]; then
  echo "wheel: expected one nnx_lab wheel in $work/dist, found: ${wheels[*]}" >&2
  exit 1
fi
echo "wheel: built $(basename "${wheels[0]}")"

# PATH without node and npm: the fresh environment's bin, then every directory of PATH that has neither.
python3 -m venv "$work/venv"
path="$work/venv/bin"
IFS=: read -ra dirs <<<"$PATH"
for d in "${dirs[@]}"; do
  if [ -n "$d" ] && [ ! -e "$d/node" ] && [ ! -e "$d/npm" ]; then
    path="$path:$d"
  fi
done
cp "$repo/notebooks/01_quickstart.ipynb" "$repo/notebooks/sanitize.cfg" "$work/"

(
  export PATH="$path" VIRTUAL_ENV="$work/venv"
  unset PYTHONPATH PYTHONHOME
  if command -v node >/dev/null || command -v npm >/dev/null; then
    echo "wheel: node or npm is still on PATH ($PATH)" >&2
    exit 1
  fi
  cd "$work"  # outside the clone: nothing of it on sys.path, none of its pytest configuration
  python -m pip install --quiet --upgrade pip
  python -m pip install --quiet "${wheels[0]}" pytest nbval ipykernel
  python - <<'EOF'
import pathlib

import nnx_lab

here = pathlib.Path(nnx_lab.__file__).parent
assert "site-packages" in here.parts, f"nnx_lab imported from {here}, not from the installed wheel"
bundles = {"viewer.js", "split.js", "views.js", "capture.js", "compare.js", "summary.js"}
found = {p.name for p in (here / "static").glob("*.js")}
assert bundles <= found, f"the wheel's nnx_lab/static lacks {sorted(bundles - found)}"
print(f"wheel: nnx_lab {nnx_lab.__version__} from {here}, bundles {sorted(found)}")
EOF
  python -m pytest -p no:cacheprovider --nbval --nbval-current-env --nbval-sanitize-with sanitize.cfg 01_quickstart.ipynb
)
