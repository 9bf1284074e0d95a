#!/usr/bin/env bash
# Prove the README's two commands on a fresh Debian bookworm: debootstrap a
# minimal system (from Debian's own archive), clone this repository into it,
# and run both commands inside a chroot.  Needs root and ~2 GiB; takes a few
# minutes.  Not part of CI (CI runs on the developer's machine, where
# packages installed by hand would hide a missing install step).
#   usage: sudo bash scripts/fresh-machine-check.sh [WORKDIR]
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="${1:-/tmp/colorsim-fresh}"
root="$work/root"
command -v debootstrap >/dev/null || apt-get install -y -qq debootstrap
[ -x "$root/bin/bash" ] || debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian
cp /etc/resolv.conf "$root/etc/"
mountpoint -q "$root/proc" || mount -t proc proc "$root/proc"
mountpoint -q "$root/dev" || mount --bind /dev "$root/dev"
trap 'umount "$root/proc" "$root/dev" 2>/dev/null || true' EXIT
rm -rf "$root/work" && mkdir -p "$root/work"
git clone -q "$repo" "$root/work/main"
chroot "$root" /bin/bash -c "cd /work/main && bash scripts/setup.sh && .venv/bin/python3 -m colorsim figure1"
chroot "$root" /bin/bash -c "cd /work/main && bash scripts/setup.sh && .venv/bin/python3 -m pytest -q -ra"
echo "fresh-machine check: both README commands passed"
