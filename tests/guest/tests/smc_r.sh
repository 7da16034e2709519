#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# lab-about: SMC-R between two processes of one guest: smc and smc_diag loaded, a user EID added (SMC-Rv2 needs one), lo paired with the device's port 1 in SMC's pnet table (a connection to the guest's own address runs over lo, which no RDMA port has); first, what ibv_query_qp reports of a new QP in RESET, as SMC sizes its rings by it (smc_pingpong qp-caps: at least SMC's work requests and SGEs, within the device's maxima, or the test fails before SMC makes a link); smc_pingpong (AF_SMC) sends 4 MiB, then 64 KiB + 1 over a second connection, each byte checked by the server and again in its echo by the client; on each end SMC_DIAG reports mode SMCR, not a fallback to TCP, on the device's port 1, over a GID of the version's type (SMC-Rv1 over RoCE v1 at version 17 on 127.0.0.1, SMC-Rv2 over the RoCE v2 GID of 192.0.2.1 from 18); dmesg free of kernel reports
# lab-timeout: 300
# lab-versions: 17
# lab-runs-last: loads smc, an RDMA client of the device that keeps its link groups (QPs, MRs) until the driver goes
. "$LAB_DIR/lib.sh"

R=$LAB_RESULTS
log() { lab_note "$*"; }
. "$LAB_DIR/modules.sh"
. "$LAB_DIR/smc.sh"
smc_up

# A connection to the guest's own address is routed over lo: SMC takes the
# route's netdev (smc_pnet_find_roce_resource) and, with no PNET ID for it,
# the RDMA port whose netdev it is (smc_pnet_find_rdma_dev). No port has lo,
# so with an empty pnet table both ends find no device and fall back
# (SMC_CLC_DECL_NOSMCDEV). The pnet table pairs lo with LAB_DEV port 1 under
# one PNET ID, which SMC then matches (_smc_pnet_find_roce_by_pnetid).
timeout 30 /tmp/smc_pingpong pnet LABLO lo "$LAB_DEV" >"$R/smc-pnet.log" 2>&1 ||
	lab_fail "$(lab_tail "$R/smc-pnet.log")"
cat "$R/smc-pnet.log"

# Which address: SMC-Rv1 (version 17) puts the IPv4 prefix of the route's
# netdev that holds the source address into its proposal, which the server
# must match on its own (smc_clc.c smc_clc_prfx_set, smc_clc_prfx_match):
# over lo that is 127.0.0.1 (192.0.2.1 is not on lo). SMC-Rv2 (from 18)
# sends no prefix and takes the RoCE v2 GID of an address of the source's
# subnet on the GID's netdev (smc_ib.c smc_ib_determine_gid_rcu): 192.0.2.1,
# on the vmxnet3 (127.0.0.1 has no GID).
if [ "$LAB_DEVICE_VERSION" -ge 18 ]; then
	addr=$LAB_IP
else
	addr=127.0.0.1
fi

# smc_pair TAG PORT BYTES: an smc_pingpong server and client over $addr.
smc_pair() {
	tag=$1
	srv=$R/$tag-server.log
	cli=$R/$tag-client.log
	from=$(dmesg | wc -l)
	lab_server_start 120 "$srv" /tmp/smc_pingpong server "$2" "$3"
	lab_wait_listen tcp "$2" 60 "$tag" "$srv"
	lab_client_run 120 "$cli" /tmp/smc_pingpong client "$addr" "$2" "$3"
	smc_dmesg "$tag" "$from"
	smc_fallback "$tag client" "$cli"
	smc_fallback "$tag server" "$srv"
	lab_check_pair "$tag" 120 "$srv" "$cli"
	lab_expect "$srv" "^smc_pingpong server: $3 bytes received, verified and echoed\$" "$tag"
	lab_expect "$cli" "^smc_pingpong client: $3 bytes sent, echoed and verified\$" "$tag"
	smc_link "$tag server" "$srv" "$addr" "$addr"
	smc_link "$tag client" "$cli" "$addr" "$addr"
	lab_summary "$tag: $3 bytes to $addr and back, verified; $SMC_LINK; $(grep -m 1 '^smc: conn ' "$cli" | sed 's/^smc: //')"
}

smc_pair smc-first 7600 4194304
# A second connection between the same ends (SMC keeps their link group for it).
smc_pair smc-again 7601 65537
