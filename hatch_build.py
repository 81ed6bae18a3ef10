"""Hatchling build hook: bundle the widgets' front end (js/) into nnx_lab/static/.

Runs for wheel builds, editable installs (``pip install -e .``) and sdists:

1. ``npm ci`` in js/ when js/node_modules is missing (``npm install`` when there is no
   package-lock.json);
2. ``npm run build`` (esbuild: js/src/*.js -> nnx_lab/static/*.js).

nnx_lab/static/ is git-ignored, so the bundles are declared as build artifacts and end up in the
wheel (and the sdist, which also carries js/ sources but never js/node_modules). Without node/npm
the build goes on with existing bundles (e.g. building a wheel from an sdist) and fails with a
clear message when there are none. ``NNX_LAB_SKIP_JS=1`` skips npm entirely (bundles must exist).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

ARTIFACTS = "nnx_lab/static/*.js"
BUNDLES = ("viewer.js", "split.js", "capture.js", "views.js", "compare.js", "summary.js", "memory.js")


class JsBuildHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict) -> None:
        root = Path(self.root)
        js = root / "js"
        static = root / "nnx_lab" / "static"
        bundles = [static / name for name in BUNDLES]
        build_data.setdefault("artifacts", [])
        if ARTIFACTS not in build_data["artifacts"]:
            build_data["artifacts"].append(ARTIFACTS)

        have_bundles = all(b.is_file() for b in bundles)
        if os.environ.get("NNX_LAB_SKIP_JS"):
            self._require(have_bundles, bundles, "NNX_LAB_SKIP_JS is set")
            return
        if not (js / "package.json").is_file():
            # Building from a tree without js sources (should not happen; the sdist carries them).
            self._require(have_bundles, bundles, "js/package.json is missing")
            return

        npm = shutil.which("npm")
        node = shutil.which("node")
        if not npm or not node:
            missing = " and ".join(n for n, p in (("node", node), ("npm", npm)) if not p)
            self._require(have_bundles, bundles, f"{missing} not found on PATH")
            self.app.display_warning(
                f"nnx_lab: {missing} not found; using the existing bundles in {static} (they may be out of date)"
            )
            return

        if not (js / "node_modules").is_dir():
            lock = (js / "package-lock.json").is_file()
            self._npm(npm, ["ci"] if lock else ["install"], js)
        self._npm(npm, ["run", "build"], js)
        missing = [str(b) for b in bundles if not b.is_file()]
        if missing:
            raise RuntimeError(f"nnx_lab: `npm run build` did not produce {', '.join(missing)}")

    def _npm(self, npm: str, args: list[str], cwd: Path) -> None:
        cmd = [npm, *args]
        self.app.display_info(f"nnx_lab: running {' '.join(['npm', *args])} in {cwd}")
        env = {
            **os.environ,
            "npm_config_update_notifier": "false",
            "npm_config_fund": "false",
            "npm_config_audit": "false",
        }
        result = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if result.returncode != 0:
            raise RuntimeError(
                f"nnx_lab: `npm {' '.join(args)}` failed in {cwd} (exit {result.returncode}):\n{result.stdout[-4000:]}"
            )

    @staticmethod
    def _require(have_bundles: bool, bundles: list[Path], why: str) -> None:
        if not have_bundles:
            raise RuntimeError(
                f"nnx_lab: cannot build the widget front end ({why}) and "
                f"{', '.join(str(b) for b in bundles if not b.is_file())} does not exist. "
                "Install Node.js >= 18 with npm (https://nodejs.org) and build again, or run "
                "`npm ci && npm run build` in js/ first."
            )
