#!/usr/bin/env bash
# What a session with a lent GPU machine runs there (through the device tool, from the repository root,
# carrying .whl; see tools/gpu/README.md). Every call starts with the same install (a warm machine keeps
# /tmp/site, so it is quick after the first).
#
#   tools/gpu/session.sh bench                 # throughput figures: paper (encoder trainable) and base
#   tools/gpu/session.sh start base 24         # pretrain --model-config base in the background for 24 min
#   tools/gpu/session.sh status base           # log tail; copies the run's model, log, curve, run.json to $OUT
#   tools/gpu/session.sh resume base 10        # continue the same run for 10 more minutes
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ ! -d /tmp/site/chorustic_wheels_done ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  mkdir -p /tmp/site/chorustic_wheels_done
fi
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
RUNS=/tmp/chorustic-runs
mkdir -p "$RUNS" "${OUT:-/tmp/out}"
cmd=${1:-bench}
case "$cmd" in
  bench)
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
    python3 benchmarks/pretrain_throughput.py --model-config paper --train-config paper --train-signal-encoder \
      --device cuda --warmup 2 --steps 4 | tee "${OUT:-/tmp/out}/bench_paper.json"
    python3 benchmarks/pretrain_throughput.py --model-config base --train-config base --device cuda \
      --warmup 2 --steps 6 | tee "${OUT:-/tmp/out}/bench_base.json"
    ;;
  start|resume)
    name=${2:?run name (a model/train preset: base, paper, ...)}; minutes=${3:?minutes}
    if [ "$cmd" = start ]; then
      args=(--model-config "$name" --train-config "$name" --out "$RUNS/$name")
      [ "$name" = paper ] && args+=(--train-signal-encoder)
    else
      args=(--out "$RUNS/$name" --resume)
    fi
    setsid nohup python3 -m chorustic pretrain "${args[@]}" --max-minutes "$minutes" --no-progress \
      >> "$RUNS/$name.log" 2>&1 < /dev/null &
    sleep 60; tail -5 "$RUNS/$name.log"
    ;;
  status)
    name=${2:?run name}
    tail -5 "$RUNS/$name.log" || true
    tail -3 "$RUNS/$name/log.jsonl" || true
    for f in model.safetensors log.jsonl run.json summary.json curve.png; do
      [ -f "$RUNS/$name/$f" ] && cp "$RUNS/$name/$f" "${OUT:-/tmp/out}/"
    done
    pgrep -f "chorustic pretrain" > /dev/null && echo "still training" || echo "not running"
    ;;
  *) echo "unknown command $cmd" >&2; exit 2 ;;
esac
