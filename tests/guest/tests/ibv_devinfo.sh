#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# lab-about: ibv_devinfo -v shows the pvrdma device, port 1 PORT_ACTIVE, link layer Ethernet, the GID of 192.0.2.1, a non-zero node GUID and system image GUID (the C driver's 0 is noted), a page_size_cap with the page size (the C driver's 0 on the stock model is noted); rdma link shows the link, rdma dev the device (node type ca, the same node GUID)
# lab-timeout: 120
. "$LAB_DIR/lib.sh"

out=$LAB_RESULTS/ibv_devinfo-v.txt
timeout 60 ibv_devinfo -v -d "$LAB_DEV" >"$out" 2>&1
lab_check_exit "ibv_devinfo -v -d $LAB_DEV" $? "$out" 60

# rdma-core's vmw_pvrdma provider bound to the device: otherwise libibverbs
# lists no device at all and ibv_devinfo fails above.
lab_expect "$out" "^hca_id:[[:space:]]+$LAB_DEV\$" "device"
# (vendor_id is the device's caps.vendor_id, which QEMU 7.2 leaves 0; the PCI
# vendor is checked in sysfs below.)
lab_expect "$out" "^[[:space:]]+vendor_part_id:[[:space:]]+2080\$" "pvrdma part id (0x0820)"
lab_expect "$out" "^[[:space:]]+phys_port_cnt:[[:space:]]+1\$" "one port"
lab_expect "$out" "^[[:space:]]+port:[[:space:]]+1\$" "port 1"
lab_expect "$out" "^[[:space:]]+state:[[:space:]]+PORT_ACTIVE \(4\)\$" "port state"
lab_expect "$out" "^[[:space:]]+link_layer:[[:space:]]+Ethernet\$" "link layer"
gid=$(lab_devinfo_gid "$LAB_IP")
lab_expect "$out" "^[[:space:]]+GID\[ *$LAB_GID_INDEX\]:[[:space:]]+$gid\$" "GID of $LAB_IP"
lab_note "ibv_devinfo: $LAB_DEV port 1 PORT_ACTIVE, Ethernet, GID[$LAB_GID_INDEX] $(lab_ipv4_gid "$LAB_IP") (device version $LAB_DEVICE_VERSION: $(lab_devinfo_gid "$LAB_IP" | sed 's/.*, //'))"

# The system image GUID: QEMU's model leaves it 0, which rdma-core takes for
# "none"; the Rust driver reports the node GUID then, the C driver the 0.
node_guid=$(sed -n 's/^[[:space:]]*node_guid:[[:space:]]*//p' "$out")
image_guid=$(sed -n 's/^[[:space:]]*sys_image_guid:[[:space:]]*//p' "$out")
[ -n "$node_guid" ] && [ "$node_guid" != 0000:0000:0000:0000 ] || lab_fail "node_guid is '$node_guid'"
if [ "$image_guid" = 0000:0000:0000:0000 ] && [ "${LAB_DRIVER:-}" = c ]; then
	lab_note "sys_image_guid 0 (the C driver reports the device model's unset value)"
elif [ -z "$image_guid" ] || [ "$image_guid" = 0000:0000:0000:0000 ]; then
	lab_fail "sys_image_guid is '$image_guid' (node_guid $node_guid)"
else
	lab_note "sys_image_guid $image_guid (node_guid $node_guid)"
fi

# The page sizes memory regions may use: the verbs spec wants the system's
# page size among them. QEMU 7.2's model leaves the mask 0, which the C driver
# passes on; the patched model reports 4 KiB, and the Rust driver adds the page
# size it builds page directories from whatever the device says.
page_cap=$(sed -n 's/^[[:space:]]*page_size_cap:[[:space:]]*//p' "$out")
page_size=$(getconf PAGESIZE)
[ -n "$page_cap" ] || lab_fail "ibv_devinfo -v shows no page_size_cap"
if [ $((page_cap & page_size)) -ne 0 ]; then
	lab_note "page_size_cap $page_cap (page size $page_size)"
elif [ "$page_cap" = 0x0 ] || [ "$page_cap" = 0 ]; then
	if [ "${LAB_DRIVER:-}" = c ] && [ "${LAB_MODEL:-}" = stock ]; then
		lab_note "page_size_cap 0 (the C driver reports QEMU 7.2's unset value)"
	else
		lab_fail "page_size_cap is 0 (page size $page_size)"
	fi
else
	lab_fail "page_size_cap $page_cap lacks the page size $page_size"
fi

# The kernel side of the same facts.
driver=$(basename "$(readlink "/sys/class/infiniband/$LAB_DEV/device/driver")")
lab_note "PCI driver bound to $LAB_DEV: $driver"
[ "$(cat "/sys/class/infiniband/$LAB_DEV/device/vendor")" = 0x15ad ] || lab_fail "PCI vendor of $LAB_DEV is not 0x15ad"
[ "$(cat "/sys/class/infiniband/$LAB_DEV/device/device")" = 0x0820 ] || lab_fail "PCI device of $LAB_DEV is not 0x0820"
netdev=$(cat "/sys/class/infiniband/$LAB_DEV/ports/1/gid_attrs/ndevs/$LAB_GID_INDEX" 2>/dev/null)
[ "$netdev" = "$LAB_NETDEV" ] || lab_fail "GID[$LAB_GID_INDEX] belongs to netdev '$netdev', not the vmxnet3 $LAB_NETDEV"

if command -v rdma >/dev/null; then
	link=$LAB_RESULTS/rdma-link.txt
	timeout 30 rdma link show "$LAB_DEV/1" >"$link" 2>&1
	lab_check_exit "rdma link show $LAB_DEV/1" $? "$link" 30
	lab_expect "$link" "^link $LAB_DEV/1 .*state ACTIVE" "rdma link state"
	lab_expect "$link" " physical_state LINK_UP( |\$)" "rdma link physical state"
	lab_expect "$link" " netdev $LAB_NETDEV( |\$)" "rdma link netdev"
	lab_note "rdma link: $(cat "$link")"
	# rdma dev: the device as the RDMA core's netlink shows it, with the GUIDs
	# ibv_devinfo read above.
	dev=$LAB_RESULTS/rdma-dev.txt
	timeout 30 rdma dev show "$LAB_DEV" >"$dev" 2>&1
	lab_check_exit "rdma dev show $LAB_DEV" $? "$dev" 30
	lab_expect "$dev" "^[0-9]+: $LAB_DEV: node_type ca " "rdma dev node type"
	lab_expect "$dev" " node_guid $node_guid( |\$)" "rdma dev node GUID (ibv_devinfo: $node_guid)"
	lab_note "rdma dev: $(cat "$dev")"
else
	lab_note "no rdma tool (iproute2): rdma link and rdma dev not checked"
fi
