#!/usr/bin/env bash
# Set up a fresh Debian machine for colorsim: Debian packages (SCons, the C
# toolchain, SeaBIOS, musl-tools for the user programs, what Linux 2.4 from
# the user's tree needs), PyPI packages, QEMU
# >= 10.1 built from Debian's source package (scripts/build-qemu.sh, about 3
# minutes the first time), and the default build (the bus-monitor plugin, the
# vanilla and c32 kernels, the user programs and the root-file-system image).
# Nothing is fetched from anywhere else.  Safe to run again: it skips what is
# already installed.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
updated=""
apt_install() {
  # An index that fails to download (a mirror mid-sync) is reported, not
  # fatal: apt goes on with the indexes it has, and a package it then
  # cannot find fails the install below with apt's own message.
  [ -n "$updated" ] || { $SUDO apt-get update -qq || echo "setup: apt-get update" \
    "reported errors (above); going on with the package indexes it has"; updated=1; }
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
    --no-install-recommends "$@" >/dev/null
}

# chromium: the report test; slurm: the Slurm executor and its test cluster;
# make, patch, tar, gdb, e2fsprogs: building and reading Linux 2.4 from the
# user's tree (colorsim/describe/linux24.py's TOOLS; the kernel's build,
# gdb for task_struct from its DWARF, mke2fs for its RAM disk); bin86 and
# gcc-12-multilib: its i386 images (as86/ld86 for the boot sector, gcc -m32;
# not the gcc-multilib meta package, which musl-dev:i386's cross compiler
# below replaces)
packages=(seabios scons gcc binutils musl-tools chromium slurmctld slurmd slurm-client munge
          make patch tar gdb e2fsprogs bin86 gcc-12-multilib)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
command -v python3 >/dev/null || missing+=(python3)
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  apt_install "${missing[@]}"
fi

# musl for i386 (the i386 Linux 2.4 images' init): Debian's multiarch
# package, so the i386 architecture is added to dpkg first.  Only the
# linux24-i386 kernels need it, so a failure here is a warning: they then
# refuse to build with a message that names the package.
if ! dpkg -s musl-dev:i386 >/dev/null 2>&1; then
  echo "setup: installing musl-dev:i386 (the i386 Linux 2.4 init)"
  $SUDO dpkg --add-architecture i386
  updated=""
  apt_install musl-dev:i386 || echo "setup: musl-dev:i386 could not be" \
    "installed; the linux24-i386 kernels need it, nothing else does"
fi

# Python: the checkout's own environment, .venv, with every package at the
# version constraints.txt pins (the catalog's Parquet bytes depend on
# pyarrow's), and colorsim installed editable from this checkout (the
# package works from it: kernels, configs and builds beside it).  Two clones
# on one machine each have their own, so neither's `colorsim` is the
# other's.  The packages are pyproject.toml's, with every extra.
# Re-installed when pyproject.toml or constraints.txt change.
VENV=.venv
if [ ! -x "$VENV/bin/python3" ]; then
  echo "setup: making the project's Python environment ($VENV)"
  if ! python3 -m venv "$VENV" 2>/dev/null; then
    rm -rf "$VENV"
    apt_install python3-venv            # Debian's python3 keeps venv apart
    python3 -m venv "$VENV"
  fi
fi
stamp="$VENV/.colorsim-installed"
want="$(cat constraints.txt pyproject.toml | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "setup: installing the Python packages (pyproject.toml, pinned by constraints.txt)"
  "$VENV/bin/python3" -m pip install -q --disable-pip-version-check \
    -c constraints.txt -e ".[dask,duckdb,test]"
  echo "$want" > "$stamp"
fi

echo "setup: QEMU (scripts/build-qemu.sh)"
bash scripts/build-qemu.sh

# The user's Linux 2.4 tree, if set-up is given one (LINUX24_SRC), is
# remembered for the tests.
bash scripts/remember-linux24.sh

echo "setup: building the plugin and the default kernels"
scons -Q -j2 >/dev/null
echo "setup: done; the commands run with $VENV/bin/python3 (or: . $VENV/bin/activate)"
