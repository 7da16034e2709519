#!/bin/sh
# lab-about: `rdma res` (iproute2's resource tracking) while an ibv_rc_pingpong server (PD, CQ, QP, MR), an ibv_srq_pingpong server (SRQ) and then a ucmatose server (a listening cm_id on 192.0.2.1) wait for a client: each object is listed with the server's process, both drivers; with -dd the Rust driver adds its own details to every QP, CQ, SRQ and MR (the device's handle, where the rings are, page counts), also for the kernel's own QP1 and CQ, the C driver none (checked absent, noted); once a server is gone, its objects are too
# lab-timeout: 300
. "$LAB_DIR/lib.sh"

name=rdma_res

# res KIND TAG: `rdma res show KIND -dd` of the lab's device into a file, whose path it prints.
res() {
	out=$LAB_RESULTS/$name-$1-$2.txt
	timeout 30 rdma -dd resource show "$1" >"$out" 2>&1 ||
		lab_fail "$name: rdma -dd resource show $1 failed: $(lab_tail "$out")"
	echo "$out"
}

# pid_of NAME: the process ID of the running program NAME (the servers run under timeout(1),
# whose child they are; the kernel keeps 15 characters of a name).
pid_of() {
	for p in /proc/[0-9]*; do
		[ "$(cat "$p/comm" 2>/dev/null)" = "$(printf %.15s "$1")" ] && echo "${p#/proc/}" && return 0
	done
}

# lines FILE PID: the entries of FILE that belong to process PID, one a line (iproute2 prints
# the driver's details, with -dd, on the entry's line, each name prefixed with `drv_`). By pid,
# not by name: iproute2 6.1 prints an SRQ's QP range where its `comm` belongs.
lines() {
	grep -E " pid $2 " "$1" || true
}

# has FILE WORDS WHAT: fails unless FILE holds the words WORDS (a regular expression).
has() {
	grep -qE "(^| )$2( |$)" "$1" || lab_fail "$name: $3: no '$2' in: $(lab_tail "$1")"
}

# Phase 1: an RC pingpong server holds a PD, a CQ, a QP and an MR until a client comes.
rc_log=$LAB_RESULTS/$name-rc-server.log
lab_server_start 120 "$rc_log" ibv_rc_pingpong -d "$LAB_DEV" -g "$LAB_GID_INDEX" -p 18710
lab_wait_listen tcp 18710 60 "ibv_rc_pingpong server" "$rc_log"
rc_pid=$(pid_of ibv_rc_pingpong)
[ -n "$rc_pid" ] || lab_fail "$name: ibv_rc_pingpong listens, but no process has that name"
for kind in pd cq qp mr; do
	f=$(res "$kind" rc)
	own=$LAB_RESULTS/$name-$kind-rc-own.txt
	lines "$f" "$rc_pid" >"$own"
	[ -s "$own" ] || lab_fail "$name: rdma res show $kind lists nothing of ibv_rc_pingpong (pid $rc_pid): $(lab_tail "$f")"
	if [ "$LAB_DRIVER" = rust ]; then
		[ "$kind" = pd ] && continue
		has "$own" "drv_dev_handle [0-9]+" "$kind of ibv_rc_pingpong"
	fi
done
qp=$LAB_RESULTS/$name-qp-rc.txt
cq=$LAB_RESULTS/$name-cq-rc.txt
mr=$LAB_RESULTS/$name-mr-rc.txt
if [ "$LAB_DRIVER" = rust ]; then
	has "$LAB_RESULTS/$name-qp-rc-own.txt" "drv_rings user" "the pingpong's QP"
	has "$LAB_RESULTS/$name-qp-rc-own.txt" "drv_send_cq_handle [0-9]+" "the pingpong's QP"
	has "$LAB_RESULTS/$name-cq-rc-own.txt" "drv_ring user" "the pingpong's CQ"
	has "$LAB_RESULTS/$name-mr-rc-own.txt" "drv_memory user" "the pingpong's MR"
	# The kernel's QP1 (the MAD agent's GSI QP) and its CQ live in the driver's memory.
	has "$qp" "drv_rings kernel" "the kernel's QP1"
	has "$cq" "drv_ring kernel" "the kernel's CQ"
	details="QP: $(grep -oE 'drv_dev_handle [0-9]+ .*' "$LAB_RESULTS/$name-qp-rc-own.txt" | head -n 1)"
else
	# The C driver has no fill_res_*_entry: -dd shows nothing of its own.
	for f in "$qp" "$cq" "$mr"; do
		if grep -q "drv_" "$f"; then
			lab_fail "$name: the C driver shows driver details now: check them too: $(lab_tail "$f")"
		fi
	done
	details="none from the C driver (it has no fill_res_*_entry)"
fi
lab_server_stop
gone=$(res qp rc-gone)
if grep -qE " pid $rc_pid " "$gone"; then
	lab_fail "$name: the server's QP is still listed after it exited: $(lab_tail "$gone")"
fi

# Phase 2: an SRQ pingpong server holds an SRQ.
srq_log=$LAB_RESULTS/$name-srq-server.log
lab_server_start 120 "$srq_log" ibv_srq_pingpong -d "$LAB_DEV" -g "$LAB_GID_INDEX" -p 18711 -q 4
lab_wait_listen tcp 18711 60 "ibv_srq_pingpong server" "$srq_log"
srq_pid=$(pid_of ibv_srq_pingpong)
[ -n "$srq_pid" ] || lab_fail "$name: ibv_srq_pingpong listens, but no process has that name"
f=$(res srq srq)
own=$LAB_RESULTS/$name-srq-own.txt
lines "$f" "$srq_pid" >"$own"
[ -s "$own" ] || lab_fail "$name: rdma res show srq lists nothing of ibv_srq_pingpong: $(lab_tail "$f")"
if [ "$LAB_DRIVER" = rust ]; then
	has "$own" "drv_dev_handle [0-9]+" "the SRQ of ibv_srq_pingpong"
	has "$own" "drv_ring_pages [0-9]+" "the SRQ of ibv_srq_pingpong"
elif grep -q "drv_" "$f"; then
	lab_fail "$name: the C driver shows SRQ details now: check them too: $(lab_tail "$f")"
fi
lab_server_stop

# Phase 3: an rdma_cm listener (ucmatose's server, bound to the lab's address) holds a cm_id.
cm_log=$LAB_RESULTS/$name-cm-server.log
lab_server_start 120 "$cm_log" ucmatose -b "$LAB_IP" -p 18712
lab_wait_listen cm 18712 60 "ucmatose server" "$cm_log"
cm_pid=$(pid_of ucmatose)
[ -n "$cm_pid" ] || lab_fail "$name: ucmatose listens, but no process has that name"
f=$(res cm_id cm)
own=$LAB_RESULTS/$name-cm_id-own.txt
lines "$f" "$cm_pid" >"$own"
[ -s "$own" ] || lab_fail "$name: rdma res show cm_id lists nothing of ucmatose (pid $cm_pid): $(lab_tail "$f")"
has "$own" "state LISTEN" "ucmatose's cm_id"
has "$own" "src-addr $LAB_IP:18712" "ucmatose's cm_id"
lab_server_stop
gone=$(res cm_id cm-gone)
if grep -qE " pid $cm_pid " "$gone"; then
	lab_fail "$name: ucmatose's cm_id is still listed after it exited: $(lab_tail "$gone")"
fi

lab_summary "$name: PD, CQ, QP, MR and SRQ of the servers and ucmatose's listening cm_id listed, gone after them; driver details: $details"
