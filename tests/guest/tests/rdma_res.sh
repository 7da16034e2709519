#!/bin/sh
# lab-about: `rdma res` (iproute2's resource tracking) while an ibv_rc_pingpong server (PD, CQ, QP, MR), an ibv_srq_pingpong server (SRQ) and then a ucmatose server (a listening cm_id on 192.0.2.1) wait for a client: each object is listed with the server's process, both drivers; with -dd the Rust driver adds its own details to every QP, CQ, SRQ and MR (the device's handle, where the rings are, page counts), also for the kernel's own QP1 and CQ, the C driver none (checked absent, noted); once a server is gone, its objects are too
# lab-timeout: 300
. "$LAB_DIR/lib.sh"

name=rdma_res

# res KIND TAG: `rdma res show KIND -dd` of the lab's device into the file $f. (Not a command
# substitution: lab_fail would end only its subshell.)
res() {
	f=$LAB_RESULTS/$name-$1-$2.txt
	timeout 30 rdma -dd resource show "$1" >"$f" 2>&1 ||
		lab_fail "$name: rdma -dd resource show $1 failed: $(lab_tail "$f")"
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

# server LISTEN PORT LOG CMD...: starts the server CMD (a program that holds its objects until a
# client comes), waits until it listens on PORT (LISTEN: tcp or cm), and sets server_pid.
server() {
	listen=$1
	port=$2
	log=$3
	shift 3
	lab_server_start 120 "$log" "$@"
	lab_wait_listen "$listen" "$port" 60 "$1 server" "$log"
	server_pid=$(pid_of "$1")
	[ -n "$server_pid" ] || lab_fail "$name: $1 listens, but no process has that name"
}

# own KIND TAG PID WHAT: lists KIND (res) and keeps the entries of process PID (WHAT) in the
# file $own; fails if there are none.
own() {
	res "$1" "$2"
	own=$LAB_RESULTS/$name-$1-$2-own.txt
	lines "$f" "$3" >"$own"
	[ -s "$own" ] || lab_fail "$name: rdma res show $1 lists nothing of $4 (pid $3): $(lab_tail "$f")"
}

# Phase 1: an RC pingpong server holds a PD, a CQ, a QP and an MR until a client comes.
server tcp 18710 "$LAB_RESULTS/$name-rc-server.log" ibv_rc_pingpong -d "$LAB_DEV" -g "$LAB_GID_INDEX" -p 18710
rc_pid=$server_pid
for kind in pd cq qp mr; do
	own "$kind" rc "$rc_pid" ibv_rc_pingpong
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
res qp rc-gone
if grep -qE " pid $rc_pid " "$f"; then
	lab_fail "$name: the server's QP is still listed after it exited: $(lab_tail "$f")"
fi

# Phase 2: an SRQ pingpong server holds an SRQ.
server tcp 18711 "$LAB_RESULTS/$name-srq-server.log" ibv_srq_pingpong -d "$LAB_DEV" -g "$LAB_GID_INDEX" -p 18711 -q 4
own srq srq "$server_pid" ibv_srq_pingpong
if [ "$LAB_DRIVER" = rust ]; then
	has "$own" "drv_dev_handle [0-9]+" "the SRQ of ibv_srq_pingpong"
	has "$own" "drv_ring_pages [0-9]+" "the SRQ of ibv_srq_pingpong"
elif grep -q "drv_" "$f"; then
	lab_fail "$name: the C driver shows SRQ details now: check them too: $(lab_tail "$f")"
fi
lab_server_stop

# Phase 3: an rdma_cm listener (ucmatose's server, bound to the lab's address) holds a cm_id.
server cm 18712 "$LAB_RESULTS/$name-cm-server.log" ucmatose -b "$LAB_IP" -p 18712
cm_pid=$server_pid
own cm_id cm "$cm_pid" ucmatose
has "$own" "state LISTEN" "ucmatose's cm_id"
has "$own" "src-addr $LAB_IP:18712" "ucmatose's cm_id"
lab_server_stop
res cm_id cm-gone
if grep -qE " pid $cm_pid " "$f"; then
	lab_fail "$name: ucmatose's cm_id is still listed after it exited: $(lab_tail "$f")"
fi

lab_summary "$name: PD, CQ, QP, MR and SRQ of the servers and ucmatose's listening cm_id listed, gone after them; driver details: $details"
