#!/usr/bin/env bash
# Runs the GPU benchmark suite on a borrowed GPU machine from the bundle prepare.sh made; needs
# no Node or network there. Run from the repository root with the bundle carried along:
#   bash bench/device/run.sh OUT_DIR
# Unpacks bench/device/out/trace-alloc-device.tar.xz into a temp folder, finds the Vulkan loader
# and the NVIDIA Vulkan driver (lavapipe, with a clear line, when there is none), runs a CLI
# smoke test and the suite (W1 and the tree sweep: GPU end to end, kernels alone by timestamp
# queries, transfer floor, CPU on 1 and on all threads, memory pass), and writes the results JSON,
# the report and its charts, and run.log into OUT_DIR. Bounded to about 5 minutes.
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: bash bench/device/run.sh OUT_DIR" >&2; exit 2; }
mkdir -p "$1"
outdir=$(cd "$1" && pwd)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bundle=${TRACE_ALLOC_BUNDLE:-$here/out/trace-alloc-device.tar.xz}
log=$outdir/run.log
: > "$log"
say() { echo "run.sh: $*" | tee -a "$log"; }

[ "$(uname -m)" = x86_64 ] || { say "this machine is $(uname -m); the bundle is x86-64"; exit 1; }
[ -f "$bundle" ] || { say "no bundle at $bundle: run bench/device/prepare.sh first and carry bench/device/out"; exit 1; }

work=$(mktemp -d /tmp/trace-alloc-device.XXXXXX)
if command -v xz >/dev/null; then xz -dc "$bundle" | tar -xf - -C "$work"
else python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$bundle" "$work"; fi
app=$work/trace-alloc-device
node=$app/bin/node
say "unpacked into $app: $(tr '\n' ';' < "$app/MANIFEST")"

# The Vulkan loader: the system's when it has one, else the bundled one.
libpath=
if ldconfig -p 2>/dev/null | grep -q 'libvulkan\.so\.1 '; then
  say "Vulkan loader: the system's ($(ldconfig -p | awk '/libvulkan\.so\.1 / { print $NF; exit }'))"
else
  libpath=$app/lib
  say "Vulkan loader: bundled (the system has no libvulkan.so.1)"
fi

# The NVIDIA Vulkan driver: its ICD json in the usual places, and the directory of the library it names.
icd_dirs="/usr/share/vulkan/icd.d /etc/vulkan/icd.d /usr/local/share/vulkan/icd.d /usr/local/nvidia/share/vulkan/icd.d /usr/local/nvidia/etc/vulkan/icd.d /usr/lib/x86_64-linux-gnu/nvidia"
find_icd() { for d in $icd_dirs; do for f in "$d"/$1; do if [ -f "$f" ]; then echo "$f"; return 0; fi; done; done; return 0; }
icd=$(find_icd 'nvidia_icd*.json')
lib_dirs="/usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib /lib/x86_64-linux-gnu"
if [ -n "$icd" ]; then
  say "NVIDIA Vulkan driver: $icd"
  driver_lib=$(sed -n 's/.*"library_path"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p' "$icd" | head -1)
  if [ -n "$driver_lib" ] && [ "${driver_lib#/}" = "$driver_lib" ] && ! ldconfig -p | grep -q " $driver_lib "; then
    for d in $lib_dirs; do
      if [ -e "$d/$driver_lib" ]; then libpath=${libpath:+$libpath:}$d; say "driver library $driver_lib found in $d (added to LD_LIBRARY_PATH)"; break; fi
    done
  fi
  say "NVIDIA libraries seen: $(for d in $lib_dirs; do ls "$d"/libGLX_nvidia.so.0 "$d"/libnvidia-vulkan* "$d"/libnvidia-glcore.so* 2>/dev/null; done | tr '\n' ' ')"
else
  icd=$(find_icd 'lvp_icd*.json')
  [ -n "$icd" ] || { say "no NVIDIA Vulkan driver and no lavapipe found (searched $icd_dirs)"; exit 1; }
  say "NO NVIDIA Vulkan driver found (searched $icd_dirs): using lavapipe ($icd), CPU-EMULATED — GPU figures are ratios to the CPU path only"
fi
export VK_ICD_FILENAMES=$icd VK_DRIVER_FILES=$icd
[ -n "$libpath" ] && export LD_LIBRARY_PATH=$libpath${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export XDG_RUNTIME_DIR=$work/xdg
mkdir -m 700 -p "$XDG_RUNTIME_DIR"
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem,utilization.gpu --format=csv >> "$log" 2>&1 || true
fi
say "cores: $(nproc); load: $(cut -d' ' -f1-3 /proc/loadavg)"

# Smoke test of the built CLI: auto's choice on this machine, said on stderr.
say "CLI smoke test: trace-alloc demo --trees 512 (backend auto)"
timeout 60 "$node" "$app/app/dist/cli/main.js" demo --trees 512 --view "$work/demo.html" > "$outdir/demo.txt" 2>&1 || say "demo failed (exit $?), see demo.txt"
grep -E 'scored on|note:' "$outdir/demo.txt" | tee -a "$log" || true

say "suite: $node app/bench/device/suite.js (budget 200 s of workloads, killed at 270 s)"
set +e
timeout 270 "$node" "$app/app/bench/device/suite.js" --out "$outdir" --budget-s 200 2>&1 | grep -v 'artificially reduced' | tee -a "$log"
code=${PIPESTATUS[0]}
set -e
rm -rf "$work"
say "done (suite exit $code); files in $outdir: $(cd "$outdir" && ls | tr '\n' ' ')"
exit "$code"
