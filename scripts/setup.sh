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
  [ -n "$updated" ] || { $SUDO apt-get update -qq; updated=1; }
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
    --no-install-recommends "$@" >/dev/null
}

# chromium: the report test; slurm: the Slurm executor and its test cluster;
# make, patch, tar, gdb, e2fsprogs: building and reading Linux 2.4 from the
# user's tree (colorsim/describe/linux24.py's TOOLS; the kernel's build,
# gdb for task_struct from its DWARF, mke2fs for its RAM disk)
packages=(seabios scons gcc binutils musl-tools chromium slurmctld slurmd slurm-client munge
          make patch tar gdb e2fsprogs)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
command -v python3 >/dev/null || missing+=(python3)
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  apt_install "${missing[@]}"
fi

if ! python3 -c "import pandas, matplotlib, pytest, pyarrow, jinja2, dask.distributed, duckdb, dask_jobqueue, ruff" 2>/dev/null; then
  echo "setup: installing Python packages from requirements.txt"
  if ! python3 -m pip install -q -r requirements.txt; then
    # Debian's own python3 refuses pip installs (PEP 668): use its packages,
    # and PyPI's pyarrow, which Debian 12 does not package.
    echo "setup: pip refused; installing Debian's python3 packages instead"
    apt_install python3-pandas python3-matplotlib python3-pytest python3-distributed python3-jinja2
    python3 -c "import pyarrow" 2>/dev/null ||
      python3 -m pip install -q --break-system-packages "pyarrow>=14"
    python3 -c "import duckdb" 2>/dev/null ||
      python3 -m pip install -q --break-system-packages "duckdb>=0.9"
    python3 -c "import ruff" 2>/dev/null ||
      python3 -m pip install -q --break-system-packages "ruff>=0.4"
    # optional (Debian does not package it): its recipe's test skips without it
    python3 -c "import dask_jobqueue" 2>/dev/null ||
      python3 -m pip install -q --break-system-packages "dask-jobqueue>=0.8" ||
      echo "setup: the optional dask-jobqueue is not installed"
  fi
fi

# The `colorsim` command: an editable install, since the package works from
# its checkout (kernels, configs and builds beside it).  `python3 -m
# colorsim` works without it, so a refusal is a warning.
if ! python3 -m pip install -q --no-deps -e . 2>/dev/null &&
   ! python3 -m pip install -q --no-deps --break-system-packages -e . 2>/dev/null; then
  echo "setup: warning: pip would not install the colorsim command; use python3 -m colorsim"
fi

echo "setup: QEMU (scripts/build-qemu.sh)"
bash scripts/build-qemu.sh

echo "setup: building the plugin and the default kernels"
scons -Q -j2 >/dev/null
echo "setup: done"
