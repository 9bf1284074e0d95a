#!/usr/bin/env bash
# A private single-node Slurm cluster on this machine, for trying
# `colorsim sweep --executor slurm` (and its tests) without a real cluster.
#
#   scripts/slurm-local.sh start  [DIR]   start munged (if none answers), slurmctld, slurmd
#   scripts/slurm-local.sh status [DIR]   which of them run, and the node's state
#   scripts/slurm-local.sh stop   [DIR]   cancel its jobs, stop what `start` started
#
# DIR (default $COLORSIM_SLURM_DIR, else /tmp/colorsim-slurm) holds the
# configuration (DIR/slurm.conf), the daemons' state, logs and PID files.
# Point Slurm's commands at it with `export SLURM_CONF=DIR/slurm.conf`
# (`start` prints that line).  Needs root (slurmd runs jobs as their user)
# and Debian's slurmctld, slurmd, slurm-client and munge (scripts/setup.sh).
# Everything listens on the loopback address only; no accounting daemon.
# `stop` stops only the daemons whose PIDs `start` recorded in DIR, never
# others of the same name.
set -euo pipefail

cmd=${1:-}
dir=${2:-${COLORSIM_SLURM_DIR:-/tmp/colorsim-slurm}}
conf="$dir/slurm.conf"

die() { echo "slurm-local: $*" >&2; exit 2; }

# The PID recorded in DIR/NAME.pid if that process still runs the program
# NAME (a PID file left by a dead daemon may name an unrelated process now).
live_pid() {
  local f="$dir/$1.pid" pid
  [ -r "$f" ] || return 1
  pid=$(tr -dc 0-9 <"$f")
  [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$1" ] || return 1
  echo "$pid"
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

munge_answers() { munge -n 2>/dev/null | unmunge >/dev/null 2>&1; }

write_conf() {
  local host cpus mem_mb
  host=$(hostname -s)
  cpus=$(nproc)
  mem_mb=$(( $(awk '/^MemTotal/ {print $2}' /proc/meminfo) / 1024 - 1024 ))
  mkdir -p "$dir/state" "$dir/spool"
  cat >"$conf" <<EOF
# Written by scripts/slurm-local.sh: one node, this machine, loopback only.
ClusterName=colorsimlocal
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
AuthType=auth/munge
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
MinJobAge=600
KillWait=10
MaxArraySize=100001
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=local Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
}

start() {
  [ "$(id -u)" -eq 0 ] || die "needs root (slurmd starts jobs as their user)"
  for tool in munged slurmctld slurmd sinfo; do
    command -v "$tool" >/dev/null || die "$tool missing: scripts/setup.sh installs Slurm and munge"
  done
  if live_pid slurmctld >/dev/null || live_pid slurmd >/dev/null; then
    echo "slurm-local: already running in $dir"
    echo "export SLURM_CONF=$conf"
    return 0
  fi
  mkdir -p "$dir"
  write_conf
  if ! munge_answers; then
    # Debian's munged, as the munge user, on its usual socket; its PID goes
    # into DIR so that `stop` stops this one and no other.
    install -d -o munge -g munge -m 0755 /run/munge
    su -s /bin/sh munge -c munged
    for _ in $(seq 50); do munge_answers && break; sleep 0.1; done
    munge_answers || die "munged started but does not answer"
    cp /run/munge/munged.pid "$dir/munged.pid"
  fi
  export SLURM_CONF="$conf"
  slurmctld -c -f "$conf"        # -c: a clean start, no jobs of an older one
  slurmd -f "$conf"
  local state=""
  for _ in $(seq 60); do
    state=$(sinfo -h -o %T 2>/dev/null || true)
    [ "$state" = idle ] && break
    sleep 0.5
  done
  if [ "$state" != idle ]; then
    tail -n 20 "$dir/slurmctld.log" "$dir/slurmd.log" >&2 || true
    die "the node never became idle (state: ${state:-none}); logs in $dir"
  fi
  echo "slurm-local: running in $dir"
  echo "export SLURM_CONF=$conf"
}

status() {
  local rc=0 name pid
  for name in munged slurmctld slurmd; do
    if pid=$(live_pid "$name"); then
      echo "$name: running, pid $pid"
    elif [ "$name" = munged ]; then
      munge_answers && echo "munged: not started here; another one answers" ||
        { echo "munged: not running"; rc=1; }
    else
      echo "$name: not running"; rc=1
    fi
  done
  [ -r "$conf" ] && [ $rc -eq 0 ] &&
    echo "node: $(SLURM_CONF=$conf sinfo -h -o %T 2>/dev/null || echo unknown)"
  return $rc
}

# SIGTERM the recorded daemon, then SIGKILL if it lingers past 10 s.
stop_one() {
  local pid
  pid=$(live_pid "$1") || { rm -f "$dir/$1.pid"; return 0; }
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 100); do
    [ -d "/proc/$pid" ] || break
    sleep 0.1
  done
  [ -d "/proc/$pid" ] && kill -KILL "$pid" 2>/dev/null || true
  rm -f "$dir/$1.pid"
  echo "slurm-local: stopped $1 (pid $pid)"
}

stop() {
  if live_pid slurmctld >/dev/null; then   # every job of this cluster is ours
    SLURM_CONF=$conf scancel --partition=local >/dev/null 2>&1 || true
  fi
  stop_one slurmd
  stop_one slurmctld
  stop_one munged
}

case "$cmd" in
  start) start ;;
  status) status ;;
  stop) stop ;;
  *) echo "usage: scripts/slurm-local.sh start|status|stop [DIR]" >&2; exit 2 ;;
esac
