#!/bin/sh
# lab-about: two guests, one fabric: the server guest (192.0.2.1) and the client guest (192.0.2.2), each with its own QEMU, pvrdma and driver, joined by the mux: rping -V (RDMA READ/WRITE, 10 pings of 65000 bytes), ibv_rc_pingpong --chk (4096 and 65536 bytes, and with -e), ibv_ud_pingpong, data verified on both sides
# lab-timeout: 400
# lab-guests: 2
. "$LAB_DIR/lib.sh"

[ -n "$LAB_ROLE" ] || lab_fail "a two-guest test run on one guest (no lab.role)"
limit=${LAB_CM_TIMEOUT:-120}
ready=9100

# step TAG LISTEN PORT SERVER-COMMAND -- CLIENT-COMMAND: this guest's half of one step.
step() {
	tag=$1
	kind=$2
	port=$3
	shift 3
	server=
	while [ "$1" != -- ]; do
		server="$server $1"
		shift
	done
	shift
	log=$LAB_RESULTS/$tag-$LAB_ROLE.log
	if [ "$LAB_ROLE" = server ]; then
		# shellcheck disable=SC2086 # the server's command, split into words on purpose
		lab_serve_step "$tag" "$limit" "$log" "$kind" "$port" "$ready" $server
	else
		lab_client_step "$tag" "$limit" "$log" "$ready" "$@"
	fi
	ready=$((ready + 1))
}

# rping: the server RDMA-READs the client's buffer and RDMA-WRITEs it back; the client checks it (-V).
step rping cm 7480 rping -s -v -V -a "$LAB_IP" -p 7480 -C 10 -S 65000 -- \
	rping -c -v -V -a "$LAB_PEER_IP" -p 7480 -C 10 -S 65000
log=$LAB_RESULTS/rping-$LAB_ROLE.log
lab_reject "$log" "data mismatch|error|failed|Failed|bogus" rping
if [ "$LAB_ROLE" = server ]; then
	n=$(grep -c "^server ping data: rdma-ping-[0-9]*: " "$log")
else
	n=$(grep -c "^ping data: rdma-ping-[0-9]*: " "$log")
fi
[ "$n" -eq 10 ] || lab_fail "rping: the $LAB_ROLE reported $n pings, not 10: $(lab_tail "$log")"
lab_summary "rping -S 65000 -C 10 with $LAB_PEER_IP: 10 pings, data verified (-V)"

# ibv_rc_pingpong, --chk: each side checks the bytes it receives.
port=18515
for run in 4096: 65536: 4096:-e; do
	size=${run%%:*}
	extra=${run#*:}
	tag=ibv_rc_pingpong-s$size$extra
	set -- -d "$LAB_DEV" -g "$LAB_GID_INDEX" -s "$size" -n 200 -p "$port" --chk $extra
	step "$tag" tcp "$port" ibv_rc_pingpong "$@" -- ibv_rc_pingpong "$@" "$LAB_PEER_IP"
	log=$LAB_RESULTS/$tag-$LAB_ROLE.log
	lab_expect "$log" "^$((size * 200 * 2)) bytes in " "$tag"
	lab_expect "$log" "^200 iters in " "$tag"
	lab_reject "$log" "invalid data|^(Failed status|Completion for unknown|parse WC failed|poll CQ failed)" "$tag"
	lab_summary "ibv_rc_pingpong -s $size -n 200 $extra with $LAB_PEER_IP: $(grep -h ' iters in ' "$log")"
	port=$((port + 1))
done

# ibv_ud_pingpong: UD with an address handle to the other guest's GID.
set -- -d "$LAB_DEV" -g "$LAB_GID_INDEX" -s 1024 -n 200 -p "$port"
step ibv_ud_pingpong tcp "$port" ibv_ud_pingpong "$@" -- ibv_ud_pingpong "$@" "$LAB_PEER_IP"
log=$LAB_RESULTS/ibv_ud_pingpong-$LAB_ROLE.log
lab_expect "$log" "^$((1024 * 200 * 2)) bytes in " ibv_ud_pingpong
lab_summary "ibv_ud_pingpong -s 1024 -n 200 with $LAB_PEER_IP: $(grep -h ' iters in ' "$log")"
