#!/usr/bin/env bash
# Install the system packages mpcc needs (Debian). Idempotent: installs only what is missing.
# Needs root for apt-get; without root it prints what is missing and continues (the fluid engine
# and the simulator need none of these; the kernel testbed does).
set -euo pipefail
# bpftrace: the kernel tests that watch tcp tracepoints (test_cong_control); busybox-static: the
# initramfs of `make kernels` (and its unit test)
PKGS=(clang llvm libbpf-dev bpftool libelf-dev zlib1g-dev pkg-config iproute2 ethtool iputils-ping bpftrace busybox-static)
PKGS+=("$@")   # a target's own extras, e.g. `make kernels`: qemu-system-x86
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then exit 0; fi
if [ "$(id -u)" -ne 0 ]; then
  echo "mpcc setup: missing system packages: ${missing[*]} (run as root: apt-get install ${missing[*]}); kernel testbed will be unavailable" >&2
  exit 0
fi
echo "mpcc setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
