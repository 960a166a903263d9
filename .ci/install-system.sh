#!/usr/bin/env bash
# System packages the tests need on a plain Debian bookworm machine:
#  - Mesa's lavapipe (a Vulkan driver on the CPU) from bookworm-backports, because
#    bookworm's own Mesa 22 is too old for current Dawn; it gives WebGPU a real adapter.
#  - Debian's Chromium, for the browser test of the HTML view.
#  - python3-venv where python3 cannot make a virtualenv (.ci/run builds its Python environment in one).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
need=()
dpkg -s chromium >/dev/null 2>&1 || need+=(chromium)
python3 -c 'import ensurepip, venv' 2>/dev/null || need+=(python3-venv)
# Dawn needs Mesa >= 24; bookworm's own mesa-vulkan-drivers (22.x) must be upgraded, not kept.
mesa_version=$(dpkg-query -W -f='${Version}' mesa-vulkan-drivers 2>/dev/null || true)
if ! ls /usr/share/vulkan/icd.d/lvp_icd*.json >/dev/null 2>&1 || ! ldconfig -p | grep -q libvulkan.so.1 \
   || ! dpkg --compare-versions "${mesa_version:-0}" ge 24; then
  need+=(mesa)
fi
[ ${#need[@]} -eq 0 ] && { echo "system packages: already installed"; exit 0; }
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
if [ ! -f /etc/apt/sources.list.d/bookworm-backports.sources ]; then
  $SUDO tee /etc/apt/sources.list.d/bookworm-backports.sources >/dev/null <<'SRC'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
fi
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends -t bookworm-backports mesa-vulkan-drivers libvulkan1 >/dev/null
$SUDO apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
if [[ " ${need[*]} " == *" python3-venv "* ]]; then $SUDO apt-get install -y -qq --no-install-recommends python3-venv >/dev/null; fi
echo "system packages: installed lavapipe ($(dpkg-query -W -f='${Version}' mesa-vulkan-drivers)) and chromium"
