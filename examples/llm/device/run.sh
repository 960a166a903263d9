#!/usr/bin/env bash
# Runs examples/llm on a borrowed GPU machine from the bundle prepare.sh made: the committed
# run's task, samplers and steps with an 8-layer, 256-wide GPT-2 on the GPU, 64 seeds in parallel
# worker processes, TRACE through the bundled Node service. Needs there: python3 with torch
# (CUDA) and transformers, no Node, no network. From the repository root, the bundle carried:
#   bash examples/llm/device/run.sh OUT_DIR            # the H200 run (at most about 5 minutes)
#   bash examples/llm/device/run.sh OUT_DIR --tiny     # the same path at a tiny size on the CPU (its test)
# Writes into OUT_DIR: results.json, summary.md, curve.svg, final.svg (rewritten as each seed
# finishes, so a run stopped from outside keeps the seeds it finished) and run.log.
set -euo pipefail
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: bash examples/llm/device/run.sh OUT_DIR [--tiny]" >&2; exit 2; }
mkdir -p "$1"
outdir=$(cd "$1" && pwd)
tiny=${2:-}
[ -z "$tiny" ] || [ "$tiny" = --tiny ] || { echo "run.sh: the second argument can only be --tiny" >&2; exit 2; }
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../.." && pwd)
bundle=${TRACE_ALLOC_LLM_BUNDLE:-$here/out/trace-alloc-llm.tar.xz}
log=$outdir/run.log
: > "$log"
say() { echo "run.sh: $*" | tee -a "$log"; }

[ "$(uname -m)" = x86_64 ] || { say "this machine is $(uname -m); the bundle is x86-64"; exit 1; }
[ -f "$bundle" ] || { say "no bundle at $bundle: run examples/llm/device/prepare.sh first and carry examples/llm/device/out"; exit 1; }
command -v python3 >/dev/null || { say "no python3 on PATH"; exit 1; }
versions=$(python3 -c 'import sys, torch, transformers; print("python %s, torch %s (CUDA %s), transformers %s, GPU: %s" % (sys.version.split()[0], torch.__version__, torch.version.cuda, transformers.__version__, torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"))' 2>&1) \
  || { say "python3 cannot import torch and transformers: $versions"; exit 1; }
say "$versions"
if [ -z "$tiny" ] && ! python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)'; then
  say "no CUDA device: the h200 profile needs one (--tiny runs the same path on the CPU)"; exit 1
fi

work=$(mktemp -d /tmp/trace-alloc-llm.XXXXXX)
trap 'rm -rf "$work"' EXIT
if command -v xz >/dev/null; then xz -dc "$bundle" | tar -xf - -C "$work"
else python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$bundle" "$work"; fi
app=$work/trace-alloc-llm
export TRACE_ALLOC_NODE=$app/bin/node TRACE_ALLOC_BIN=$app/app/dist/cli/main.js
say "unpacked into $app: $(tr '\n' ';' < "$app/MANIFEST")"
reply=$(echo '{"id":1,"op":"stats"}' | "$TRACE_ALLOC_NODE" "$TRACE_ALLOC_BIN" serve --stdio --backend cpu 2>&1) || true
case "$reply" in *'"ok":true'*) say "bundled service answers: $("$TRACE_ALLOC_NODE" --version)" ;;
  *) say "the bundled service did not start: $reply"; exit 1 ;; esac
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,utilization.gpu --format=csv >> "$log" 2>&1 || true
fi
cores=$(nproc)
say "cores: $cores; load: $(cut -d' ' -f1-3 /proc/loadavg)"

# The trace_alloc package from the tree; no __pycache__ left in it; the commit for the record.
export PYTHONPATH=$repo/python${PYTHONPATH:+:$PYTHONPATH} PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
export TRACE_ALLOC_COMMIT=$(sed -n 's/^commit //p' "$app/MANIFEST")
if [ -n "$tiny" ]; then
  profile=h200-tiny seeds=${TRACE_ALLOC_LLM_SEEDS:-4} full=1 processes=2 stop_after=60 limit=240
else
  # One worker per core (the services are idle between plans); seeds start until 180 s, and the
  # whole run is stopped at 290 s (each finished seed is already written).
  # Every sampler on the first 8 seeds, independent chains and TRACE on all 64 (as the committed run).
  profile=h200 seeds=${TRACE_ALLOC_LLM_SEEDS:-64} full=8 processes=$(( cores > 2 ? cores : 2 )) stop_after=180 limit=290
fi
say "run.py --profile $profile --seeds $seeds --full-seeds $full --processes $processes (no seed starts after ${stop_after} s; stopped at ${limit} s)"
set +e
timeout "$limit" python3 "$repo/examples/llm/run.py" --profile "$profile" --seeds "$seeds" --full-seeds "$full" \
  --processes "$processes" --stop-after-s "$stop_after" --out "$outdir" 2>&1 | tee -a "$log"
code=${PIPESTATUS[0]}
set -e
[ "$code" = 124 ] && say "stopped at ${limit} s: results.json holds the seeds that had finished"
say "done (run.py exit $code); files in $outdir: $(cd "$outdir" && ls | tr '\n' ' ')"
[ -f "$outdir/results.json" ] || exit 1
[ "$code" = 0 ] || [ "$code" = 124 ]
