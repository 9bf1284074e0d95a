#!/usr/bin/env bash
# Build gem5 (the engine the user named) from the user's own gem5 source, the
# way scripts/build-qemu.sh builds QEMU: pinned release, our patches on top,
# installed into a cache outside the checkout.  No gem5 code enters the
# repository; this script, its Kconfig and scripts/gem5-patches/ are ours.
#
# What is built: gem5 v24.0.0.1, X86 only, classic caches (no Ruby), no
# SystemC, no KVM, the optimised binary gem5.fast (or gem5.opt, which keeps
# gem5's debug flags and tracing: COLORSIM_GEM5_VARIANT=opt).  About 45 minutes on an
# idle 2-core machine (twice that when the cores are shared), so no test and
# no set-up runs it; `scons gem5` and this script do.
#
# Environment:
#   GEM5_SRC              the user's gem5 source: a git repository (bare or
#                         not) that has the tag, or an unpacked release tree
#   COLORSIM_GEM5_TAG     the release (default v24.0.0.1; another is refused
#                         unless COLORSIM_GEM5_ANY_VERSION=1)
#   COLORSIM_GEM5_CACHE   cache root (default /var/cache/colorsim); the build
#                         goes to $COLORSIM_GEM5_CACHE/gem5-<ver>-<src>-p<patches>/
#   COLORSIM_JOBS         parallel build jobs (default 2)
#   COLORSIM_GEM5_VARIANT fast (default: what runs use) or opt (gem5's debug
#                         flags, --debug-flags=Exec,Faults,...; about as long
#                         again to build, slower to run; never made current)
#
# Idempotent: a cached binary that runs is reported and nothing is built.  An
# interrupted build resumes (SCons is incremental).  Builds into one cache
# take turns (a lock in it).  The last good build is named in
# $COLORSIM_GEM5_CACHE/current-gem5, which colorsim reads when GEM5 is unset.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"

TAG="${COLORSIM_GEM5_TAG:-v24.0.0.1}"
CACHE="${COLORSIM_GEM5_CACHE:-/var/cache/colorsim}"
JOBS="${COLORSIM_JOBS:-2}"
SRC="${GEM5_SRC:-}"
VARIANT="${COLORSIM_GEM5_VARIANT:-fast}"

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
t0=$(date +%s)
say() { echo "build-gem5: [$(( $(date +%s) - t0 ))s] $*"; }
die() { echo "build-gem5: $*" >&2; exit 2; }

# Refusals first, before anything is installed or written.
[ -n "$SRC" ] || die "GEM5_SRC is not set: point it at your gem5 source (a git repository with tag $TAG, or an unpacked gem5 ${TAG#v} release)"
[ -d "$SRC" ] || die "GEM5_SRC=$SRC is not a directory"
[ "$TAG" = v24.0.0.1 ] || [ "${COLORSIM_GEM5_ANY_VERSION:-}" = 1 ] ||
  die "COLORSIM_GEM5_TAG=$TAG: the suite's patches and recorded runs are for v24.0.0.1 (COLORSIM_GEM5_ANY_VERSION=1 to try anyway)"
[[ "$JOBS" =~ ^[1-9][0-9]*$ ]] || die "COLORSIM_JOBS=$JOBS is not a positive number"
[ "$VARIANT" = fast ] || [ "$VARIANT" = opt ] ||
  die "COLORSIM_GEM5_VARIANT=$VARIANT: the variants built here are fast and opt"

# What kind of source: a git repository whose tag we check out, or a tree.
GIT=""
if git -C "$SRC" rev-parse --git-dir >/dev/null 2>&1; then
  GIT="$(cd "$SRC" && cd "$(git rev-parse --git-dir)" && pwd)"
  commit="$(git --git-dir="$GIT" rev-parse -q --verify "$TAG^{commit}" 2>/dev/null)" ||
    die "GEM5_SRC=$SRC has no tag $TAG (git --git-dir=$GIT tag -l 'v24*' lists what it has)"
  srckey="g${commit:0:10}"
else
  [ -f "$SRC/SConstruct" ] && [ -d "$SRC/src/python/gem5" ] ||
    die "GEM5_SRC=$SRC is neither a git repository nor a gem5 source tree (no SConstruct and src/python/gem5)"
  ver="$(sed -n 's/.*gem5Version = "\(.*\)".*/\1/p' "$SRC/src/base/version.cc" 2>/dev/null)"
  [ "v$ver" = "$TAG" ] || [ "${COLORSIM_GEM5_ANY_VERSION:-}" = 1 ] ||
    die "GEM5_SRC=$SRC is gem5 '${ver:-unknown}', not ${TAG#v}"
  # A tree has no commit: its files' names and sizes name it (cheap, and a
  # different release or an edited file gives another key).
  srckey="t$(cd "$SRC" && find . -path ./build -prune -o -type f -printf '%P %s\n' | LC_ALL=C sort | sha256sum | cut -c1-10)"
fi

# Our patches (scripts/gem5-patches/*.patch, README there); their hash names
# the build, so a change of patches is a different engine.
PATCHES=(scripts/gem5-patches/*.patch)
PHASH="$(cat "${PATCHES[@]}" scripts/gem5-kconfig | sha256sum | cut -c1-8)"
NAME="gem5-${TAG#v}-$srckey-p$PHASH"
DEST="$CACHE/$NAME"
BIN="$DEST/gem5.$VARIANT"
# One source tree per source, shared by every patch set: SCons keeps its
# objects by absolute path, so a change of patches rebuilds only what the
# patches touch (minutes) when the tree stays where it was built.  A build
# made before trees were shared kept its tree in its own folder; it is
# adopted as the tree, for the same reason.
TREE="$CACHE/gem5-${TAG#v}-$srckey/src"
if [ ! -d "$TREE" ]; then
  for old in "$CACHE/gem5-${TAG#v}-$srckey-p"*/src; do
    [ -f "$old/../patched" ] && [ -f "$old/SConstruct" ] || continue
    TREE="$old"
    # its binary stays that build's, whatever the tree builds next
    ob="$old/build/X86C/gem5.fast"
    if [ -f "$old/../built" ] && [ -x "$ob" ] && [ ! -e "$old/../gem5.fast" ]; then
      cp "$ob" "$old/../gem5.fast"
    fi
    break
  done
fi
TREEBIN="$TREE/build/X86C/gem5.$VARIANT"
# each variant's marker, log and object suffix (SCons: .fo fast, .o opt)
MARK="$DEST/built"; LOG="$DEST/build.log"; OBJ=fo
[ "$VARIANT" = opt ] && { MARK="$DEST/built.opt"; LOG="$DEST/build-opt.log"; OBJ=o; }
APPLIED="$TREE/.colorsim-patches"     # copies of the patches in the tree now

$SUDO mkdir -p "$CACHE"
LOCK="$CACHE/.build-gem5.lock"
if [ ! -w "$LOCK" ]; then
  $SUDO touch "$LOCK"
  $SUDO chmod a+rw "$LOCK"
fi
exec 9>>"$LOCK"
if ! flock -n 9; then
  echo "build-gem5: waiting for another gem5 build in this cache ($LOCK)"
  flock 9
fi

# A binary works when it runs a stdlib script: requires() is what our patch
# mends (gem5's own --build-info fails in v24.0.0.1: m5.defines lacks
# gem5Version), so this also shows the patch is in.
works() {
  local bin="$1"
  mkdir -p "$DEST/check"
  printf '%s\n' "from gem5.isas import ISA" "from gem5.utils.requires import requires" \
    "requires(isa_required=ISA.X86)" "print('colorsim-gem5-ok')" > "$DEST/check/check.py"
  "$bin" --quiet --outdir "$DEST/check" "$DEST/check/check.py" 2>/dev/null </dev/null |
    grep -q colorsim-gem5-ok
}

if [ -x "$BIN" ] && [ -f "$MARK" ] && works "$BIN"; then
  [ "$VARIANT" = fast ] && echo "$NAME" | $SUDO tee "$CACHE/current-gem5" >/dev/null
  echo "build-gem5: cached: gem5 ${TAG#v} ($srckey) + patches $PHASH, at $BIN"
  exit 0
fi

# Debian packages the build needs (facts: scons and m4 beyond the image).
deps=(scons m4 g++ python3-dev zlib1g-dev libpng-dev git)
missing=()
for p in "${deps[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing from Debian: ${missing[*]}"
  $SUDO apt-get update -qq || echo "build-gem5: apt-get update reported errors (above);" \
    "going on with the package indexes it has"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi

$SUDO mkdir -p "$DEST" "$(dirname "$TREE")"
$SUDO chown "$(id -u):$(id -g)" "$DEST" "$(dirname "$TREE")"
if [ ! -f "$TREE/SConstruct" ]; then
  rm -rf "$TREE"
  if [ -n "$GIT" ]; then
    # A plain checkout of the tag fails on tests/test-progs (binary test
    # programs whose objects a snapshot may lack); the build needs nothing
    # there, so a sparse checkout leaves it out.
    say "checking out $TAG ($commit) from $GIT"
    git clone -q --no-checkout "$GIT" "$TREE"
    git -C "$TREE" config core.sparseCheckout true     # before any checkout
    git -C "$TREE" config core.sparseCheckoutCone false
    printf '/*\n!/tests/test-progs/\n' > "$TREE/.git/info/sparse-checkout"
    # (git still names the missing test-progs objects it skips: not errors)
    git -C "$TREE" -c advice.detachedHead=false checkout -q "$commit" 2>&1 |
      { grep -v "invalid object .* for 'tests/test-progs/" || true; } >&2
  else
    say "copying the tree $SRC"
    mkdir -p "$TREE"
    (cd "$SRC" && tar --exclude=./build -cf - .) | (cd "$TREE" && tar -xf -)
  fi
  mkdir -p "$APPLIED"
fi

# Bring the tree to exactly our patches.  Another set is taken out first: a
# git tree is reset to the tag (its build/ and our record kept), a plain
# tree has the recorded patches reversed.  Content that comes back unchanged
# is not rebuilt (SCons compares contents once a file's time changed).
applied_same() {
  [ -d "$APPLIED" ] || return 1
  local want have
  want="$(cd "$ROOT/scripts/gem5-patches" && cat ${PATCHES[@]##*/} | sha256sum)"
  have="$(cd "$APPLIED" && ls *.patch >/dev/null 2>&1 && cat *.patch | sha256sum)"
  [ "$want" = "$have" ]
}
if ! applied_same; then
  if [ -d "$TREE/.git" ]; then
    say "resetting the tree to $TAG"
    git -C "$TREE" checkout -q -f -- . 2>/dev/null
    git -C "$TREE" clean -fdq -e build -e .colorsim-patches
  elif [ -d "$APPLIED" ]; then
    for p in $(ls -r "$APPLIED"/*.patch 2>/dev/null); do
      say "taking out $(basename "$p")"
      patch -s -R -p1 -d "$TREE" < "$p" || die "$p does not come out of $TREE: remove $(dirname "$TREE") and run again"
    done
  else
    die "$TREE has patches nobody recorded: remove $(dirname "$TREE") and run again"
  fi
  rm -rf "$APPLIED"
  mkdir -p "$APPLIED"
  for p in "${PATCHES[@]}"; do
    say "applying $(basename "$p")"
    patch -s -p1 -d "$TREE" < "$ROOT/$p" || die "$p does not apply to $SRC at $TAG"
    cp "$ROOT/$p" "$APPLIED/"
  done
fi

# SCons must run under Debian's python3: another python first on PATH makes
# the Python-header check pick the wrong interpreter (facts sheet).
export PATH="/usr/bin:$PATH"
cd "$TREE"
if { [ ! -f build/X86C/gem5.build/config ] && [ ! -f build/X86C/config ]; } ||
   ! cmp -s "$ROOT/scripts/gem5-kconfig" "$APPLIED/kconfig"; then
  say "configuring build/X86C from scripts/gem5-kconfig"
  scons -Q defconfig build/X86C "$ROOT/scripts/gem5-kconfig" > "$DEST/configure.log" 2>&1 ||
    { tail -20 "$DEST/configure.log" >&2; die "configuring failed (log: $DEST/configure.log)"; }
  cp "$ROOT/scripts/gem5-kconfig" "$APPLIED/kconfig"
fi

# The build: SCons prints one line per step; we keep them in a log and say,
# once a minute, how many objects exist (about 2900 when done).
say "building gem5.$VARIANT with $JOBS jobs (about 45 minutes on 2 idle cores; log: $LOG)"
# (fd 9 closed: the lock is ours, not the ticker's; a ticker left behind
# by a killed build would otherwise hold it and stall the next build)
( while sleep 60; do
    n=$(find build/X86C -name "*.$OBJ" 2>/dev/null | wc -l)
    say "still building: $n objects so far"
  done ) 9>&- &
ticker=$!
disown "$ticker" 2>/dev/null || true   # no "Terminated" notice when it stops
# (each step may find its process gone already: the ticker's loop ends by
# itself once its sleep is killed; under set -e a failed kill would end us)
stop_ticker() { pkill -P "$ticker" 2>/dev/null || true; kill "$ticker" 2>/dev/null || true; }
trap stop_ticker EXIT
if ! scons "build/X86C/gem5.$VARIANT" -j"$JOBS" --ignore-style > "$LOG" 2>&1; then
  tail -30 "$LOG" >&2
  die "the build failed (log: $LOG); run again to resume"
fi
stop_ticker
works "$TREEBIN" || die "the built $TREEBIN does not run a stdlib script (try: $TREEBIN $DEST/check/check.py)"
# The binary is self-contained (gem5's Python is compiled in): a copy of it
# is this patch set's build, whatever the tree holds later.
cp "$TREEBIN" "$BIN.tmp" && mv "$BIN.tmp" "$BIN"
echo "$TAG $srckey patches $PHASH built $(date -u +%FT%TZ)" > "$MARK"
if [ "$VARIANT" = fast ]; then
  echo "$NAME" | $SUDO tee "$CACHE/current-gem5" >/dev/null
  say "done: $BIN (GEM5 defaults to it)"
else
  say "done: $BIN (it takes gem5's own --debug-flags=..., --debug-start=TICK before the script)"
fi
