#!/usr/bin/env bash
# A real one-node SLURM cluster on this Debian machine: for trying workflow/profiles/slurm without a
# cluster, and for the test suite (tests/test_workflow_slurm.py).
#
#   local-cluster.sh install [--accounting]        apt-get install slurmctld slurmd slurm-client munge
#                                                  (--accounting: also slurmdbd mariadb-server)
#   local-cluster.sh start DIR [--accounting] [--watch PID] [--max-seconds N]
#   local-cluster.sh stop DIR
#   local-cluster.sh status DIR
#
# `start` writes DIR/slurm.conf (the node line from `slurmd -C`), starts munged (as the munge user),
# slurmctld and slurmd in the foreground of background processes, records their PIDs in DIR/*.pid and
# waits until the node is idle. `. DIR/env` then points sbatch/squeue/sinfo/scancel/srun at this
# cluster (SLURM_CONF, and an srun wrapper on PATH for the job steps). Everything is private to DIR: its own munge key and socket, free TCP ports, state,
# spool and logs; nothing in /etc is read or changed, so it coexists with any other SLURM or munge.
# No systemd or cgroups: ProctrackType=proctrack/linuxproc, TaskPlugin=task/none,
# SelectType=select/cons_tres with CR_Core_Memory (cores and memory are what jobs are packed by).
# The job completion log DIR/jobcomp.log records every job that ran. Without --accounting there is no
# accounting database (sacct fails, as on many small clusters); with it, a private MariaDB and slurmdbd
# keep the accounts (account "chorustic" for root) and sacct works.
#
# `stop` cancels the cluster's jobs, then stops slurmd, slurmctld (slurmdbd, mariadbd) and munged by their PIDs (TERM, then
# KILL after 10 s). `--watch PID` stops the cluster as soon as process PID is gone, `--max-seconds N`
# after N seconds at the latest: the daemons never outlive the test that started them.
# Needs root (slurmd starts jobs as their owner). DIR must be reachable by the munge user (e.g. under
# /tmp with mode 755).
set -euo pipefail

SELF=$(readlink -f "$0")
die() { echo "local-cluster: $*" >&2; exit 1; }

cmd_install() {
    [ "$(id -u)" = 0 ] || die "install needs root (apt-get)"
    command -v apt-get >/dev/null || die "apt-get not found: install slurmctld slurmd slurm-client munge with your package manager"
    export DEBIAN_FRONTEND=noninteractive
    local pkgs="slurmctld slurmd slurm-client munge"
    [ "${1:-}" != "--accounting" ] || pkgs="$pkgs slurmdbd mariadb-server"
    apt-get install -y --no-install-recommends $pkgs || { apt-get update && apt-get install -y --no-install-recommends $pkgs; }
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

is_alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

cmd_start() {
    local dir="" watch="" max_seconds="" accounting=""
    while [ $# -gt 0 ]; do
        case "$1" in
            --accounting) accounting=1; shift ;;
            --watch) watch="$2"; shift 2 ;;
            --max-seconds) max_seconds="$2"; shift 2 ;;
            -*) die "unknown option $1" ;;
            *) dir="$1"; shift ;;
        esac
    done
    [ -n "$dir" ] || die "usage: local-cluster.sh start DIR [--accounting] [--watch PID] [--max-seconds N]"
    [ "$(id -u)" = 0 ] || die "start needs root (slurmd runs jobs as their owner)"
    for c in munged slurmctld slurmd sbatch srun sinfo setpriv python3; do
        command -v "$c" >/dev/null || die "$c not found: run 'local-cluster.sh install' first"
    done
    mkdir -p "$dir"
    dir=$(readlink -f "$dir")
    ! is_alive "$dir/slurmctld.pid" || die "a cluster is already running in $dir (local-cluster.sh stop $dir)"
    chmod 755 "$dir"
    setpriv --reuid munge --regid munge --clear-groups test -x "$dir" \
        || die "$dir is not reachable by the munge user: use a directory such as /tmp/slurm-test (mode 755 on every parent)"
    mkdir -p "$dir/munge" "$dir/state" "$dir/spool" "$dir/log"
    chown munge:munge "$dir/munge"
    chmod 755 "$dir/munge"  # clients (sbatch, srun: any user) reach the socket; only munge writes

    # munge: a fresh key and a private socket
    rm -f "$dir/munge/munge.key"
    mungekey --create --keyfile "$dir/munge/munge.key" >/dev/null 2>&1 \
        || dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
    chown munge:munge "$dir/munge/munge.key"
    chmod 400 "$dir/munge/munge.key"
    local sock="$dir/munge/munge.socket"
    setpriv --reuid munge --regid munge --clear-groups \
        munged --foreground --force --socket="$sock" --key-file="$dir/munge/munge.key" \
        --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" \
        --seed-file="$dir/munge/munged.seed" >"$dir/log/munged.out" 2>&1 &
    echo $! >"$dir/munged.pid"

    # slurm.conf: this machine's node line, private ports and paths
    local node cpus_line host ctld_port d_port
    node=$(slurmd -C | head -n 1)
    host=$(echo "$node" | sed -E 's/^NodeName=([^ ]+).*/\1/')
    local mem
    mem=$(echo "$node" | sed -E 's/.*RealMemory=([0-9]+).*/\1/')
    # a little below what slurmd reports: a node whose memory looks smaller than configured is drained
    node=$(echo "$node" | sed -E "s/RealMemory=[0-9]+/RealMemory=$((mem * 95 / 100))/")
    ctld_port=$(free_port)
    d_port=$(free_port)
    while [ "$d_port" = "$ctld_port" ]; do d_port=$(free_port); done
    local accounting_conf="AccountingStorageType=accounting_storage/none"
    if [ -n "$accounting" ]; then
        for c in mariadbd mariadb-install-db mariadb slurmdbd sacctmgr; do
            command -v "$c" >/dev/null || die "$c not found: run 'local-cluster.sh install --accounting' first"
        done
        local dbd_port db_port
        dbd_port=$(free_port)
        db_port=$(free_port)
        accounting_conf="AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$dbd_port
AccountingStoragePass=$dir/munge/munge.socket"
    fi
    cat >"$dir/slurm.conf" <<CONF
# Generated by workflow/profiles/slurm/local-cluster.sh: a one-node cluster on $host.
ClusterName=chorustic
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$d_port
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$sock
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/state/slurmctld.pidfile
SlurmdPidFile=$dir/spool/slurmd.pidfile
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
DefMemPerCPU=1000
ReturnToService=2
SlurmdParameters=config_overrides
SlurmctldTimeout=30
SlurmdTimeout=60
InactiveLimit=0
KillWait=5
Waittime=0
MinJobAge=300
$accounting_conf
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/jobcomp.log
$node NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
    # Inside a job, the executor plugin's job step starts the rule with `srun` after removing every
    # SLURM_* variable, SLURM_CONF too: a real cluster's srun finds /etc/slurm/slurm.conf, this private
    # cluster's srun gets its configuration from a wrapper that comes first on PATH.
    mkdir -p "$dir/bin"
    printf '#!/bin/sh\nSLURM_CONF=%s exec %s "$@"\n' "$dir/slurm.conf" "$(command -v srun)" >"$dir/bin/srun"
    chmod 755 "$dir/bin/srun"
    printf 'export SLURM_CONF=%s\nexport PATH=%s:$PATH\n' "$dir/slurm.conf" "$dir/bin" >"$dir/env"
    export SLURM_CONF="$dir/slurm.conf"

    local i
    for i in $(seq 50); do [ -S "$sock" ] && break; sleep 0.2; done
    [ -S "$sock" ] || { cat "$dir/log/munged.out" "$dir/munge/munged.log" 2>/dev/null >&2; cmd_stop "$dir"; die "munged did not start"; }

    if [ -n "$accounting" ]; then
        # a private MariaDB on a free port (as the mysql user), then slurmdbd next to slurm.conf
        mkdir -p "$dir/db"
        chown mysql:mysql "$dir/db"
        mariadb-install-db --user=mysql --datadir="$dir/db/data" --auth-root-authentication-method=socket \
            >"$dir/log/mariadb-install.out" 2>&1 || { cat "$dir/log/mariadb-install.out" >&2; cmd_stop "$dir"; die "mariadb-install-db failed"; }
        mariadbd --no-defaults --user=mysql --datadir="$dir/db/data" --socket="$dir/db/mysqld.sock" \
            --pid-file="$dir/db/mariadbd.pidfile" --port="$db_port" --bind-address=127.0.0.1 \
            --log-error="$dir/log/mariadbd.log" >"$dir/log/mariadbd.out" 2>&1 &
        echo $! >"$dir/mariadbd.pid"
        for i in $(seq 100); do mariadb --no-defaults --socket="$dir/db/mysqld.sock" -e "SELECT 1" >/dev/null 2>&1 && break; sleep 0.2; done
        mariadb --no-defaults --socket="$dir/db/mysqld.sock" -e "CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'slurm'; GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';" \
            || { tail -n 20 "$dir/log/mariadbd.log" >&2; cmd_stop "$dir"; die "MariaDB did not start"; }
        cat >"$dir/slurmdbd.conf" <<DBD
AuthType=auth/munge
AuthInfo=socket=$sock
DbdHost=$host
DbdAddr=127.0.0.1
DbdPort=$dbd_port
SlurmUser=root
LogFile=$dir/log/slurmdbd.log
PidFile=$dir/state/slurmdbd.pidfile
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$db_port
StorageUser=slurm
StoragePass=slurm
StorageLoc=slurm_acct_db
DBD
        chmod 600 "$dir/slurmdbd.conf"
        slurmdbd -D >"$dir/log/slurmdbd.out" 2>&1 &
        echo $! >"$dir/slurmdbd.pid"
        for i in $(seq 100); do sacctmgr -n list cluster >/dev/null 2>&1 && break; sleep 0.2; done
        sacctmgr -i add cluster chorustic >/dev/null 2>&1 || true
        sacctmgr -i add account chorustic description=chorustic organization=chorustic >/dev/null 2>&1 || true
        sacctmgr -i add user root account=chorustic defaultaccount=chorustic >/dev/null 2>&1 || true
    fi
    slurmctld -D -c -f "$dir/slurm.conf" >"$dir/log/slurmctld.out" 2>&1 &
    echo $! >"$dir/slurmctld.pid"
    slurmd -D -f "$dir/slurm.conf" -N "$host" >"$dir/log/slurmd.out" 2>&1 &
    echo $! >"$dir/slurmd.pid"

    if [ -n "$watch" ] || [ -n "$max_seconds" ]; then
        setsid bash -c '
            watch=$1; max=$2; dir=$3; self=$4; start=$(date +%s)
            while true; do
                if [ -n "$watch" ] && ! kill -0 "$watch" 2>/dev/null; then break; fi
                if [ -n "$max" ] && [ $(( $(date +%s) - start )) -ge "$max" ]; then break; fi
                is_up=0; for p in "$dir"/slurmctld.pid; do [ -f "$p" ] && kill -0 "$(cat "$p")" 2>/dev/null && is_up=1; done
                [ "$is_up" = 1 ] || exit 0
                sleep 1
            done
            echo "watchdog: stopping the cluster in $dir" >&2
            LOCAL_CLUSTER_FROM_WATCHDOG=1 "$self" stop "$dir"
        ' watchdog "$watch" "$max_seconds" "$dir" "$SELF" </dev/null >"$dir/log/watchdog.out" 2>&1 &
        echo $! >"$dir/watchdog.pid"
    fi

    for i in $(seq 100); do
        if [ "$(sinfo -h -o %T 2>/dev/null | head -n 1)" = "idle" ]; then
            echo "local-cluster: up in $dir ($host, partition debug${accounting:+, accounting: account chorustic}; . $dir/env)"
            return 0
        fi
        is_alive "$dir/slurmctld.pid" && is_alive "$dir/slurmd.pid" || break
        sleep 0.3
    done
    tail -n 20 "$dir/log/slurmctld.log" "$dir/log/slurmd.log" "$dir/log/slurmctld.out" "$dir/log/slurmd.out" >&2 2>/dev/null || true
    sinfo -N -l >&2 2>/dev/null || true
    cmd_stop "$dir"
    die "the node did not become idle"
}

stop_pid() {  # stop_pid PIDFILE: TERM, up to 10 s, then KILL
    local f=$1 pid i
    [ -f "$f" ] || return 0
    pid=$(cat "$f")
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for i in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
        kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$f"
}

cmd_stop() {
    local dir=${1:?usage: local-cluster.sh stop DIR}
    dir=$(readlink -f "$dir")
    if is_alive "$dir/slurmctld.pid"; then
        # the jobs first: with proctrack/linuxproc they would outlive slurmd
        SLURM_CONF="$dir/slurm.conf" timeout 10 scancel --quiet --full --user="$(id -un)" 2>/dev/null || true
        local i
        for i in $(seq 25); do
            [ -z "$(SLURM_CONF="$dir/slurm.conf" timeout 5 squeue -h -o %i 2>/dev/null)" ] && break
            sleep 0.2
        done
    fi
    stop_pid "$dir/slurmd.pid"
    stop_pid "$dir/slurmctld.pid"
    stop_pid "$dir/slurmdbd.pid"
    stop_pid "$dir/mariadbd.pid"
    stop_pid "$dir/munged.pid"
    [ -n "${LOCAL_CLUSTER_FROM_WATCHDOG:-}" ] || stop_pid "$dir/watchdog.pid"
    echo "local-cluster: stopped ($dir)"
}

cmd_status() {
    local dir=${1:?usage: local-cluster.sh status DIR} f rc=0
    for f in munged mariadbd slurmdbd slurmctld slurmd watchdog; do
        [ -f "$dir/$f.pid" ] || [ "$f" = munged ] || [ "$f" = slurmctld ] || [ "$f" = slurmd ] || continue
        if is_alive "$dir/$f.pid"; then echo "$f: running (pid $(cat "$dir/$f.pid"))"; else echo "$f: not running"; [ "$f" = watchdog ] || rc=1; fi
    done
    return $rc
}

case "${1:-}" in
    install) shift; cmd_install "$@" ;;
    start) shift; cmd_start "$@" ;;
    stop) shift; cmd_stop "$@" ;;
    status) shift; cmd_status "$@" ;;
    *) die "usage: local-cluster.sh install [--accounting] | start DIR [--accounting] [--watch PID] [--max-seconds N] | stop DIR | status DIR" ;;
esac
