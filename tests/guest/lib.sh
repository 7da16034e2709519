# SPDX-License-Identifier: GPL-2.0
# Shared helpers of the lab's guest tests, sourced by init.sh and by every
# tests/<name>.sh (see Documentation/lab.md).
#
# A test prints "FAIL: <cause>" and exits non-zero when an assertion fails; the
# runner reports the first FAIL line as the cause. Every blocking command runs
# under timeout(1), so a hang turns into a FAIL with a message.
#
# Set by init.sh before a test runs: LAB_DEV (RDMA device), LAB_GID_INDEX (index
# of the GID of LAB_IP), LAB_IP, LAB_NETDEV (the vmxnet3 interface), LAB_RESULTS
# (a writable directory copied back to the host), LAB_DRIVER (c or rust),
# LAB_MODEL (the device model: patched, patched-v17/18/19 or stock),
# LAB_DEVICE_VERSION (the pvrdma device version it presents, 17 to 20), LAB_MODULE and
# LAB_MODULE_NAME (the driver's .ko and its module name, whose driver init.sh
# has checked is the one bound to LAB_DEV's PCI function).

# lab_fail MESSAGE...: reports a failed assertion and ends the test.
lab_fail() {
	echo "FAIL: $*"
	exit 1
}

# lab_note MESSAGE...: a line of the test's log.
lab_note() {
	echo "lab: $*"
}

# lab_summary MESSAGE...: a line of the test's log that also goes to
# notes.txt, which the runner prints under the test's TAP line: what the test
# measured or proved (figures, counts).
lab_summary() {
	echo "lab: $*"
	echo "$*" >>"$LAB_RESULTS/notes.txt"
}

# lab_tail FILE: the last lines of FILE on one line, for failure messages.
lab_tail() {
	grep -v -e '^ *local address:' -e '^ *remote address:' "$1" 2>/dev/null |
		tail -n 4 | tr '\n\t' '  ' | cut -c 1-300
}

# lab_ipv4_gid A.B.C.D: the GID of an IPv4 address as sysfs spells it
# (an IPv4-mapped IPv6 address: ::ffff:a.b.c.d).
lab_ipv4_gid() {
	echo "$1" | {
		IFS=. read -r a b c d
		printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x\n' "$a" "$b" "$c" "$d"
	}
}

# lab_gid_index DEV A.B.C.D: prints the lowest index of port 1's GID table that
# holds the GID of the IPv4 address; fails if there is none.
lab_gid_index() {
	want=$(lab_ipv4_gid "$2")
	i=0
	while [ -r "/sys/class/infiniband/$1/ports/1/gids/$i" ]; do
		if [ "$(cat "/sys/class/infiniband/$1/ports/1/gids/$i" 2>/dev/null)" = "$want" ]; then
			echo "$i"
			return 0
		fi
		i=$((i + 1))
	done
	return 1
}

# lab_devinfo_gid A.B.C.D: a regular expression for how `ibv_devinfo -v`
# prints the GID of the IPv4 address and its type at the device's version:
# RoCE v2 from 18 (the device reports RoCE v2 only), an IPv4-mapped GID then
# printed as an address (::ffff:a.b.c.d); RoCE v1 before, printed in hex.
lab_devinfo_gid() {
	if [ "$LAB_DEVICE_VERSION" -ge 18 ]; then
		echo "::ffff:$(echo "$1" | sed 's/\./\\./g'), RoCE v2"
	else
		echo "$(lab_ipv4_gid "$1"), RoCE v1"
	fi
}

# lab_check_gid_types TAG: every GID in port 1's table has the type the device
# version asks for: RoCE v2 from version 18 (the device reports RoCE v2 only,
# so ib_core adds RoCE v2 GIDs only and rdma_cm can use no other), RoCE v1
# before. Says so in the test's summary.
lab_check_gid_types() {
	if [ "$LAB_DEVICE_VERSION" -ge 18 ]; then
		want="RoCE v2"
	else
		want="IB/RoCE v1"
	fi
	port=/sys/class/infiniband/$LAB_DEV/ports/1
	i=0
	n=0
	while [ -r "$port/gids/$i" ]; do
		gid=$(cat "$port/gids/$i" 2>/dev/null)
		case "$gid" in
		"" | 0000:0000:0000:0000:0000:0000:0000:0000) ;;
		*)
			type=$(cat "$port/gid_attrs/types/$i" 2>&1)
			[ "$type" = "$want" ] ||
				lab_fail "$1: GID $i ($gid) is '$type', not '$want' at device version $LAB_DEVICE_VERSION"
			n=$((n + 1))
			;;
		esac
		i=$((i + 1))
	done
	[ "$n" -ge 1 ] || lab_fail "$1: no GID in $port/gids"
	lab_summary "device version $LAB_DEVICE_VERSION: $n GIDs, each $want (so rdma_cm's)"
}

# lab_first_device: prints the name of the first RDMA device.
lab_first_device() {
	for d in /sys/class/infiniband/*; do
		if [ -e "$d" ]; then
			basename "$d"
			return 0
		fi
	done
	return 1
}

# lab_wait_device SECONDS: waits until an RDMA device exists, its port 1 is
# ACTIVE and its GID table holds the GID of $LAB_IP. Sets LAB_DEV and
# LAB_GID_INDEX, or LAB_WAIT_FAILURE (what was missing) and returns 1.
# shellcheck disable=SC2034 # LAB_WAIT_FAILURE is read by init.sh
lab_wait_device() {
	deadline=$(($(cut -d. -f1 /proc/uptime) + $1))
	LAB_DEV=
	LAB_GID_INDEX=
	while :; do
		LAB_DEV=$(lab_first_device)
		if [ -z "$LAB_DEV" ]; then
			LAB_WAIT_FAILURE="no RDMA device appeared in /sys/class/infiniband within $1 s"
		elif ! grep -q ACTIVE "/sys/class/infiniband/$LAB_DEV/ports/1/state" 2>/dev/null; then
			LAB_WAIT_FAILURE="port 1 of $LAB_DEV not ACTIVE within $1 s (state: $(cat "/sys/class/infiniband/$LAB_DEV/ports/1/state" 2>&1))"
		elif LAB_GID_INDEX=$(lab_gid_index "$LAB_DEV" "$LAB_IP"); then
			return 0
		else
			LAB_WAIT_FAILURE="no GID of $LAB_IP ($(lab_ipv4_gid "$LAB_IP")) in the GID table of $LAB_DEV port 1 within $1 s"
		fi
		[ "$(cut -d. -f1 /proc/uptime)" -lt "$deadline" ] || return 1
		sleep 0.2
	done
}

# lab_check_bound_driver MODULE: whether LAB_DEV is the pvrdma PCI function
# (15ad:0820) and the driver bound to it is MODULE's (LAB_MODULE_NAME: the
# module under test). Sets LAB_BIND_FAILURE (what is bound instead) and returns
# 1 if not.
# shellcheck disable=SC2034 # LAB_BIND_FAILURE is read by init.sh
lab_check_bound_driver() {
	lab_pci=/sys/class/infiniband/$LAB_DEV/device
	lab_pci_id="$(cat "$lab_pci/vendor" 2>/dev/null):$(cat "$lab_pci/device" 2>/dev/null)"
	lab_pci_name=$(readlink "$lab_pci" 2>/dev/null)
	# The bound driver's module (the driver's name when it has no module link).
	lab_bound=$(readlink "$lab_pci/driver/module" 2>/dev/null || readlink "$lab_pci/driver" 2>/dev/null)
	lab_bound=${lab_bound##*/}
	if [ "$lab_pci_id" != 0x15ad:0x0820 ]; then
		LAB_BIND_FAILURE="$LAB_DEV is not the pvrdma PCI function 15ad:0820 (PCI ${lab_pci_name##*/} is '$lab_pci_id', bound to '${lab_bound:-no driver}')"
	elif [ "$lab_bound" != "$1" ]; then
		LAB_BIND_FAILURE="the pvrdma device ${lab_pci_name##*/} ($LAB_DEV) is bound to '${lab_bound:-no driver}', not to $1, the module under test (driver $LAB_DRIVER)"
	else
		return 0
	fi
	return 1
}

# lab_wait_tcp_listen PORT SECONDS: waits until a TCP socket listens on PORT;
# returns 1 at the timeout, 2 as soon as the server (LAB_SERVER_PID) is gone.
lab_wait_tcp_listen() {
	hex=$(printf '%04X' "$1")
	n=$(($2 * 5))
	while [ "$n" -gt 0 ]; do
		# /proc/net/tcp{,6}: "sl local_address rem_address st ..."; st 0A is LISTEN.
		if grep -qE "^ *[0-9]+: [0-9A-F]+:$hex [0-9A-F]+:0000 0A " /proc/net/tcp /proc/net/tcp6 2>/dev/null; then
			return 0
		fi
		lab_alive "$LAB_SERVER_PID" || return 2
		sleep 0.2
		n=$((n - 1))
	done
	return 1
}

# lab_wait_cm_listen PORT SECONDS: waits until an rdma_cm ID listens on PORT
# (rdma-core's examples print nothing once they listen); returns 1 at the
# timeout, 2 as soon as the server (LAB_SERVER_PID) is gone. Fails the test
# without iproute2's rdma tool, the only way to see the listening ID: a sleep
# instead would let a server that never listens pass for one that does.
lab_wait_cm_listen() {
	command -v rdma >/dev/null ||
		lab_fail "no rdma tool (iproute2): cannot see whether the rdma_cm server listens on port $1"
	n=$(($2 * 5))
	while [ "$n" -gt 0 ]; do
		if timeout 10 rdma resource show cm_id 2>/dev/null | grep "state LISTEN" | grep -q ":$1 *\$\|:$1 "; then
			return 0
		fi
		lab_alive "$LAB_SERVER_PID" || return 2
		sleep 0.2
		n=$((n - 1))
	done
	return 1
}

# lab_wait_listen KIND PORT SECONDS WHAT LOG: waits for the server to listen
# (KIND tcp or cm) and fails, saying why, if it does not.
lab_wait_listen() {
	"lab_wait_$1_listen" "$2" "$3"
	case $? in
	0) return 0 ;;
	2)
		lab_server_wait
		lab_fail "$4: the server exited (status $LAB_SERVER_STATUS) before it listened on port $2: $(lab_tail "$5")"
		;;
	*)
		lab_server_stop
		lab_fail "$4: the server did not listen on port $2 within $3 s: $(lab_tail "$5")"
		;;
	esac
}

# lab_check_exit WHAT STATUS LOG SECONDS: fails unless STATUS (of a command run
# under `timeout SECONDS`) is 0, saying whether it timed out.
lab_check_exit() {
	case "$2" in
	0) return 0 ;;
	124 | 137) lab_fail "$1 did not finish within $4 s (timed out): $(lab_tail "$3")" ;;
	*) lab_fail "$1 exited with status $2: $(lab_tail "$3")" ;;
	esac
}

# lab_expect LOG PATTERN WHAT: fails unless the grep -E PATTERN matches a line of LOG.
lab_expect() {
	grep -qE "$2" "$1" || lab_fail "$3: expected a line matching '$2' in $(basename "$1"): $(lab_tail "$1")"
}

# Kernel messages that report trouble, for a test's own check of the dmesg lines of its run
# (it can say which step caused them; the runner's verdict reads the whole log with the full
# list, tools/pvrdma-lab/src/kernel_log.rs): oops, BUG (not ODEBUG's messages), slub_debug's
# "BUG <cache>", WARN, call traces, UBSAN, KASAN.
LAB_KERNEL_REPORT='Oops|\bBUG:|\] BUG |WARNING:|cut here|Call Trace|general protection|UBSAN|KASAN'

# lab_dmesg_check FILE WHAT: the test's own look at the kernel messages of its run (FILE), to
# say which step caused a report. With the Rust driver a report fails the test at once; with
# the C driver it is noted and left to the runner's verdict, which sets aside only the C
# driver's known bugs, by the exact form of their reports (tools/pvrdma-lab/known-failures.toml).
# So is, for either driver, a report among which object debugging caught an object freed while
# a delayed kobject release was pending (the debug kernel's CONFIG_DEBUG_KOBJECT_RELEASE): the
# runner sets aside only the kernel's own such bugs (the block layer's and the NFS client's),
# by their exact form, and fails the test on any other.
lab_dmesg_check() {
	line=$(grep -m 1 -E "$LAB_KERNEL_REPORT" "$1") || return 0
	if grep -q "ODEBUG: free active .* hint: kobject_delayed_cleanup" "$1" && lab_kobject_releases_delayed; then
		lab_note "$2: $(basename "$1") has '$line', with an object freed while its kobject's delayed release was pending: left to the runner's verdict"
		return 0
	fi
	lab_kernel_report "$2" "$(basename "$1") has '$line'"
}

# lab_kernel_report WHAT DETAIL: the policy for a kernel report a test saw during step WHAT:
# with the Rust driver it fails the test ("WHAT: DETAIL"); with the C driver it is noted and
# the test goes on, left to the runner's verdict (see lab_dmesg_check). Returns only then.
lab_kernel_report() {
	[ "$LAB_DRIVER" = c ] || lab_fail "$1: $2"
	lab_note "$1: $2 (C driver: left to the runner's verdict)"
}

# lab_run_program NAME SECONDS LOG CMD...: runs the test program CMD under timeout(1) with its
# output in LOG (and on the test's output), keeps the kernel messages of its run in
# $LAB_RESULTS/NAME-dmesg.txt and checks them (lab_dmesg_check: a program an oops killed is
# reported with the kernel's words, not its exit status). Sets LAB_STATUS (CMD's exit
# status) and LAB_PROGRAM_SUMMARY (its `summary: ` line); without one, fails the test with
# CMD's exit status.
lab_run_program() {
	run_name=$1
	run_limit=$2
	run_log=$3
	shift 3
	run_dmesg_before=$(dmesg | wc -l)
	timeout -k 5 "$run_limit" stdbuf -oL "$@" >"$run_log" 2>&1
	LAB_STATUS=$?
	cat "$run_log"
	dmesg | tail -n +"$((run_dmesg_before + 1))" >"$LAB_RESULTS/$run_name-dmesg.txt"
	lab_dmesg_check "$LAB_RESULTS/$run_name-dmesg.txt" "$run_name: dmesg"
	LAB_PROGRAM_SUMMARY=$(grep '^summary: ' "$run_log")
	[ -n "$LAB_PROGRAM_SUMMARY" ] || lab_check_exit "$run_name" "$LAB_STATUS" "$run_log" "$run_limit"
}

# lab_reject LOG PATTERN WHAT: fails if the grep -E PATTERN matches a line of LOG.
lab_reject() {
	if line=$(grep -m 1 -E "$2" "$1"); then
		lab_fail "$3: $(basename "$1") has '$line'"
	fi
}

# lab_kobject_releases_delayed: true on a kernel that delays kobject releases
# (the debug kernel's CONFIG_DEBUG_KOBJECT_RELEASE), which announces each.
lab_kobject_releases_delayed() {
	dmesg | grep -qE "kobject_release, parent .* \(delayed [0-9]+\)"
}

# lab_wait_kobject_releases: on a kernel that delays kobject releases (the debug
# kernel's CONFIG_DEBUG_KOBJECT_RELEASE announces each: "kobject: 'NAME' (...):
# kobject_release, parent ... (delayed N)", N up to 4000 ms), waits until the
# releases announced so far have run: until 5 s have passed since the last
# announcement (a release that runs may announce its parent's), at most 60 s.
# Before unloading a module whose objects are being released: the kernel does
# not wait for them (nvme-rdma's controller, released 4 s after its disconnect,
# calls into the module: a KASAN report and an oops once it is gone). Returns at
# once on a kernel without the option.
lab_wait_kobject_releases() {
	waited=0
	while [ "$waited" -lt 60 ]; do
		last=$(dmesg | grep -E "kobject_release, parent .* \(delayed [0-9]+\)" | tail -n 1 |
			sed -E 's/^\[ *([0-9]+)\..*/\1/')
		[ -n "$last" ] || return 0
		now=$(cut -d. -f1 /proc/uptime)
		[ $((now - last)) -ge 5 ] && return 0
		sleep 1
		waited=$((waited + 1))
	done
	lab_note "kobject releases still announced after 60 s"
}

# lab_alive PID: true while process PID runs (not yet exited; an exited child
# stays a zombie until waited for).
lab_alive() {
	state=
	# (2>/dev/null first: dash applies redirections in order, and a missing
	# /proc entry would otherwise be reported before stderr is silenced.)
	read -r _ _ state _ 2>/dev/null <"/proc/$1/stat"
	[ -n "$state" ] && [ "$state" != Z ]
}

# lab_hang_report WHAT: for a step that did not end in time (WHAT), appends to
# $LAB_RESULTS/hang.txt what every process in uninterruptible sleep was
# waiting for in the kernel: a line `stuck: COMM (pid N) in f1 < f2 < f3` (the
# innermost frames of its kernel stack; the runner quotes the first such
# line), then the whole stack, kernel threads included; and every process with
# its state and wait channel. A process in D cannot be killed, so this is
# the one chance to see what it waits for. (Not sysrq w: its traces in dmesg
# would read as a kernel report and hide the hang in the verdict.)
lab_hang_report() {
	# Shell builtins where possible: a few hundred forks take seconds under TCG.
	{
		read -r lab_uptime _ </proc/uptime
		echo "$1 (uptime $lab_uptime s)"
		# One pass: the stuck ones as they are found, the list of all after them.
		list=
		for proc in /proc/[0-9]*; do
			lab_proc_state "$proc"
			wchan=
			read -r wchan 2>/dev/null <"$proc/wchan"
			list="$list  ${proc#/proc/} $lab_state ${wchan:--} $lab_comm
"
			[ "$lab_state" = D ] || continue
			frames=$(sed -n 's/^\[<[0-9a-f]*>\] \([^+]*\)+.*/\1/p' "$proc/stack" 2>/dev/null |
				grep -v -e '^__schedule$' -e '^schedule$' -e '^schedule_timeout$' |
				head -n 3 | tr '\n' '<' | sed 's/<$//; s/</ < /g')
			echo "stuck: $lab_comm (pid ${proc#/proc/}) in ${frames:-an unreadable stack}"
			sed 's/^/    /' "$proc/stack" 2>/dev/null
		done
		echo "processes (pid, state, wait channel, command):"
		printf '%s' "$list"
	} >>"$LAB_RESULTS/hang.txt" 2>&1
}

# lab_proc_state /proc/PID: sets lab_state (R, S, D, ...) and lab_comm.
lab_proc_state() {
	lab_state=
	lab_comm=
	read -r lab_comm 2>/dev/null <"$1/comm"
	while read -r key value _; do
		[ "$key" = State: ] || continue
		lab_state=$value
		break
	done 2>/dev/null <"$1/status"
}

# lab_server_start SECONDS LOG CMD...: starts CMD in the background under
# timeout(1) with its output in LOG; sets LAB_SERVER_PID.
lab_server_start() {
	t=$1
	log=$2
	shift 2
	lab_note "server: $*"
	# Line-buffered, so that what a killed tool printed is kept.
	timeout -k 5 "$t" stdbuf -oL "$@" >"$log" 2>&1 </dev/null &
	LAB_SERVER_PID=$!
	LAB_SERVER_STATUS=
	LAB_SERVER_STOPPED=
}

# lab_server_stop: ends the background server (after its client failed).
lab_server_stop() {
	if [ -z "$LAB_SERVER_STATUS" ] && lab_alive "$LAB_SERVER_PID"; then
		LAB_SERVER_STOPPED=1
	fi
	kill "$LAB_SERVER_PID" 2>/dev/null
	lab_server_wait
}

# lab_server_wait: waits for the background server; sets LAB_SERVER_STATUS.
lab_server_wait() {
	if [ -z "$LAB_SERVER_STATUS" ]; then
		wait "$LAB_SERVER_PID"
		LAB_SERVER_STATUS=$?
	fi
}

# lab_client_run SECONDS LOG CMD...: runs the client CMD under timeout(1) with
# its output in LOG while watching the server: if the server fails first, the
# client (which may wait forever for it) is stopped 5 s later. Then waits for
# the server. Sets LAB_CLIENT_STATUS and LAB_SERVER_STATUS.
lab_client_run() {
	t=$1
	log=$2
	shift 2
	lab_note "client: $*"
	timeout -k 5 "$t" stdbuf -oL "$@" >"$log" 2>&1 </dev/null &
	client_pid=$!
	grace=
	while lab_alive "$client_pid"; do
		if [ -z "$LAB_SERVER_STATUS" ] && ! lab_alive "$LAB_SERVER_PID"; then
			lab_server_wait
			[ "$LAB_SERVER_STATUS" -eq 0 ] || grace=25
		fi
		if [ -n "$grace" ]; then
			grace=$((grace - 1))
			[ "$grace" -gt 0 ] || kill "$client_pid" 2>/dev/null
		fi
		sleep 0.2
	done
	wait "$client_pid"
	LAB_CLIENT_STATUS=$?
	[ "$LAB_CLIENT_STATUS" -eq 0 ] || lab_server_stop
	lab_server_wait
}

# lab_check_pair WHAT SECONDS SERVER_LOG CLIENT_LOG: fails unless both the
# server and the client exited 0. A server that failed by itself (not timed
# out, not stopped after its client failed) is reported first: its client then
# only waited for it.
lab_check_pair() {
	if [ -z "$LAB_SERVER_STOPPED" ]; then
		case "$LAB_SERVER_STATUS" in
		0 | 124 | 137) ;;
		*) lab_check_exit "$1 server" "$LAB_SERVER_STATUS" "$3" "$2" ;;
		esac
	fi
	lab_check_exit "$1 client" "$LAB_CLIENT_STATUS" "$4" "$2"
	lab_check_exit "$1 server" "$LAB_SERVER_STATUS" "$3" "$2"
}

# lab_pingpong TOOL SIZE ITERS PORT [OPTION...]: runs an ibv_*_pingpong server
# and client in this guest (the client reaches the server over TCP on 127.0.0.1
# to exchange QP numbers and GIDs), with `-g $LAB_GID_INDEX -s SIZE -n ITERS`,
# and checks that both exit 0, report SIZE*ITERS*2 bytes and ITERS iterations,
# and report no invalid data (--chk, when given).
lab_pingpong() {
	tool=$1
	size=$2
	iters=$3
	port=$4
	shift 4
	limit=${LAB_PINGPONG_TIMEOUT:-120}
	tag="$tool-s$size"
	srv=$LAB_RESULTS/$tag-server.log
	cli=$LAB_RESULTS/$tag-client.log
	extra="$*"
	set -- -d "$LAB_DEV" -g "$LAB_GID_INDEX" -s "$size" -n "$iters" -p "$port" "$@"

	lab_server_start "$limit" "$srv" "$tool" "$@"
	lab_wait_listen tcp "$port" 60 "$tag" "$srv"
	lab_client_run "$limit" "$cli" "$tool" "$@" 127.0.0.1
	lab_check_pair "$tag" "$limit" "$srv" "$cli"

	bytes=$((size * iters * 2))
	for side in "$srv" "$cli"; do
		lab_expect "$side" "^$bytes bytes in " "$tag"
		lab_expect "$side" "^$iters iters in " "$tag"
		lab_reject "$side" "invalid data" "$tag"
		lab_reject "$side" "^(Failed status|Completion for unknown|parse WC failed|poll CQ failed)" "$tag"
	done
	lab_summary "$tool -s $size -n $iters $extra: ok, $(grep -h ' iters in ' "$cli")"
}

# lab_ucmatose CONNECTIONS MESSAGES PORT [OPTION...]: runs a ucmatose (rdma_cm,
# RC) server bound to $LAB_IP and a client connecting to it, CONNECTIONS
# connections with MESSAGES messages each way, OPTIONs added to both, and
# checks what they report.
lab_ucmatose() {
	conns=$1
	msgs=$2
	port=$3
	shift 3
	limit=${LAB_CM_TIMEOUT:-120}
	srv=$LAB_RESULTS/ucmatose-server.log
	cli=$LAB_RESULTS/ucmatose-client.log

	lab_server_start "$limit" "$srv" ucmatose -b "$LAB_IP" -p "$port" -c "$conns" -C "$msgs" "$@"
	lab_wait_listen cm "$port" 60 ucmatose "$srv"
	lab_client_run "$limit" "$cli" ucmatose -s "$LAB_IP" -b "$LAB_IP" -p "$port" -c "$conns" -C "$msgs" "$@"
	lab_check_pair ucmatose "$limit" "$srv" "$cli"

	# The server leaves its connect loop only after CONNECTIONS ESTABLISHED
	# events, then completes MESSAGES sends and MESSAGES receives on each
	# connection, then waits for CONNECTIONS DISCONNECTED events: each line
	# below proves one of those counts. (ucmatose counts completions without
	# checking their status.)
	for side in "$srv" "$cli"; do
		lab_reject "$side" "event: .*error|failed|failure|error:" "ucmatose"
		lab_expect "$side" "^data transfers complete\$" "ucmatose"
		lab_expect "$side" "^test complete\$" "ucmatose"
		lab_expect "$side" "^return status 0\$" "ucmatose"
	done
	lab_expect "$srv" "^completing sends\$" "ucmatose server"
	lab_expect "$srv" "^receiving data transfers\$" "ucmatose server"
	lab_expect "$srv" "^disconnected\$" "ucmatose server"
	lab_expect "$cli" "^sending replies\$" "ucmatose client"
	lab_note "ucmatose $*: $conns connections x $msgs messages each way: ok"
}

# lab_perftest TOOL PORT [OPTION...]: runs a perftest TOOL's server and a
# client reaching it over TCP on 127.0.0.1 (perftest exchanges QP numbers,
# GIDs, addresses and rkeys there; LAB_PERFTEST_SERVER overrides the address,
# which with -R, rdma_cm, must be one the RDMA device serves), with
# `-d $LAB_DEV -x $LAB_GID_INDEX -F`;
# checks both exit 0, report no error, and that the client printed its table
# (the "#bytes ..." header and a line of figures). Sets LAB_PERFTEST_HEADER
# and LAB_PERFTEST_RESULT (that line, spaces squeezed).
lab_perftest() {
	tool=$1
	port=$2
	shift 2
	limit=${LAB_PERFTEST_TIMEOUT:-240}
	srv=$LAB_RESULTS/$tool-server.log
	cli=$LAB_RESULTS/$tool-client.log
	# With -R the server listens with rdma_cm, not on a TCP socket.
	listen=tcp
	for arg in "$@"; do
		[ "$arg" != -R ] || listen=cm
	done
	set -- -d "$LAB_DEV" -x "$LAB_GID_INDEX" -p "$port" -F "$@"

	lab_server_start "$limit" "$srv" "$tool" "$@"
	lab_wait_listen "$listen" "$port" 60 "$tool" "$srv"
	lab_client_run "$limit" "$cli" "$tool" "$@" "${LAB_PERFTEST_SERVER:-127.0.0.1}"
	lab_check_pair "$tool" "$limit" "$srv" "$cli"
	for side in "$srv" "$cli"; do
		lab_reject "$side" "Couldn't|Unable|[Ff]ailed|error|Error" "$tool"
	done
	lab_expect "$cli" "^ *#bytes" "$tool"
	LAB_PERFTEST_HEADER=$(grep -E "^ *#bytes" "$cli" | tail -n 1 | tr -s ' \t' '  ')
	LAB_PERFTEST_RESULT=$(grep -E "^ *[0-9]+ +[0-9]+ +[0-9]" "$cli" | tail -n 1 | tr -s ' \t' '  ')
	[ -n "$LAB_PERFTEST_RESULT" ] || lab_fail "$tool: the client printed no result line: $(lab_tail "$cli")"
	lab_note "$tool $*: $LAB_PERFTEST_HEADER"
	lab_note "$tool $*: $LAB_PERFTEST_RESULT"
}

# The test programs the host built (make guest-programs: the same compiler,
# flags and libraries as the guest's, since its root is the host's), newer than
# their sources: a compile under TCG takes 10-30 s, and every guest of every
# column would pay it.
LAB_PREBUILT=${LAB_DIR%/tests/guest}/tools/target/guest-programs

# lab_prebuilt FILE SOURCE: true, with FILE copied to /tmp, if the host built it
# from SOURCE after SOURCE's last change.
lab_prebuilt() {
	[ -x "$LAB_PREBUILT/$1" ] && [ "$LAB_PREBUILT/$1" -nt "$2" ] &&
		cp "$LAB_PREBUILT/$1" "/tmp/$1"
}

# lab_build_test NAME: builds the test program tests/NAME.c (libibverbs,
# warnings as errors) into /tmp/NAME, or takes the host's build of it; fails
# the test if it does not build.
lab_build_test() {
	if lab_prebuilt "$1" "$LAB_DIR/tests/$1.c"; then
		echo "built on the host: $LAB_PREBUILT/$1" >"$LAB_RESULTS/$1-cc.log"
		return 0
	fi
	timeout 120 cc -O2 -Wall -Wextra -Werror -o "/tmp/$1" "$LAB_DIR/tests/$1.c" -libverbs \
		>"$LAB_RESULTS/$1-cc.log" 2>&1 ||
		lab_fail "cannot build $1.c: $(lab_tail "$LAB_RESULTS/$1-cc.log")"
}

# lab_device_irqs_to CPU: every interrupt of LAB_DEV's PCI function to CPU
# alone (its smp_affinity_list); fails the test if one cannot be moved.
lab_device_irqs_to() {
	irqs_pci=$(basename "$(readlink "/sys/class/infiniband/$LAB_DEV/device")")
	irqs_list=$(grep "$irqs_pci" /proc/interrupts | cut -d: -f1 | tr -d ' ')
	[ -n "$irqs_list" ] || lab_fail "no interrupt of $irqs_pci in /proc/interrupts"
	for irqs_one in $irqs_list; do
		echo "$1" >"/proc/irq/$irqs_one/smp_affinity_list" ||
			lab_fail "cannot move IRQ $irqs_one to CPU $1"
	done
}

# lab_placements NAME: readies the placements timing tests compare: the
# device's interrupts on CPU 1 alone; a program pinned to CPU 1 is "near"
# (it takes its commands' interrupts itself, right after its register write),
# one pinned to CPU 0 "far" (the other vCPU takes them, under TCG at its next
# turn). Fails test NAME unless exactly CPUs 0 and 1 are online.
lab_placements() {
	[ "$(cat /sys/devices/system/cpu/online)" = 0-1 ] ||
		lab_fail "$1: needs CPUs 0 and 1 online (online: $(cat /sys/devices/system/cpu/online))"
	lab_device_irqs_to 1
}

# lab_placement_cpu NAME PLACEMENT: sets placement_cpu to the CPU a program
# runs on for PLACEMENT (near or far, see lab_placements); fails test NAME for
# any other word (a variable, not output: lab_fail in a command substitution
# would end only the subshell).
lab_placement_cpu() {
	case $2 in
	near) placement_cpu=1 ;;
	far) placement_cpu=0 ;;
	*) lab_fail "$1: placement '$2' is neither near nor far" ;;
	esac
}

# lab_wc_audit: builds wc_audit.c (an LD_PRELOAD shim counting the work
# completions a tool polls, see its header) into LAB_WC_AUDIT
# (/tmp/wc_audit.so); fails the test if it does not build.
lab_wc_audit() {
	LAB_WC_AUDIT=/tmp/wc_audit.so
	if lab_prebuilt wc_audit.so "$LAB_DIR/wc_audit.c"; then
		echo "built on the host: $LAB_PREBUILT/wc_audit.so" >"$LAB_RESULTS/wc_audit-cc.log"
		return 0
	fi
	timeout 120 cc -shared -fPIC -O2 -Wall -Wextra -Werror -o "$LAB_WC_AUDIT" \
		"$LAB_DIR/wc_audit.c" -ldl >"$LAB_RESULTS/wc_audit-cc.log" 2>&1 ||
		lab_fail "cannot build wc_audit.c: $(lab_tail "$LAB_RESULTS/wc_audit-cc.log")"
}

# lab_wc_count LOG FIELD: the number after FIELD ("recv ok", "send ok",
# "failed", ...) in wc_audit's line in LOG; empty without one.
lab_wc_count() {
	sed -n "s/^wc-audit: .* $2 \([0-9]*\).*/\1/p" "$1" | tail -n 1
}

# lab_tsc_mhz: the guest's TSC frequency in MHz, from the kernel log (empty if
# it is not there).
lab_tsc_mhz() {
	dmesg | sed -n 's/.*tsc: Detected \([0-9.]*\) MHz.*/\1/p' | head -n 1
}

# lab_perftest_bw TOOL PORT [OPTION...]: lab_perftest for a bandwidth tool and
# a line of notes.txt with its figures. Under TCG perftest's calibration of
# the CPU clock often fails its own r^2 check ("Correlation coefficient"),
# and a bandwidth tool then prints 0 MB/s (it has no cycles mode): the run is
# repeated, on the next port, up to 5 times; if every run failed so, the test
# fails: it measured nothing.
lab_perftest_bw() {
	bw_tool=$1
	bw_port=$2
	shift 2
	attempt=1
	while :; do
		lab_perftest "$bw_tool" "$bw_port" "$@"
		# "#bytes #iterations BW-peak BW-average MsgRate"
		read -r bytes iters peak average _ <<-EOF
			$LAB_PERFTEST_RESULT
		EOF
		if ! echo "$average" | awk '{ exit !($1 == 0) }' ||
			! grep -q "Correlation coefficient" "$LAB_RESULTS/$bw_tool-client.log"; then
			lab_summary "$bw_tool: $iters x $bytes B: peak $peak MB/s, average $average MB/s (attempt $attempt)"
			return 0
		fi
		lab_note "$bw_tool: attempt $attempt: perftest's clock calibration failed (BW printed as 0)"
		cp "$LAB_RESULTS/$bw_tool-client.log" "$LAB_RESULTS/$bw_tool-client-attempt$attempt.log"
		if [ "$attempt" -ge 5 ]; then
			lab_fail "$bw_tool: $iters x $bytes B completed, but no bandwidth was measured: perftest's clock calibration failed in $attempt runs"
		fi
		attempt=$((attempt + 1))
		bw_port=$((bw_port + 1))
	done
}

# lab_perftest_lat TOOL PORT [OPTION...]: lab_perftest for a latency tool run
# with -C (TSC cycles: under TCG perftest's clock calibration often fails and
# its microseconds are then "inf"), and a line of notes.txt with its figures,
# converted to microseconds at the guest's TSC frequency.
lab_perftest_lat() {
	lat_tool=$1
	shift
	lab_perftest "$lat_tool" "$@"
	mhz=$(lab_tsc_mhz)
	# "#bytes #iterations t_min t_max t_typical t_avg t_stdev 99% 99.9%", in cycles
	read -r bytes iters t_min _ t_typical t_avg _ <<-EOF
		$LAB_PERFTEST_RESULT
	EOF
	[ -n "$t_avg" ] || lab_fail "$lat_tool: cannot read the figures of '$LAB_PERFTEST_RESULT'"
	lab_summary "$lat_tool: $iters x $bytes B: $(echo "$t_min $t_typical $t_avg ${mhz:-0}" | awk '{
		printf "min %.0f, typical %.0f, average %.0f cycles", $1, $2, $3
		if ($4 > 0) printf " (%.1f / %.1f / %.1f us at %.0f MHz)", $1 / $4, $2 / $4, $3 / $4, $4
	}')"
}

# --- Two-guest tests (lab-guests: 2) ------------------------------------------------
# The server guest is 192.0.2.1, the client 192.0.2.2 (LAB_ROLE, LAB_IP,
# LAB_PEER_IP); their only network is the link between their vmxnet3s.

# lab_ready_signal PORT SECONDS: (server) tells the client, once, that the
# step's server listens: answers "ready" to one TCP connection on PORT, in the
# background, for at most SECONDS.
lab_ready_signal() {
	echo ready | timeout "$2" busybox nc -l -p "$1" >/dev/null 2>&1 &
}

# lab_ready_wait PORT SECONDS TAG: (client) waits until the server guest says
# its server listens (lab_ready_signal), or fails the test.
lab_ready_wait() {
	n=$(($2 * 5))
	while [ "$n" -gt 0 ]; do
		if [ "$(timeout 2 busybox nc "$LAB_PEER_IP" "$1" </dev/null 2>/dev/null)" = ready ]; then
			return 0
		fi
		sleep 0.2
		n=$((n - 1))
	done
	lab_fail "$3: the server guest ($LAB_PEER_IP) did not say it was ready within $2 s"
}

# lab_serve_step TAG LIMIT LOG LISTEN PORT READY_PORT COMMAND...: (server)
# starts COMMAND, waits until it listens (LISTEN: tcp or cm, on PORT), tells
# the client and waits for the server to end; fails the test if it did not
# end well.
lab_serve_step() {
	tag=$1
	limit=$2
	log=$3
	kind=$4
	port=$5
	ready=$6
	shift 6
	lab_server_start "$limit" "$log" "$@"
	lab_wait_listen "$kind" "$port" 60 "$tag" "$log"
	lab_ready_signal "$ready" "$limit"
	lab_server_wait
	lab_check_exit "$tag server" "$LAB_SERVER_STATUS" "$log" "$limit"
}

# lab_client_step TAG LIMIT LOG READY_PORT COMMAND...: (client) waits until
# the server guest is ready, runs COMMAND; fails the test if it did not end well.
lab_client_step() {
	tag=$1
	limit=$2
	log=$3
	ready=$4
	shift 4
	lab_ready_wait "$ready" 120 "$tag"
	lab_note "client: $*"
	timeout -k 5 "$limit" stdbuf -oL "$@" >"$log" 2>&1 </dev/null
	lab_check_exit "$tag client" "$?" "$log" "$limit"
}

# lab_pair_step TAG LISTEN PORT SERVER-COMMAND... -- CLIENT-COMMAND...: this
# guest's half of one step of a two-guest test (the server's half when
# LAB_ROLE is server); its output in $LAB_RESULTS/TAG-$LAB_ROLE.log, which
# LAB_STEP_LOG names. The steps of a test use ready ports 9100, 9101, ... in
# order, the same on both guests.
LAB_READY_PORT=9100
lab_pair_step() {
	step_tag=$1
	step_kind=$2
	step_port=$3
	shift 3
	step_server=
	while [ "$1" != -- ]; do
		step_server="$step_server $1"
		shift
	done
	shift
	LAB_STEP_LOG=$LAB_RESULTS/$step_tag-$LAB_ROLE.log
	step_limit=${LAB_CM_TIMEOUT:-120}
	if [ "$LAB_ROLE" = server ]; then
		# shellcheck disable=SC2086 # the server's command, split into words on purpose
		lab_serve_step "$step_tag" "$step_limit" "$LAB_STEP_LOG" "$step_kind" "$step_port" "$LAB_READY_PORT" $step_server
	else
		lab_client_step "$step_tag" "$step_limit" "$LAB_STEP_LOG" "$LAB_READY_PORT" "$@"
	fi
	LAB_READY_PORT=$((LAB_READY_PORT + 1))
}

# lab_pair_pingpong TOOL SIZE ITERS PORT [OPTION...]: an ibv_*_pingpong step
# between the two guests, checked on this guest's side.
lab_pair_pingpong() {
	pp_tool=$1
	pp_size=$2
	pp_iters=$3
	pp_port=$4
	shift 4
	pp_extra="$*"
	pp_tag=$pp_tool-s$pp_size$(echo "$pp_extra" | tr -d ' ')
	set -- -d "$LAB_DEV" -g "$LAB_GID_INDEX" -s "$pp_size" -n "$pp_iters" -p "$pp_port" "$@"
	lab_pair_step "$pp_tag" tcp "$pp_port" "$pp_tool" "$@" -- "$pp_tool" "$@" "$LAB_PEER_IP"
	lab_expect "$LAB_STEP_LOG" "^$((pp_size * pp_iters * 2)) bytes in " "$pp_tag"
	lab_expect "$LAB_STEP_LOG" "^$pp_iters iters in " "$pp_tag"
	lab_reject "$LAB_STEP_LOG" "invalid data|^(Failed status|Completion for unknown|parse WC failed|poll CQ failed)" "$pp_tag"
	lab_summary "$pp_tool -s $pp_size -n $pp_iters $pp_extra with $LAB_PEER_IP: $(grep -h ' iters in ' "$LAB_STEP_LOG")"
}

# lab_pair_verdict WORD: the client's WORD (done, again, fail) reaches the
# server guest: the client offers it on the next ready port and the server
# polls for it; both set LAB_PAIR_VERDICT to it and move to the port after.
lab_pair_verdict() {
	if [ "$LAB_ROLE" = client ]; then
		LAB_PAIR_VERDICT=$1
		echo "$1" | timeout 120 busybox nc -l -p "$LAB_READY_PORT" >/dev/null 2>&1 ||
			lab_fail "the server guest did not collect the verdict '$1' within 120 s (port $LAB_READY_PORT)"
	else
		LAB_PAIR_VERDICT=
		n=0
		while [ "$n" -lt 240 ]; do
			LAB_PAIR_VERDICT=$(timeout 2 busybox nc "$LAB_PEER_IP" "$LAB_READY_PORT" </dev/null 2>/dev/null)
			case "$LAB_PAIR_VERDICT" in done | again | fail) break ;; esac
			sleep 0.5
			n=$((n + 1))
		done
		case "$LAB_PAIR_VERDICT" in
		done | again | fail) ;;
		*) lab_fail "the client guest gave no verdict within 120 s (port $LAB_READY_PORT)" ;;
		esac
	fi
	LAB_READY_PORT=$((LAB_READY_PORT + 1))
}

# lab_pair_perftest TOOL PORT ARGS...: a perftest step between the two guests
# (TOOL's server in the server guest, its client in the client guest, both
# with -d/-x/-p/-F and ARGS); the client's figures go to the notes: MB/s for
# a *_bw tool, microseconds for a *_lat tool (run it with -C: cycles,
# converted with the guest's TSC frequency). A run that measured nothing fails.
# A *_bw tool whose client printed 0 MB/s (under TCG perftest's clock
# calibration fails now and then) runs again, up to 5 times, on ports
# PORT+10, PORT+20, ...: after each run the client says whether to go on
# (lab_pair_verdict), so that both guests take the same steps.
lab_pair_perftest() {
	pt_tool=$1
	pt_port=$2
	shift 2
	pt_attempt=1
	while :; do
		set -- -d "$LAB_DEV" -x "$LAB_GID_INDEX" -p "$pt_port" -F "$@"
		pt_args="$*"
		lab_pair_step "$pt_tool" tcp "$pt_port" "$pt_tool" "$@" -- "$pt_tool" "$@" "$LAB_PEER_IP"
		shift 7
		lab_reject "$LAB_STEP_LOG" "Couldn't|Unable|[Ff]ailed|error|Error" "$pt_tool"
		case "$pt_tool" in
		*_bw) ;;
		*) break ;;
		esac
		pt_verdict=done
		if [ "$LAB_ROLE" = client ]; then
			pt_result=$(grep -E "^ *[0-9]+ +[0-9]+ +[0-9]" "$LAB_STEP_LOG" | tail -n 1 | tr -s ' \t' '  ')
			read -r _ _ _ average _ <<-EOF
				$pt_result
			EOF
			if [ -n "$pt_result" ] && ! echo "$average" | awk '{ exit !($1 > 0) }'; then
				pt_verdict=again
				[ "$pt_attempt" -lt 5 ] || pt_verdict=fail
			fi
			# LAB_PAIR_BW_RETRY=1 (--guest-env): every *_bw step runs twice, as
			# if the first run had measured nothing: the retry path, tested.
			if [ "${LAB_PAIR_BW_RETRY:-0}" = 1 ] && [ "$pt_attempt" = 1 ]; then
				pt_verdict=again
			fi
		fi
		lab_pair_verdict "$pt_verdict"
		case "$LAB_PAIR_VERDICT" in
		done) break ;;
		fail)
			[ "$LAB_ROLE" = client ] ||
				lab_fail "$pt_tool: the client guest measured no bandwidth in $pt_attempt runs (perftest's clock calibration failed)"
			break
			;;
		esac
		lab_note "$pt_tool: run $pt_attempt: perftest's clock calibration failed (BW printed as 0); again"
		cp "$LAB_STEP_LOG" "${LAB_STEP_LOG%.log}-attempt$pt_attempt.log"
		pt_attempt=$((pt_attempt + 1))
		pt_port=$((pt_port + 10))
	done
	[ "$LAB_ROLE" = client ] || return 0
	pt_result=$(grep -E "^ *[0-9]+ +[0-9]+ +[0-9]" "$LAB_STEP_LOG" | tail -n 1 | tr -s ' \t' '  ')
	[ -n "$pt_result" ] || lab_fail "$pt_tool: the client printed no result line: $(lab_tail "$LAB_STEP_LOG")"
	case "$pt_tool" in
	*_bw)
		# "#bytes #iterations BW-peak BW-average MsgRate"
		read -r bytes iters peak average _ <<-EOF
			$pt_result
		EOF
		echo "$average" | awk '{ exit !($1 > 0) }' ||
			lab_fail "$pt_tool: $iters x $bytes B completed, but no bandwidth was measured (perftest's clock calibration failed in $pt_attempt runs): $pt_result"
		lab_summary "$pt_tool $pt_args to $LAB_PEER_IP: $iters x $bytes B: peak $peak MB/s, average $average MB/s (run $pt_attempt)"
		;;
	*)
		# "#bytes #iterations t_min t_max t_typical t_avg ...", in cycles (-C)
		read -r bytes iters t_min _ t_typical t_avg _ <<-EOF
			$pt_result
		EOF
		mhz=$(lab_tsc_mhz)
		[ -n "$t_avg" ] && [ -n "$mhz" ] || lab_fail "$pt_tool: cannot read the figures of '$pt_result' (TSC ${mhz:-unknown} MHz)"
		lab_summary "$pt_tool $pt_args to $LAB_PEER_IP: $iters x $bytes B: $(echo "$t_min $t_typical $t_avg $mhz" | awk '{
			printf "min %.1f, typical %.1f, average %.1f us", $1 / $4, $2 / $4, $3 / $4 }')"
		;;
	esac
}
