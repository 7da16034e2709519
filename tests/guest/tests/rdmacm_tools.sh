#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# lab-about: librdmacm's tools, server and client in the guest on 192.0.2.1 over rdma_cm: rdma_server/rdma_client (one message each way, both end with status 0); rstream and riostream (rsockets: 4 KiB x 100 transfers x 4 iterations each way with data verification, -T v); rcopy (a 1 MiB file of random bytes copied and compared byte for byte); cmtime (16 connections set up and torn down, its per-step figures in notes.txt); dmesg free of oops/WARN
# lab-timeout: 600
. "$LAB_DIR/lib.sh"

name=rdmacm_tools
limit=${LAB_CM_TIMEOUT:-120}

# pair ENDS TAG PORT SERVER_CMD... -- CLIENT_CMD...: runs an rdma_cm server
# that listens on PORT and its client; the client must exit 0 and neither may
# print an error. ENDS is "self" for a server that exits after its client (it
# must exit 0 too) or "stopped" for one that serves until it is stopped (rcopy,
# cmtime: it must still run when its client is done).
pair() {
	ends=$1
	tag=$2
	port=$3
	shift 3
	srv_cmd=
	while [ "$1" != "--" ]; do
		srv_cmd="$srv_cmd $1"
		shift
	done
	shift
	srv=$LAB_RESULTS/$tag-server.log
	cli=$LAB_RESULTS/$tag-client.log
	# shellcheck disable=SC2086 # the server's words, split on purpose
	lab_server_start "$limit" "$srv" $srv_cmd
	lab_wait_listen cm "$port" 60 "$tag" "$srv"
	if [ "$ends" = self ]; then
		lab_client_run "$limit" "$cli" "$@"
		lab_check_pair "$tag" "$limit" "$srv" "$cli"
	else
		lab_note "client: $*"
		timeout -k 5 "$limit" stdbuf -oL "$@" >"$cli" 2>&1 </dev/null
		status=$?
		if ! lab_alive "$LAB_SERVER_PID"; then
			lab_server_wait
			lab_fail "$tag: the server exited (status $LAB_SERVER_STATUS) while serving its client: $(lab_tail "$srv")"
		fi
		lab_server_stop
		lab_check_exit "$tag client" "$status" "$cli" "$limit"
	fi
	for side in "$srv" "$cli"; do
		lab_reject "$side" "[Ee]rror|[Ff]ail|[Ii]nvalid|mismatch" "$tag"
	done
}

# rdma_server/rdma_client: rdma_create_ep, one SEND each way (inline when the
# QP is granted inline data, which no pvrdma QP is), "end 0" on success.
pair self rdma_server 7481 rdma_server -s "$LAB_IP" -p 7481 -- rdma_client -s "$LAB_IP" -p 7481
lab_expect "$LAB_RESULTS/rdma_server-server.log" "^rdma_server: end 0\$" rdma_server
lab_expect "$LAB_RESULTS/rdma_server-client.log" "^rdma_client: end 0\$" rdma_client
lab_summary "rdma_server/rdma_client: one message each way, both ended with status 0"

# rstream and riostream (rsockets over RC: RDMA WRITE with immediate data
# carries the stream), data verified by the tools themselves (-T v). The
# client prints the header and one line of figures.
for tool in rstream riostream; do
	case $tool in rstream) port=7482 ;; *) port=7483 ;; esac
	opts="-S 4096 -C 100 -I 4 -T v -p $port"
	# shellcheck disable=SC2086
	pair self "$tool" "$port" "$tool" -b "$LAB_IP" $opts -- "$tool" -s "$LAB_IP" $opts
	cli=$LAB_RESULTS/$tool-client.log
	lab_expect "$cli" "usec/xfer" "$tool"
	figures=$(grep -A1 "usec/xfer" "$cli" | tail -n 1 | tr -s ' \t' '  ')
	[ -n "$figures" ] || lab_fail "$tool: the client printed no figures: $(lab_tail "$cli")"
	lab_note "$tool $opts: $(grep "usec/xfer" "$cli" | tr -s ' \t' '  ')"
	lab_note "$tool $opts: $figures"
	lab_summary "$tool: 4 KiB x 100 x 4 each way, data verified: $figures"
done

# rcopy: a file of random bytes to the server's destination path, compared.
src=/tmp/rcopy-source
dst=/tmp/rcopy-destination
rm -f "$dst"
dd if=/dev/urandom of="$src" bs=64k count=16 2>/dev/null
pair stopped rcopy 7484 rcopy -p 7484 -- rcopy "$src" "$LAB_IP:$dst" -p 7484
cmp "$src" "$dst" >"$LAB_RESULTS/rcopy-cmp.log" 2>&1 ||
	lab_fail "rcopy: the copy differs from its source: $(lab_tail "$LAB_RESULTS/rcopy-cmp.log")"
lab_summary "rcopy: 1 MiB of random bytes copied, identical ($(sha256sum "$dst" | cut -c1-16))"

# cmtime: connection setup and teardown, timed by step ("step : total ms,
# max ms, min us, us / conn").
pair stopped cmtime 7485 cmtime -b "$LAB_IP" -p 7485 -c 16 -- cmtime -s "$LAB_IP" -b "$LAB_IP" -p 7485 -c 16
cli=$LAB_RESULTS/cmtime-client.log
lab_summary "cmtime: 16 connections set up and torn down (figures: total ms, max ms, min us, us / conn)"
for step in "create id" "bind addr" "resolve addr" "resolve route" "create qp" connect disconnect destroy; do
	line=$(grep -E "^$step *:" "$cli" | tr -s ' \t' '  ')
	[ -n "$line" ] || lab_fail "cmtime: no figures for step '$step': $(lab_tail "$cli")"
	lab_summary "cmtime -c 16: $line"
done
