#!/usr/bin/env bash
# Download the wheels of tools/gpu/wheels.txt for the GPU machines (CPython 3.12, x86-64 manylinux) into
# .whl/ (git-excluded), the folder a device run carries. Run once per checkout, here, before the first run.
set -euo pipefail
cd "$(dirname "$0")/../.."
exclude=$(git rev-parse --git-path info/exclude); mkdir -p "$(dirname "$exclude")"
grep -qx '/.whl/' "$exclude" 2>/dev/null || echo /.whl/ >> "$exclude"
mkdir -p .whl
rm -f .whl/*.whl  # one version of each: a stale second version stops the whole install there
grep -v '^#' tools/gpu/wheels.txt | grep -v '^$' | while read -r spec; do
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .whl "$spec"
done
ls .whl | wc -l
du -sh .whl
