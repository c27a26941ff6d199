#!/usr/bin/env bash
# What a session with a lent GPU machine runs there, through the device tool, from the repository root,
# carrying .whl (tools/gpu/fetch_wheels.sh); see tools/gpu/README.md. The machine stays warm only 30 s
# after a call, so a waiting call keeps it busy until the run ends or the call's time is up.
#
#   tools/gpu/session.sh first [RUN] [MIN] [ARGS] # call 1: install, nvidia-smi, short benchmark of RUN (default
#                                               # base), start RUN's pretraining for MIN minutes (default 20; its
#                                               # --steps cut to what fits at the measured speed), wait
#   tools/gpu/session.sh wait RUN                # later calls: wait until RUN ends or the call's time is up
#   tools/gpu/session.sh status RUN              # one look: state, last log lines; copies the run's files to $OUT
#   tools/gpu/session.sh start RUN MIN [ARGS]    # start only (ARGS: more `chorustic pretrain` options)
#   tools/gpu/session.sh resume RUN MIN [ARGS]   # continue a stopped run on the same machine
#   tools/gpu/session.sh stop RUN                # SIGTERM: the run checkpoints, exports its model and exits
#   tools/gpu/session.sh bench [CONFIG ...]      # throughput (default: paper with the encoder trainable, base)
#
# Everything printed also goes to $OUT/session.log, so it comes back even if the call is killed at its limit.
# At most 8 files come back from $OUT: session.log, bench_CONFIG.json, train_RUN.log and the run's
# model.safetensors, log.jsonl, run.json, summary.json, curve.png.
# Settings (environment): DEVICE (cuda; cpu to rehearse), CALL_SECONDS (a waiting call returns after this
# many seconds of the call, default 540), BENCH_STEPS ("--warmup 2 --steps 6"), BENCH_TIMEOUT (180 s),
# RUNS (/tmp/chorustic-runs).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
if [ -z "${CHORUSTIC_SESSION_TEE:-}" ]; then  # run again with all output copied to $OUT/session.log
  CHORUSTIC_SESSION_TEE=1 bash "$0" "$@" 2>&1 | tee -a "$OUT/session.log"
  exit "${PIPESTATUS[0]}"
fi
DEVICE=${DEVICE:-cuda}
CALL_SECONDS=${CALL_SECONDS:-540}
BENCH_STEPS=${BENCH_STEPS:---warmup 2 --steps 6}
BENCH_TIMEOUT=${BENCH_TIMEOUT:-180}
RUNS=${RUNS:-/tmp/chorustic-runs}
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
mkdir -p "$RUNS"
say() { echo "[session $(date +%H:%M:%S) +${SECONDS}s] $*"; }

install() {  # the wheels of .whl into /tmp/site (once per machine), then check the imports training needs
  if ! ls .whl/*.whl > /dev/null 2>&1; then
    say "no .whl/*.whl: run tools/gpu/fetch_wheels.sh here and name .whl in the call's carry"; exit 3
  fi
  if ! ls .whl | cmp -s - /tmp/site/.chorustic-wheels; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
      .whl/*.whl || { say "pip install of .whl failed"; exit 3; }
    ls .whl > /tmp/site/.chorustic-wheels
  fi
  python3 -c "import sys, torch, numpy, mantis.architecture, tabicl, chorustic.training
print('python', sys.version.split()[0], '| torch', torch.__version__, '| numpy', numpy.__version__,
      '| cuda', torch.cuda.is_available() and torch.cuda.get_device_name(0))" || { say "imports failed"; exit 3; }
}

config_args() {  # model and train config of a preset; paper trains its signal encoder (the paper's recipe)
  echo "--model-config $1 --train-config $1"
  [ "$1" = paper ] && echo "--train-signal-encoder"
}

bench() {  # a failed or slow benchmark never stops what follows
  local c
  for c in "$@"; do
    say "benchmark $c ($BENCH_STEPS, at most ${BENCH_TIMEOUT}s)"
    # shellcheck disable=SC2046,SC2086
    timeout "$BENCH_TIMEOUT" python3 benchmarks/pretrain_throughput.py $(config_args "$c") --device "$DEVICE" \
      $BENCH_STEPS > "$OUT/bench_$c.json" || say "benchmark $c failed (exit $?); going on"
    cat "$OUT/bench_$c.json"
  done
}

fit_steps() {  # RUN MIN: the steps of preset RUN that fit in MIN minutes at the benchmark's speed (85 %: validation,
  # checkpoints, data wait), when fewer than the preset's: the learning-rate schedule then ends with the run
  # instead of being cut in the middle by --max-minutes. Prints nothing without a benchmark figure.
  python3 - "$OUT/bench_$1.json" "$1" "$2" << 'EOF'
import json, sys
from chorustic.training import TrainConfig
try:
    eps = float(json.load(open(sys.argv[1]))["episodes_per_s"])
except (OSError, ValueError, KeyError, TypeError):
    sys.exit(0)
tc = TrainConfig.preset(sys.argv[2])
steps = int(float(sys.argv[3]) * 60 * 0.85 * eps / tc.batch_size)
if steps < tc.steps:
    print(max(steps, 1))
EOF
}

alive() { [ -f "$RUNS/$1.pid" ] && kill -0 "$(cat "$RUNS/$1.pid")" 2> /dev/null; }

launch() {  # start|resume RUN MIN [ARGS]: the run in its own process session (setsid) outlives this call
  local mode=$1 name=$2 minutes=$3 args; shift 3
  if alive "$name"; then say "$name is already running (pid $(cat "$RUNS/$name.pid")); not starting it again"; return; fi
  if [ "$mode" = start ]; then
    args="$(config_args "$name") --out $RUNS/$name"
  else
    args="--out $RUNS/$name --resume"
  fi
  rm -f "$RUNS/$name.exit"
  echo "=== $mode $(date '+%F %T') ===" >> "$RUNS/$name.log"
  say "$mode $name for $minutes min: chorustic pretrain $args --device $DEVICE --max-minutes $minutes $*"
  # $RUN.pid: this wrapper, alive until the exit status is written; $RUN.pypid: the training process
  # shellcheck disable=SC2016,SC2086
  setsid bash -c 'echo $$ > "$0.pid"; python3 -m chorustic pretrain "$@" & echo $! > "$0.pypid"; wait $!
                  echo $? > "$0.exit"' \
    "$RUNS/$name" $args --device "$DEVICE" --max-minutes "$minutes" --no-progress "$@" \
    >> "$RUNS/$name.log" 2>&1 < /dev/null &
  sleep 2
}

collect() {  # the run's files to $OUT (what comes back even if the call is killed at its limit)
  local name=$1 f
  for f in model.safetensors log.jsonl run.json summary.json curve.png; do
    [ -f "$RUNS/$name/$f" ] && cp "$RUNS/$name/$f" "$OUT/"
  done
  [ -f "$RUNS/$name.log" ] && cp "$RUNS/$name.log" "$OUT/train_$name.log"
  return 0
}

state() {
  local name=$1 rc at
  at=$(python3 -c 'import json, sys; s = json.load(open(sys.argv[1])); print("%d/%d" % (s["step"], s["planned_steps"]))' \
       "$RUNS/$name/summary.json" 2> /dev/null)  # STEP/PLANNED at the last checkpoint
  if alive "$name"; then echo "TRAINING (pid $(cat "$RUNS/$name.pypid"); ${at:+checkpoint at step }${at:-no checkpoint yet})"
  elif [ -f "$RUNS/$name.exit" ]; then
    rc=$(cat "$RUNS/$name.exit")
    if [ "$rc" != 0 ]; then echo "FAILED (exit $rc; see train_$name.log)"
    elif [ -z "$at" ]; then echo "ENDED (exit 0) without a summary.json"
    elif [ "${at%/*}" = "${at#*/}" ]; then echo "FINISHED (step $at)"
    else echo "STOPPED at step $at (time limit or stop; resume $name MIN continues it)"; fi
  elif [ -f "$RUNS/$name.pid" ]; then echo "GONE (ended without an exit status)"
  else echo "NOT STARTED"; fi
}

status() {  # state of RUN and its last log lines; its files to $OUT
  local name=$1
  collect "$name"
  say "$name: $(state "$name")"
  [ -f "$RUNS/$name/log.jsonl" ] && tail -n 2 "$RUNS/$name/log.jsonl"
  [ -f "$RUNS/$name.log" ] && grep -v '^{"kind"' "$RUNS/$name.log" | tail -n 6
  return 0
}

wait_run() {  # until RUN is no longer running or CALL_SECONDS of this call have passed; files to $OUT each minute
  local name=$1 next=$((SECONDS + 60))
  while alive "$name" && [ "$SECONDS" -lt "$CALL_SECONDS" ]; do
    sleep 5
    if [ "$SECONDS" -ge "$next" ]; then
      collect "$name"; next=$((SECONDS + 60))
      say "$name: $(state "$name"): $(tail -n 1 "$RUNS/$name/log.jsonl" 2> /dev/null)"
    fi
  done
  status "$name"
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
  first)
    name=${1:-base}; minutes=${2:-20}
    install
    timeout 20 nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv || true
    bench "$name"
    steps=$(fit_steps "$name" "$minutes")
    [ -n "$steps" ] && say "at the benchmark's speed $minutes min hold $steps steps: --steps $steps"
    # shellcheck disable=SC2086
    launch start "$name" "$minutes" ${steps:+--steps $steps} "${@:3}" || exit 1
    wait_run "$name" ;;
  wait) wait_run "${1:?run name}" ;;
  status) status "${1:?run name}" ;;
  start | resume)
    install; launch "$cmd" "${1:?run name}" "${2:?minutes}" "${@:3}" || exit 1
    CALL_SECONDS=$((SECONDS + 30)) wait_run "$1" ;;
  stop)
    name=${1:?run name}
    if alive "$name"; then kill -TERM "$(cat "$RUNS/$name.pypid")"; say "sent SIGTERM to $name"; fi
    wait_run "$name" ;;
  bench) install; if [ $# -gt 0 ]; then bench "$@"; else bench paper base; fi ;;
  *) echo "usage: tools/gpu/session.sh first|wait|status|start|resume|stop|bench ... (see its header)" >&2; exit 2 ;;
esac
