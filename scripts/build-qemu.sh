#!/usr/bin/env bash
# Build the embedded engine, qemu-system-x86_64 >= 10.1, from Debian's
# source package, and install it into a cache outside the checkout.
#
# Why from source: QEMU >= 10.1 (plugin API 5) lets a plugin write guest
# memory, which the timing model needs, and Debian bookworm ships only 7.2 as
# a binary.  A deb-src entry for sid only adds source packages; it never
# changes which binaries apt installs (an unpinned "deb" entry would, so we
# never add one).
#
# Environment:
#   COLORSIM_QEMU_CACHE    cache root (default /var/cache/colorsim); the
#                          binary goes to $COLORSIM_QEMU_CACHE/qemu-<ver>/
#   COLORSIM_QEMU_VERSION  Debian source version to build (default pinned
#                          below).  If the archive no longer offers it, the
#                          newest version >= 10.1 it offers is built instead.
#   COLORSIM_JOBS          parallel build jobs (default 2)
#
# Idempotent: if the cached binary exists and runs, it reports the version
# and does nothing else.  Builds into one cache take turns (a lock in it).
set -euo pipefail
cd "$(dirname "$0")/.."

PIN="1:10.2.2+ds-1"
SUITE="sid"
CACHE="${COLORSIM_QEMU_CACHE:-/var/cache/colorsim}"
WANT="${COLORSIM_QEMU_VERSION:-$PIN}"
JOBS="${COLORSIM_JOBS:-2}"
SRCLIST=/etc/apt/sources.list.d/colorsim-qemu-src.sources

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
t0=$(date +%s)
say() { echo "build-qemu: [$(( $(date +%s) - t0 ))s] $*"; }
die() { echo "build-qemu: $*" >&2; exit 2; }

# Our patches on top of Debian's source (scripts/qemu-patches/*.patch; see
# the README there).  Their hash is part of the install directory's name and
# of the recorded version, so a change of patches is a different engine.
PATCHES=(scripts/qemu-patches/*.patch)
PHASH="$(cat "${PATCHES[@]}" | sha256sum | cut -c1-8)"

# Directory name for a Debian version: no epoch, no characters a shell
# would trip on, and the patch set.
dirname_for() { echo "qemu-${1#*:}-p$PHASH"; }

# One build at a time per cache: set-ups started together would otherwise
# run configure and ninja in the same source tree (one failed at the link
# step).  The lock is taken before the cache is looked at, so a build that
# waited finds the other's result and does nothing.  It is released when
# this script exits, however it exits.
$SUDO mkdir -p "$CACHE"
LOCK="$CACHE/.build.lock"
if [ ! -w "$LOCK" ]; then
  $SUDO touch "$LOCK"
  $SUDO chmod a+rw "$LOCK"
fi
exec 9>>"$LOCK"
if ! flock -n 9; then
  echo "build-qemu: waiting for another build of this cache ($LOCK)"
  flock 9
fi

# The version we built last is recorded next to the binaries, so that a
# fallback build is found again without asking the archive.
if [ -f "$CACHE/current" ]; then
  cur="$(cat "$CACHE/current")"
  bin="$CACHE/$cur/bin/qemu-system-x86_64"
  if [ -x "$bin" ] && "$bin" --version >/dev/null 2>&1 && [ "${cur%-p*}-p$PHASH" = "$cur" ] &&
     { [ -z "${COLORSIM_QEMU_VERSION:-}" ] || [ "$cur" = "$(dirname_for "$WANT")" ]; }; then
    echo "build-qemu: cached: $("$bin" --version | head -1), $(head -1 "$CACHE/$cur/debian-version") + patches $PHASH, at $bin"
    exit 0
  fi
fi

# An index that fails to download (a mirror in the middle of a sync) leaves
# apt with the indexes it had; what is missing shows up below as a package
# or source version the archive does not offer, with its own message.
apt_update() {
  $SUDO apt-get update -qq ||
    say "apt-get update reported errors (above); going on with the package indexes it has"
}

apt_install() {
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
    --no-install-recommends "$@" >/dev/null
}

# Build dependencies, all from bookworm.  seabios is the guest firmware
# (used through -L); the option ROMs are built from the source below.
say "installing build dependencies from Debian"
# gcc-12-multilib, not the gcc-multilib meta package: the meta package
# conflicts with the i386 cross compiler musl-dev:i386 brings (setup.sh),
# and the option ROMs need only gcc -m32 and a 32-bit libgcc.
deps=(gcc gcc-12-multilib g++ make patch pkg-config dpkg-dev xz-utils ninja-build
      device-tree-compiler libfdt-dev libpixman-1-dev libglib2.0-dev
      zlib1g-dev flex bison python3 python3-venv seabios binutils)
missing=()
for p in "${deps[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  apt_update
  apt_install "${missing[@]}"
fi

# The source entry.  Sources only: "Types: deb-src".  sid's Release file
# is valid for a week only; a machine whose clock runs ahead of its mirror
# (a snapshot) would refuse it, so this entry does not check the dates.
# Signatures are still checked, and the source files against the index.
entry="# Added by colorsim scripts/build-qemu.sh: QEMU source packages only.
# deb-src never changes which binary packages apt installs.
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: $SUITE
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
Check-Valid-Until: no
Check-Date: no"
if [ "$(cat "$SRCLIST" 2>/dev/null)" != "$entry" ]; then
  say "writing the deb-src entry for $SUITE ($SRCLIST)"
  echo "$entry" | $SUDO tee "$SRCLIST" >/dev/null
fi
say "apt-get update"
apt_update

# The versions to try, in order: the pin if offered, then every version
# >= 10.1 offered, newest first.  An index can list a version whose files
# the mirror no longer has; then the next one is tried.
offered="$(apt-cache showsrc qemu 2>/dev/null | awk '/^Package: qemu$/{p=1} p&&/^Version:/{print $2; p=0}' | sort -u)"
[ -n "$offered" ] || die "the archive offers no qemu source package (check $SRCLIST)"
candidates=()
grep -qxF "$WANT" <<<"$offered" && candidates+=("$WANT")
for v in $(for v in $offered; do
             dpkg --compare-versions "$v" ge "1:10.1" && echo "$v"
           done | sort -r -V); do
  [ "$v" = "$WANT" ] || candidates+=("$v")
done
[ ${#candidates[@]} -gt 0 ] || die "the archive offers no qemu source >= 10.1 (it has: $(echo $offered))"
# Meson >= 1.9 from PyPI (bookworm has 1.0).  Into the python3 that runs
# QEMU's configure if pip may install there, else into a venv in the cache.
PY=python3
if ! $PY -c 'import mesonbuild.mesonmain, sys; from mesonbuild import coredata as c; v=tuple(int(x) for x in c.version.split(".")[:2]); sys.exit(v < (1, 9))' 2>/dev/null; then
  say "installing meson >= 1.9 from PyPI"
  if ! $PY -m pip install -q 'meson>=1.9' 2>/dev/null; then
    say "pip cannot install there (PEP 668, or no pip); using a venv in $CACHE/meson-venv"
    $SUDO mkdir -p "$CACHE"
    [ -x "$CACHE/meson-venv/bin/python3" ] || $SUDO python3 -m venv "$CACHE/meson-venv"
    $SUDO "$CACHE/meson-venv/bin/python3" -m pip install -q 'meson>=1.9'
    PY="$CACHE/meson-venv/bin/python3"
  fi
fi
PY="$(command -v "$PY")"
say "meson $($PY -c 'from mesonbuild import coredata; print(coredata.version)') via $PY"

# Fetch (once) and patch the source of one version into $CACHE/src.
fetch_source() {
  local ver="$1" src="$CACHE/src/qemu-${1#*:}" work tree p
  if [ -f "$src/configure" ] && [ "$(cat "$src/.colorsim-patches" 2>/dev/null)" = "$PHASH" ]; then
    return 0
  fi
  say "apt-get source qemu=$ver (unpacks and applies Debian's patches)"
  work="$(mktemp -d "$CACHE/src/.get.XXXXXX")"
  if ! (cd "$work" && apt-get source -qq "qemu=$ver" >/dev/null); then
    rm -rf "$work"
    return 1
  fi
  tree="$(find "$work" -mindepth 1 -maxdepth 1 -type d -name 'qemu-*' | head -1)"
  [ -n "$tree" ] && [ -f "$tree/configure" ] || die "apt-get source gave no QEMU tree in $work"
  for p in "${PATCHES[@]}"; do
    say "applying $p"
    patch -d "$tree" -p1 -s < "$p" || die "$p does not apply to qemu $ver"
  done
  echo "$PHASH" > "$tree/.colorsim-patches"
  rm -rf "$src"; mv "$tree" "$src"; rm -rf "$work"
}

$SUDO mkdir -p "$CACHE/src"
VER=""
for v in "${candidates[@]}"; do
  if fetch_source "$v"; then VER="$v"; break; fi
  say "could not fetch qemu $v from the archive; trying the next version"
done
[ -n "$VER" ] || die "none of the qemu sources >= 10.1 could be fetched (tried: ${candidates[*]})"
[ "$VER" = "$WANT" ] ||
  say "NOTE: qemu $WANT is not available; falling back to $VER, the newest >= 10.1 the archive could deliver"
SRC="$CACHE/src/qemu-${VER#*:}"
NAME="$(dirname_for "$VER")"
PREFIX="$CACHE/$NAME"
say "building qemu $VER into $PREFIX"

# Debian's +ds tarball strips the prebuilt firmware and the ROM source
# archives.  Nothing of ours needs them: the guest boots Debian's SeaBIOS,
# and the multiboot/linuxboot option ROMs are built from QEMU's own
# pc-bios/optionrom sources below.  Meson still lists some blobs as
# install sources, so give it empty stand-ins where a file is missing.
cd "$SRC"
for f in $(sed -n "s/^ *'\([A-Za-z0-9_.-]*\.\(bin\|rom\|img\|dtb\|fd\|lid\|elf\|bz2\)\)',\{0,1\}$/\1/p" pc-bios/meson.build 2>/dev/null); do
  [ -e "pc-bios/$f" ] || : > "pc-bios/$f"
done

# --prefix only sets QEMU's compiled-in data directory, which the suite
# never uses (it always passes -L), so it does not follow the patch set.
conf=(--python="$PY" --prefix="$CACHE/qemu-${VER#*:}"
      --target-list=x86_64-softmmu --enable-plugins --enable-tcg
      --without-default-features
      --disable-docs --disable-tools --disable-install-blobs --disable-download
      --disable-werror)
# An interrupted build resumes: configure again in place (ninja then redoes
# only what changed) unless nothing changed; start afresh only if that fails.
if [ -f build/build.ninja ] && [ -f build/pc-bios/optionrom/config.mak ] &&
   [ "$(cat build/colorsim-configure 2>/dev/null)" = "${conf[*]}" ]; then
  say "configure: reusing the configured build directory"
else
  say "configure (x86_64-softmmu, plugins; no docs, tools or UIs)"
  mkdir -p build
  if ! (cd build && ../configure "${conf[@]}" > ../configure.log 2>&1); then
    rm -rf build; mkdir build
    (cd build && ../configure "${conf[@]}" > ../configure.log 2>&1) ||
      { tail -20 configure.log; die "configure failed (log: $SRC/configure.log)"; }
  fi
  echo "${conf[*]}" > build/colorsim-configure
fi
# The multiboot and linuxboot option ROMs need a 32-bit libgcc
# (gcc-12-multilib); without it configure silently skips them.
[ -f build/pc-bios/optionrom/config.mak ] ||
  die "configure found no 32-bit x86 compiler for the option ROMs (is gcc-12-multilib installed?)"
grep -q "CONFIG_PLUGIN" build/config-host.h || die "configure did not enable plugins"

say "ninja qemu-system-x86_64 (-j$JOBS; progress every 10%)"
set +o pipefail
ninja -C build -j"$JOBS" qemu-system-x86_64 2>&1 | tee build.log | awk -F'[][/]' '
  /^\[[0-9]+\/[0-9]+\]/ { p = int(100 * $2 / $3 / 10) * 10
    if (p != last) { printf "build-qemu:   %d%% (%d/%d)\n", p, $2, $3; fflush(); last = p } }'
rc="${PIPESTATUS[0]}"
set -o pipefail
[ "$rc" -eq 0 ] || { tail -5 build.log; die "build failed (log: $SRC/build.log)"; }

# Option ROMs for -kernel (multiboot_dma.bin, linuxboot_dma.bin, kvmvapic.bin).
say "option ROMs"
make -C build/pc-bios/optionrom -s >optionrom.log 2>&1 ||
  { tail -20 optionrom.log; die "option ROMs failed (log: $SRC/optionrom.log)"; }

say "installing into $PREFIX"
$SUDO rm -rf "$PREFIX.tmp"
$SUDO mkdir -p "$PREFIX.tmp/bin" "$PREFIX.tmp/share/qemu"
$SUDO install -s -m 755 build/qemu-system-x86_64 "$PREFIX.tmp/bin/"
$SUDO install -m 644 build/pc-bios/optionrom/*.bin "$PREFIX.tmp/share/qemu/"
# Where Debian's seabios put the firmware: the engine passes it with -L.
echo "/usr/share/seabios" | $SUDO tee "$PREFIX.tmp/share/qemu/firmware-dir" >/dev/null
{ echo "$VER"; for p in "${PATCHES[@]}"; do basename "$p"; done; } |
  $SUDO tee "$PREFIX.tmp/debian-version" >/dev/null
$SUDO rm -rf "$PREFIX"; $SUDO mv "$PREFIX.tmp" "$PREFIX"
echo "$NAME" | $SUDO tee "$CACHE/current" >/dev/null
say "done: $("$PREFIX/bin/qemu-system-x86_64" --version | head -1) at $PREFIX/bin/qemu-system-x86_64"
