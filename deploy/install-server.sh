#!/usr/bin/env bash
# Installs the server into the Python on PATH, as deploy/Dockerfile does in the image
# (and scripts/check-image does without docker, in a throwaway venv):
#   1. the Python packages from requirements.lock (exact versions and hashes);
#   2. the wire protocol package (wire/) and the server (this checkout, editable: the
#      compiled modules are looked up beside it, in build/mypyc/), without dependencies;
#   3. the hot path compiled with mypyc (server/compiled.py), which needs gcc and the
#      Python headers; the solver's C core is built by step 2.
# Fails if either compiled part is missing: a production image runs them.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install --no-cache-dir --quiet --require-hashes --no-deps -r requirements.lock
python -m pip install --no-cache-dir --quiet --no-deps --no-build-isolation ./wire -e .
python -m server.compiled build
python - <<'PY'
import server  # installs the compiled modules' import hook
import server.compiled
import server.solver._core  # noqa: F401  (the solver's C core)

import server.game.engine

assert server.compiled.active(), "the mypyc modules did not load"
assert not server.game.engine.__file__.endswith(".py"), server.game.engine.__file__
print("installed: compiled hot path and solver core active")
PY
