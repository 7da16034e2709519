# SPDX-License-Identifier: GPL-2.0
# SMC-R (AF_SMC sockets over the pvrdma device), sourced by the SMC tests
# after lib.sh and modules.sh (which need R and log()). smc_pingpong.c does the connections and the
# configuration Debian's missing smc-tools would.
#
# How SMC picks the device (net/smc, Linux 7.3): for the connection's TCP
# route it takes the route's netdev, and with no PNET ID for it (there is
# none off s390 and none in an empty pnet table) the RDMA port whose netdev
# it is (smc_pnet.c smc_pnet_find_roce_by_pnetid, smc_pnet_find_rdma_dev):
# the vmxnet3 and LAB_DEV port 1. SMC-Rv1 then needs a RoCE v1 GID, SMC-Rv2
# a RoCE v2 GID holding an IPv4 address of the netdev's subnet (smc_ib.c
# smc_ib_determine_gid_rcu). The device has RoCE v1 GIDs only at version 17
# and RoCE v2 GIDs only from 18: SMC-Rv1 at 17, SMC-Rv2 from 18. SMC-Rv2 is
# proposed and accepted only when both ends have a user EID in common
# (af_smc.c smc_find_proposal_devices: smc_clc_ueid_count(); off s390 there
# is no system EID), so both load one.

# The user EID of the lab's SMC-Rv2 connections.
SMC_UEID=PVRDMA-LAB
# The port's GID type of an SMC-R link at this device version, and the SMC-R
# version it makes.
if [ "$LAB_DEVICE_VERSION" -ge 18 ]; then
	SMC_GID_TYPE="RoCE v2"
	SMC_VERSION=SMC-Rv2
else
	SMC_GID_TYPE="IB/RoCE v1"
	SMC_VERSION=SMC-Rv1
fi

# smc_up: builds smc_pingpong, loads smc (after dibs, its dependency) and
# smc_diag, adds the user EID and waits until SMC has LAB_DEV's port 1 as
# active (it reads the port's attributes in a work item once it finds the
# device: a connection before that falls back).
smc_up() {
	lab_build_test smc_pingpong
	for m in smc smc_diag; do
		path=$(lab_module_path "$m") ||
			lab_fail "module $m is not built in $LAB_KDIR (the kernel needs CONFIG_SMC=m and CONFIG_SMC_DIAG=m)"
		lab_load_module "$path" || lab_fail "insmod $m: $LAB_INSMOD_ERROR"
	done
	# What SMC will learn of its QPs, before it makes one: a driver that
	# answers a QP in RESET without its capabilities gets SMC-R links that
	# set up no work request, whose connections never move and whose link
	# groups then hold rmmod for ever.
	timeout 30 /tmp/smc_pingpong qp-caps "$LAB_DEV" >"$R/smc-qp-caps.log" 2>&1 ||
		lab_fail "$(lab_tail "$R/smc-qp-caps.log")"
	cat "$R/smc-qp-caps.log"
	timeout 30 /tmp/smc_pingpong ueid "$SMC_UEID" >"$R/smc-ueid.log" 2>&1 ||
		lab_fail "$(lab_tail "$R/smc-ueid.log")"
	timeout 30 /tmp/smc_pingpong wait "$LAB_DEV" 20 >"$R/smc-wait.log" 2>&1 ||
		lab_fail "$(lab_tail "$R/smc-wait.log")"
	cat "$R/smc-ueid.log" "$R/smc-wait.log"
	SMC_MAX_CQE=$(ibv_devinfo -v -d "$LAB_DEV" 2>/dev/null | sed -n 's/^[[:space:]]*max_cqe:[[:space:]]*\([0-9]*\).*/\1/p')
}

# smc_fallback WHAT LOG: fails if LOG says the connection fell back to TCP,
# with the reasons and, for an internal error on a device whose CQs are
# smaller than SMC's, the likely cause.
smc_fallback() {
	line=$(grep -m 1 '^smc: mode FALLBACK' "$2") || return 0
	hint=
	case $line in
	*INTERR*)
		if [ -n "$SMC_MAX_CQE" ] && [ "$SMC_MAX_CQE" -lt 32768 ]; then
			hint=" (SMC creates its two CQs per device with 32766 entries, net/smc/smc_ib.c SMC_MAX_CQE, more than $LAB_DEV's max_cqe of $SMC_MAX_CQE: both drivers refuse them with EINVAL, and the link group is not made)"
		fi
		;;
	esac
	lab_fail "$1: $line$hint"
}

# smc_link WHAT LOG ADDR PEER_ADDR: checks LOG's SMC_DIAG line: SMC-R on
# LAB_DEV port 1, over a GID of port 1's table of the version's type; from
# version 18 (SMC-Rv2) the GIDs of ADDR and PEER_ADDR (the connection's
# addresses). Sets SMC_LINK to what it found.
smc_link() {
	line=$(grep -m 1 '^smc: mode SMCR, ' "$2") ||
		lab_fail "$1: SMC_DIAG did not report SMC-R: $(lab_tail "$2")"
	where=$(echo "$line" | sed -n 's/^smc: mode SMCR, device \([^ ]*\) port \([0-9]*\),.*/\1 port \2/p')
	gid=$(echo "$line" | sed -n 's/.*, gid \([0-9a-f:]*\), peer gid \([0-9a-f:]*\)$/\1/p')
	peer=$(echo "$line" | sed -n 's/.*, gid \([0-9a-f:]*\), peer gid \([0-9a-f:]*\)$/\2/p')
	[ "$where" = "$LAB_DEV port 1" ] || lab_fail "$1: the link is on '$where', not $LAB_DEV port 1: $line"
	port=/sys/class/infiniband/$LAB_DEV/ports/1
	i=0
	index=
	while [ -r "$port/gids/$i" ]; do
		if [ "$(cat "$port/gids/$i" 2>/dev/null)" = "$gid" ]; then
			index=$i
			break
		fi
		i=$((i + 1))
	done
	[ -n "$index" ] || lab_fail "$1: the link's GID $gid is not in $port/gids"
	type=$(cat "$port/gid_attrs/types/$index" 2>&1)
	[ "$type" = "$SMC_GID_TYPE" ] ||
		lab_fail "$1: the link's GID $gid (index $index) is '$type', not '$SMC_GID_TYPE' at device version $LAB_DEVICE_VERSION"
	if [ "$LAB_DEVICE_VERSION" -ge 18 ]; then
		[ "$gid" = "$(lab_ipv4_gid "$3")" ] ||
			lab_fail "$1: the link's GID is $gid, not $3's: $line"
		[ "$peer" = "$(lab_ipv4_gid "$4")" ] ||
			lab_fail "$1: the link's peer GID is $peer, not $4's: $line"
	fi
	SMC_LINK="$SMC_VERSION on $LAB_DEV port 1, GID $index ($gid, $type), peer GID $peer"
}

# smc_dmesg WHAT FROM: the kernel messages after line FROM of dmesg, kept in
# $R/WHAT-dmesg.txt and checked (lab_dmesg_check).
smc_dmesg() {
	dmesg | tail -n +"$(($2 + 1))" >"$R/$1-dmesg.txt"
	lab_dmesg_check "$R/$1-dmesg.txt" "$1: dmesg"
}
