#!/usr/bin/env bash
# Packs what the borrowed GPU machine (x86-64, NVIDIA driver, Python with torch and transformers,
# but no Node and no network) needs to run examples/llm with TRACE in the loop: this machine's
# Node binary, the built service (dist/, JavaScript only) and the packages `trace-alloc serve`
# loads (apache-arrow and fflate with their dependencies; not webgpu: the service runs with
# --backend cpu), as one xz tarball in examples/llm/device/out/ (git-ignored). Run here:
#   bash examples/llm/device/prepare.sh
# The example's Python code and the trace_alloc package travel with the working tree.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."
OUT=examples/llm/device/out
LIMIT_MIB=40   # the device tool carries at most 64 MiB of working tree in all, the tree included

node_bin=$(readlink -f "$(command -v node)")
platform=$(node -p 'process.platform + "-" + process.arch')
[ "$platform" = linux-x64 ] || { echo "prepare.sh: the GPU machines are linux-x64; this Node is $platform" >&2; exit 1; }
node_major=$(node -p 'process.versions.node.split(".")[0]')
[ "$node_major" -ge 20 ] || { echo "prepare.sh: Node >= 20 needed, found $(node --version)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
stage=$tmp/trace-alloc-llm
mkdir -p "$stage/bin" "$stage/app/node_modules"

echo "prepare.sh: building dist/"
npx tsc -p tsconfig.json
cp "$node_bin" "$stage/bin/node"
cp -r dist "$stage/app/dist"
find "$stage/app/dist" -type f ! -name '*.js' -delete
cp package.json "$stage/app/package.json"

# The production dependency tree, less what `serve --backend cpu` never loads: webgpu (imported
# only for a GPU backend) and type declarations.
for dir in $(npm ls --omit=dev --all --parseable 2>/dev/null | tail -n +2); do
  rel=${dir#"$PWD"/}
  case "$rel" in
    node_modules/webgpu|node_modules/@webgpu/*|*/@types/*|*/undici-types) continue ;;
  esac
  mkdir -p "$stage/app/$rel"
  cp -r "$rel/." "$stage/app/$rel/"
done

# The service must start from the stage alone, with the bundled Node: one stats request.
reply=$(echo '{"id":1,"op":"stats"}' | "$stage/bin/node" "$stage/app/dist/cli/main.js" serve --stdio --backend cpu)
case "$reply" in *'"ok":true'*) ;; *) echo "prepare.sh: the staged service did not answer: $reply" >&2; exit 1 ;; esac

{
  echo "node $(node --version) from $node_bin"
  echo "packages $(ls "$stage/app/node_modules" | tr '\n' ' ')"
  echo "commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src || echo ' (with uncommitted changes in src/)')"
  echo "packed $(date -u +%Y-%m-%dT%H:%M:%SZ)"
} > "$stage/MANIFEST"

rm -rf "$OUT"
mkdir -p "$OUT"
echo "prepare.sh: compressing $(du -sm "$stage" | cut -f1) MiB with xz"
tar -C "$tmp" -cf - trace-alloc-llm | xz -T0 -6 > "$OUT/trace-alloc-llm.tar.xz"
cp "$stage/MANIFEST" "$OUT/MANIFEST"
size_mib=$(( $(stat -c %s "$OUT/trace-alloc-llm.tar.xz") / 1048576 ))
echo "prepare.sh: $OUT/trace-alloc-llm.tar.xz is ${size_mib} MiB (unpacked $(du -sm "$stage" | cut -f1) MiB)"
cat "$OUT/MANIFEST"
[ "$size_mib" -lt "$LIMIT_MIB" ] || { echo "prepare.sh: over ${LIMIT_MIB} MiB: it would not travel" >&2; exit 1; }
