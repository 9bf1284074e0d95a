#!/usr/bin/env bash
# Remember the Linux 2.4 tree LINUX24_SRC names (set-up runs this), outside
# the checkout, so that later test runs on this machine, a fresh clone's
# too, run the tests that build Linux 2.4 (requires_linux24) without the
# variable: conftest.py reads the file when LINUX24_SRC is unset.
# Without LINUX24_SRC it does nothing.
set -euo pipefail
[ -n "${LINUX24_SRC:-}" ] || exit 0
REC="${COLORSIM_LINUX24_RECORD:-/var/cache/colorsim/linux24-src}"
# sudo only where the record's folder (or the nearest one that exists)
# or the record itself cannot be written as this user
d="$(dirname "$REC")"
while [ ! -e "$d" ]; do d="$(dirname "$d")"; done
SUDO=""
if [ "$(id -u)" -ne 0 ] && { [ ! -w "$d" ] || { [ -e "$REC" ] && [ ! -w "$REC" ]; }; }; then
  SUDO=sudo
fi
if [ ! -f "$LINUX24_SRC/Makefile" ] || [ ! -d "$LINUX24_SRC/kernel" ]; then
  echo "setup: LINUX24_SRC=$LINUX24_SRC is not a kernel source tree (no Makefile" \
    "and kernel/); not remembered" >&2
  exit 0
fi
$SUDO mkdir -p "$(dirname "$REC")"
realpath "$LINUX24_SRC" | $SUDO tee "$REC" >/dev/null
echo "setup: the Linux 2.4 tree $(cat "$REC") is remembered in $REC (for the tests)"
