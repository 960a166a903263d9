#!/usr/bin/env bash
# Packs what a borrowed GPU machine (x86-64, NVIDIA driver, no Node, no network) needs to run the
# GPU benchmark: this machine's Node binary, the library (dist/ and the compiled benchmark suite),
# shaders/, the runtime dependencies (webgpu with only its linux-x64 dawn.node, d3-hierarchy) and
# the Vulkan loader, as one xz tarball in bench/device/out/ (git-ignored). Run here, from anywhere:
#   bash bench/device/prepare.sh
# Then bench/device/run.sh runs it there; bench/device/README.md has the device-tool invocation.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
OUT=bench/device/out
LIMIT_MIB=60   # the device tool carries at most 64 MiB of working tree in all

node_bin=$(readlink -f "$(command -v node)")
platform=$(node -p 'process.platform + "-" + process.arch')
[ "$platform" = linux-x64 ] || { echo "prepare.sh: the GPU machines are linux-x64; this Node is $platform" >&2; exit 1; }
node_major=$(node -p 'process.versions.node.split(".")[0]')
[ "$node_major" -ge 20 ] || { echo "prepare.sh: Node >= 20 needed, found $(node --version)" >&2; exit 1; }
libvulkan=$(ldconfig -p | awk '/libvulkan\.so\.1 .*x86-64/ { print $NF; exit }')
[ -n "$libvulkan" ] || { echo "prepare.sh: no libvulkan.so.1 here to bundle (apt-get install libvulkan1)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
stage=$tmp/trace-alloc-device
mkdir -p "$stage/bin" "$stage/lib" "$stage/app/node_modules"

echo "prepare.sh: building dist/ and the device suite"
npx tsc -p tsconfig.json
npx tsc -p bench/device/tsconfig.json --outDir "$stage/app"

cp "$node_bin" "$stage/bin/node"
cp -L "$libvulkan" "$stage/lib/libvulkan.so.1"
cp -r dist "$stage/app/dist"
find "$stage/app/dist" -type f ! -name '*.js' -delete
cp -r shaders "$stage/app/shaders"
cp package.json "$stage/app/package.json"

# Runtime dependencies only (package.json "dependencies"), and of webgpu only the linux-x64 binary:
# its index.js loads dist/<platform>-<arch>/dawn.node and nothing else at run time.
for dep in $(node -p 'Object.keys(require("./package.json").dependencies).join(" ")'); do
  mkdir -p "$stage/app/node_modules/$dep"
  if [ "$dep" = webgpu ]; then
    mkdir -p "$stage/app/node_modules/webgpu/dist/linux-x64"
    cp node_modules/webgpu/package.json node_modules/webgpu/index.js node_modules/webgpu/LICENSE.md "$stage/app/node_modules/webgpu/"
    cp node_modules/webgpu/dist/linux-x64/dawn.node "$stage/app/node_modules/webgpu/dist/linux-x64/"
  else
    cp -r "node_modules/$dep/." "$stage/app/node_modules/$dep/"
  fi
done

{
  echo "node $(node --version) from $node_bin"
  echo "libvulkan.so.1 from $libvulkan ($(dpkg -S "$(readlink -f "$libvulkan")" 2>/dev/null | cut -d: -f1 || dpkg -S "/usr$(readlink -f "$libvulkan")" 2>/dev/null | cut -d: -f1 || echo unknown package))"
  echo "webgpu $(node -p 'require("./node_modules/webgpu/package.json").version')"
  echo "commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src shaders bench || echo ' (with uncommitted changes)')"
  echo "packed $(date -u +%Y-%m-%dT%H:%M:%SZ)"
} > "$stage/MANIFEST"

rm -rf "$OUT"
mkdir -p "$OUT"
echo "prepare.sh: compressing $(du -sm "$stage" | cut -f1) MiB with xz"
tar -C "$tmp" -cf - trace-alloc-device | xz -T0 -6 > "$OUT/trace-alloc-device.tar.xz"
cp "$stage/MANIFEST" "$OUT/MANIFEST"
size_mib=$(( $(stat -c %s "$OUT/trace-alloc-device.tar.xz") / 1048576 ))
echo "prepare.sh: $OUT/trace-alloc-device.tar.xz is ${size_mib} MiB (unpacked $(du -sm "$stage" | cut -f1) MiB)"
cat "$OUT/MANIFEST"
[ "$size_mib" -lt "$LIMIT_MIB" ] || { echo "prepare.sh: over ${LIMIT_MIB} MiB: it would not travel" >&2; exit 1; }
