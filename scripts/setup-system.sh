#!/usr/bin/env bash
# Installs the Debian packages that the system test tiers need: the reference CNI plugins and ping (tests/net),
# Podman with runc (cgroup v1 machines) and busybox-static for a local image (tests/runtime), and chromium
# (tests/browser), and BIND 9 with dig and nsupdate (tests/dns). CI runs it as root; elsewhere it says in one line why it did nothing, and the
# tiers that need the packages then say in one line that they did not run (scripts/system-tiers.ts).
set -euo pipefail
packages=(containernetworking-plugins iputils-ping iproute2 chromium podman runc busybox-static bind9 bind9-dnsutils)
if [ "$(uname -s)" != "Linux" ]; then echo "setup:system: not Linux; the network and browser tiers will not run"; exit 0; fi
if ! command -v apt-get >/dev/null 2>&1; then echo "setup:system: no apt-get; install ${packages[*]} by hand"; exit 0; fi
missing=()
for p in "${packages[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p"); done
if [ ${#missing[@]} -eq 0 ]; then echo "setup:system: ${packages[*]} already installed"; exit 0; fi
if [ "$(id -u)" != "0" ]; then echo "setup:system: not root; missing ${missing[*]} (sudo npm run setup:system)"; exit 0; fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup:system: installed ${missing[*]}"
