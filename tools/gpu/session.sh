#!/usr/bin/env bash
# What a session with a lent GPU machine runs there, through the device tool, from the repository root,
# carrying .whl (tools/gpu/fetch_wheels.sh); see tools/gpu/README.md. A window is about 15 minutes of device
# time in all (the machine's start, every call, the idle time between them), one call at most 10 minutes.
#
#   tools/gpu/session.sh window [RUN]             # call 1 (9 min): install, versions, the CUDA tests, throughput of
#                                               # paper (encoder trainable) and RUN (default base), then RUN's
#                                               # pretraining for the minutes left, continuing the committed
#                                               # models/chorustic-RUN/model.safetensors when there is one; the run
#                                               # outlives the call and exports its model by WINDOW_END
#   tools/gpu/session.sh diagnose                # instead of window, no training: the CUDA tests (the compiled one
#                                               # up to 150 s), paper and base benchmarks each with a profiled step,
#                                               # and base with --compile (8 warm-up steps compile; at most 180 s)
#   tools/gpu/session.sh collect RUN              # call 2 (<= 2 min): wait for RUN to end, its files to $OUT
#   tools/gpu/session.sh wait RUN                # wait until RUN ends or the call's time is up
#   tools/gpu/session.sh status RUN              # one look: state, last log lines; copies the run's files to $OUT
#   tools/gpu/session.sh start RUN MIN [ARGS]    # start only (ARGS: more `chorustic pretrain` options)
#   tools/gpu/session.sh resume RUN MIN [ARGS]   # continue a stopped run on the same machine
#   tools/gpu/session.sh stop RUN                # SIGTERM: the run checkpoints, exports its model and exits
#   tools/gpu/session.sh bench [CONFIG ...]      # throughput (default: paper with the encoder trainable, base;
#                                               # CONFIG+compile: with --compile)
#   tools/gpu/session.sh tests                   # the CUDA tests only
#
# Everything printed also goes to $OUT/session.log, so it comes back even if the call is killed at its limit.
# What comes back from $OUT (at most 8 files): session.log, bench_CONFIG.json, profile_CONFIG.txt, the run's
# model.safetensors and RUN.tar.gz (log.jsonl, run.json, summary.json, curve.png, train_config.json, the
# run's own output train_RUN.log), and session_machine.log (every call's output on this machine).
# Settings (environment): DEVICE (cuda; cpu to rehearse), CALL_SECONDS (a waiting call returns after this
# many seconds of the call: 530 for window, 110 for collect, 540 otherwise), WINDOW_END (call seconds by which
# the window's run has exported its model: 620, i.e. inside call 2), TEST_TIMEOUT (90 s: the CUDA tests but
# the compiled one), COMPILE_TIMEOUT (75 s: the compiled-stages test), BENCH_STEPS
# ("--warmup 2 --steps 4"), BENCH_TIMEOUT (130 s for paper, 60 s otherwise), COMPILE_BENCH_TIMEOUT (180 s),
# PROFILE_STEPS (1: steps profiled after a benchmark's timed steps), RUNS
# (/tmp/chorustic-runs), MODELS (models: where committed models are looked for).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit
OUT=${OUT:-/tmp/out}
RUNS=${RUNS:-/tmp/chorustic-runs}
mkdir -p "$OUT" "$RUNS"
if [ -z "${CHORUSTIC_SESSION_TEE:-}" ]; then  # run again with all output copied to $OUT/session.log, and to the
  # machine's $RUNS/session.log, which a later call's collect returns as session_machine.log ($OUT is emptied
  # before each call)
  CHORUSTIC_SESSION_TEE=1 bash "$0" "$@" 2>&1 | tee -a "$OUT/session.log" "$RUNS/session.log"
  exit "${PIPESTATUS[0]}"
fi
DEVICE=${DEVICE:-cuda}
BENCH_STEPS=${BENCH_STEPS:---warmup 2 --steps 4}
TEST_TIMEOUT=${TEST_TIMEOUT:-90}
PROFILE_STEPS=${PROFILE_STEPS:-1}
COMPILE_TIMEOUT=${COMPILE_TIMEOUT:-75}
WINDOW_END=${WINDOW_END:-620}
MODELS=${MODELS:-models}
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
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
  echo "--model-config $1 --train-config ${TRAIN_CONFIG:-$1}"
  [ "$1" = paper ] && echo "--train-signal-encoder"
}

bench() {  # CONFIG[+compile] ...: throughput, then PROFILE_STEPS steps under torch.profiler (profile_CONFIG.txt);
  # a failed or slow benchmark never stops what follows
  local c name limit extra
  for c in "$@"; do
    name=${c%%+*}; extra=""
    [ "$c" != "$name" ] && extra="--compile --warmup 8 --steps 4"  # compiling takes the warm-up steps
    limit=${BENCH_TIMEOUT:-$([ "$name" = paper ] && echo 130 || echo 60)}
    [ -n "$extra" ] && limit=${COMPILE_BENCH_TIMEOUT:-180}
    say "benchmark $c (${extra:-$BENCH_STEPS}, $PROFILE_STEPS profiled, at most ${limit}s)"
    # shellcheck disable=SC2046,SC2086
    timeout "$limit" python3 benchmarks/pretrain_throughput.py $(config_args "$name") --device "$DEVICE" \
      ${extra:-$BENCH_STEPS} --profile-steps "$PROFILE_STEPS" --profile-out "$RUNS/profile_${c/+/_}.txt" \
      > "$RUNS/bench_${c/+/_}.json" || say "benchmark $c failed (exit $?); going on"
    cp "$RUNS/bench_${c/+/_}.json" "$OUT/"; cat "$OUT/bench_${c/+/_}.json"
    [ -f "$RUNS/profile_${c/+/_}.txt" ] && cp "$RUNS/profile_${c/+/_}.txt" "$OUT/"
  done
  return 0
}

cuda_tests() {  # tests/test_cuda.py: the fast tests, then inductor's compile (minutes of compilation at most);
  # each bounded in time, a failure or a hang never stops what follows
  local part limit rc
  for part in "not compiled" "compiled"; do
    limit=$([ "$part" = compiled ] && echo "$COMPILE_TIMEOUT" || echo "$TEST_TIMEOUT")
    say "CUDA tests: -k '$part' (at most ${limit}s)"
    # -o addopts=: pyproject's addopts ask for pytest-xdist's workers (-n auto), which the GPU machines lack;
    # the CUDA tests run one after another in one process
    CHORUSTIC_CUDA_TESTS_DEVICE=$DEVICE timeout "$limit" python3 -m pytest tests/test_cuda.py -m cuda -k "$part" \
      -o addopts= -v --tb=short -p no:cacheprovider
    rc=$?; [ "$rc" = 0 ] || { echo; say "CUDA tests -k '$part' failed or timed out (exit $rc); going on"; }
  done
}

window_config() {  # RUN SECONDS: $RUNS/RUN.train_config.json, the preset sized to the steps that fit in SECONDS
  # at 85 % of the benchmark's episodes/s (validation, checkpoints, data wait), continuing the committed model
  # when there is one (TrainConfig.sized_to); prints the steps, nothing without a benchmark figure
  python3 - "$RUNS/bench_$1.json" "$1" "$2" "$MODELS/chorustic-$1/model.safetensors" "$RUNS/$1.train_config.json" \
    << 'EOF2'
import json, os, sys
from chorustic.training import TrainConfig
bench, name, seconds, model, out = sys.argv[1:]
try:
    eps = float(json.load(open(bench))["episodes_per_s"])
except (OSError, ValueError, KeyError, TypeError):
    sys.exit(0)
tc = TrainConfig.preset(name)
steps = max(1, int(float(seconds) * 0.85 * eps / tc.batch_size))
with open(out, "w") as fh:
    json.dump(tc.sized_to(steps, continued=os.path.isfile(model)).to_dict(), fh, indent=1)
print(steps)
EOF2
}

start_window() {  # RUN: its pretraining until WINDOW_END of the call (40 s kept for start-up and the export)
  local name=$1 seconds steps init=() model="$MODELS/chorustic-$1/model.safetensors"
  seconds=$((WINDOW_END - SECONDS - 40)); [ "$seconds" -lt 60 ] && seconds=60
  steps=$(window_config "$name" "$seconds")
  if [ -n "$steps" ]; then
    say "at the benchmark's speed $seconds s hold $steps steps: the schedule is sized to them"
    TRAIN_CONFIG="$RUNS/$name.train_config.json"; export TRAIN_CONFIG
  else
    say "no benchmark figure: the preset's schedule, cut by the time limit"
  fi
  if [ -f "$model" ]; then
    say "continuing $model (weights only; short warm-up, no curriculum)"; init=(--init-from "$model" --init-parts all)
  fi
  launch start "$name" "$(python3 -c "print(round($seconds / 60, 2))")" "${init[@]}" || exit 1
}

alive() { [ -f "$RUNS/$1.pid" ] && kill -0 "$(cat "$RUNS/$1.pid")" 2> /dev/null; }

launch() {  # start|resume RUN MIN [ARGS]: the run in its own process session (setsid) outlives this call
  local mode=$1 name=$2 minutes=$3 args; shift 3
  if alive "$name"; then say "$name is already running (pid $(cat "$RUNS/$name.pid")); not starting it again"; return; fi
  if [ "$mode" = start ]; then
    args="$(config_args "$name") --out-dir $RUNS/$name"
  else
    args="--out-dir $RUNS/$name --resume"
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

collect() {  # the run's files to $OUT (what comes back even if the call is killed at its limit): the model,
  # and the small files in one RUN.tar.gz (at most 8 files come back from a call); the benchmarks' JSON and the
  # machine's whole session log (earlier calls too) when this call did not write them itself
  local name=$1 f small=()
  for f in "$RUNS"/bench_*.json; do [ -f "$f" ] && [ ! -f "$OUT/${f##*/}" ] && cp "$f" "$OUT/"; done
  cp "$RUNS/session.log" "$OUT/session_machine.log" 2> /dev/null
  [ -f "$RUNS/$name/model.safetensors" ] && cp "$RUNS/$name/model.safetensors" "$OUT/"
  [ -d "$RUNS/$name" ] || return 0
  [ -f "$RUNS/$name.log" ] && cp "$RUNS/$name.log" "$RUNS/$name/train_$name.log"
  [ -f "$RUNS/$name.train_config.json" ] && cp "$RUNS/$name.train_config.json" "$RUNS/$name/train_config.json"
  for f in log.jsonl run.json summary.json curve.png train_config.json "train_$name.log"; do
    [ -f "$RUNS/$name/$f" ] && small+=("$f")
  done
  [ ${#small[@]} -gt 0 ] && tar -czf "$OUT/$name.tar.gz.part" -C "$RUNS/$name" "${small[@]}" \
    && mv "$OUT/$name.tar.gz.part" "$OUT/$name.tar.gz"
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
  window)
    name=${1:-base}
    install
    timeout 20 nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv || true
    cuda_tests
    bench paper "$name"
    start_window "$name"
    CALL_SECONDS=${CALL_SECONDS:-530} wait_run "$name" ;;
  diagnose)  # no training: where a step's time goes (see README)
    install
    timeout 20 nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv || true
    COMPILE_TIMEOUT=${COMPILE_TIMEOUT:-150} cuda_tests
    bench paper base base+compile ;;
  collect) CALL_SECONDS=${CALL_SECONDS:-110} wait_run "${1:?run name}" ;;
  wait) CALL_SECONDS=${CALL_SECONDS:-540} wait_run "${1:?run name}" ;;
  status) status "${1:?run name}" ;;
  start | resume)
    install; launch "$cmd" "${1:?run name}" "${2:?minutes}" "${@:3}" || exit 1
    CALL_SECONDS=$((SECONDS + 30)) wait_run "$1" ;;
  stop)
    name=${1:?run name}
    if alive "$name"; then kill -TERM "$(cat "$RUNS/$name.pypid")"; say "sent SIGTERM to $name"; fi
    CALL_SECONDS=${CALL_SECONDS:-540} wait_run "$name" ;;
  bench) install; if [ $# -gt 0 ]; then bench "$@"; else bench paper base; fi ;;
  tests) install; cuda_tests ;;
  *) echo "usage: tools/gpu/session.sh window|diagnose|collect|wait|status|start|resume|stop|bench|tests ... (see its header)" >&2
     exit 2 ;;
esac
