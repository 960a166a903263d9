import { readdirSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Device files through which a GPU driver reaches hardware on Linux: DRM nodes (`dri/renderD*`,
 * `dri/card*`: Intel, AMD, virtio, most others), NVIDIA's `nvidia0…`, WSL2's `dxg`, Arm Mali's
 * `mali0`, Qualcomm Adreno's `kgsl-3d0`.
 */
const TOP_LEVEL_NODES = [/^nvidia\d+$/, /^dxg$/, /^mali\d*$/, /^kgsl-3d\d+$/];
const DRI_NODES = /^(renderD|card)\d+$/;

/**
 * The GPU device files under `dev` (Linux), or `undefined` when `dev` cannot be read. Without any,
 * no Vulkan driver can reach a real GPU, so WebGPU could offer only a CPU-emulated adapter
 * (lavapipe): `auto` then settles on the CPU without loading Dawn at all (whose adapter probe
 * prints driver warnings on stderr).
 */
export function gpuDeviceFiles(dev = '/dev'): string[] | undefined {
  let top: string[];
  try {
    top = readdirSync(dev);
  } catch {
    return undefined;
  }
  const found = top.filter((name) => TOP_LEVEL_NODES.some((pattern) => pattern.test(name))).map((name) => join(dev, name));
  if (top.includes('dri')) {
    try {
      found.push(...readdirSync(join(dev, 'dri')).filter((name) => DRI_NODES.test(name)).map((name) => join(dev, 'dri', name)));
    } catch {
      return undefined; // a dri folder we cannot list may well hold a GPU
    }
  }
  return found.sort();
}
