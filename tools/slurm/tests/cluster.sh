# A one-node Slurm of its own for the slurm suite (sourced): munged with a
# generated key, slurmctld and slurmd from Debian's packages with a generated
# slurm.conf, every file under $work/slurm, ports that nothing listens on.
#   cluster_up PLUGSTACK_CONF   start it (0 when sinfo says the node is idle)
#   cluster_down                stop what cluster_up started (idempotent)
# Clients find it through SLURM_CONF (exported).

cluster_free_port() {
	local p
	for _ in $(seq 50); do
		p=$((20000 + RANDOM % 20000))
		ss -Htln "sport = :$p" 2>/dev/null | grep -q . || { echo $p; return 0; }
	done
	return 1
}

cluster_up() {
	local plugstack=$1 s=$work/slurm node ncpu p1 p2
	node=$(hostname -s)
	ncpu=$(nproc)
	mkdir -p "$s/munge" "$s/state" "$s/spool" "$s/log"
	chmod 755 "$s/munge" # jobs of other users than root reach the socket
	# munged checks that its key and socket are private: root's, mode 0600/0700.
	dd if=/dev/urandom of="$s/munge/munge.key" bs=1024 count=1 status=none
	chmod 400 "$s/munge/munge.key"
	munged -f --key-file="$s/munge/munge.key" --socket="$s/munge/munge.sock" \
		--pid-file="$s/munge/munged.pid" --log-file="$s/log/munged.log" \
		--seed-file="$s/munge/munged.seed" || return 1
	cluster_munged=$(cat "$s/munge/munged.pid" 2>/dev/null)
	p1=$(cluster_free_port) && p2=$(cluster_free_port) || return 1
	cat >"$s/slurm.conf" <<-EOF
		ClusterName=hpcschedtest
		SlurmctldHost=$node
		SlurmctldPort=$p1
		SlurmdPort=$p2
		SlurmUser=root
		SlurmdUser=root
		AuthType=auth/munge
		CredType=cred/munge
		AuthInfo=socket=$s/munge/munge.sock
		StateSaveLocation=$s/state
		SlurmdSpoolDir=$s/spool
		SlurmctldPidFile=$s/slurmctld.pid
		SlurmdPidFile=$s/slurmd.pid
		SlurmctldLogFile=$s/log/slurmctld.log
		SlurmdLogFile=$s/log/slurmd.log
		SlurmdDebug=debug
		ProctrackType=proctrack/linuxproc
		TaskPlugin=task/none
		SelectType=select/cons_tres
		SelectTypeParameters=CR_Core
		SchedulerType=sched/builtin
		MpiDefault=none
		JobCompType=jobcomp/none
		AccountingStorageType=accounting_storage/none
		JobAcctGatherType=jobacct_gather/none
		ReturnToService=2
		KillWait=5
		PlugStackConfig=$plugstack
		NodeName=$node CPUs=$ncpu State=UNKNOWN
		PartitionName=test Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
	EOF
	export SLURM_CONF=$s/slurm.conf
	slurmctld -i -f "$SLURM_CONF" || return 1
	slurmd -f "$SLURM_CONF" || return 1
	wait_for 30 'sinfo -h -o %T 2>/dev/null | grep -qE "^idle"' || return 1
	cluster_ctld=$(cat "$s/slurmctld.pid" 2>/dev/null)
	cluster_slurmd=$(cat "$s/slurmd.pid" 2>/dev/null)
	return 0
}

cluster_stop_pid() {
	local p=$1
	[ -n "$p" ] && kill -0 "$p" 2>/dev/null || return 0
	kill -TERM "$p" 2>/dev/null
	for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || return 0; sleep 0.1; done
	kill -KILL "$p" 2>/dev/null
}

cluster_down() {
	local s=$work/slurm
	[ -d "$s" ] || return 0
	scancel -f --full --cluster=hpcschedtest -u root >/dev/null 2>&1 || true
	cluster_stop_pid "$(cat "$s/slurmd.pid" 2>/dev/null || echo "${cluster_slurmd:-}")"
	cluster_stop_pid "$(cat "$s/slurmctld.pid" 2>/dev/null || echo "${cluster_ctld:-}")"
	# Any slurmstepd of this cluster (its spool directory in its command line).
	pgrep -f "slurmstepd.*" >/dev/null 2>&1 &&
		for p in $(pgrep -x slurmstepd); do
			grep -qs "$s" "/proc/$p/environ" "/proc/$p/cmdline" && kill -KILL "$p" 2>/dev/null
		done
	cluster_stop_pid "$(cat "$s/munge/munged.pid" 2>/dev/null || echo "${cluster_munged:-}")"
}
