#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# lab-about: the device's sysfs attributes (hw_rev, hca_type, board_id, node_guid, fw_ver, ...), hw_rev, hca_type and board_id as the C driver gives them, read in the initial network namespace and in a second one (RDMA netns mode shared: the core's compat device) give the same values; dmesg free of oops/WARN (a driver that reaches its device from a compat device's struct device by container_of reads another object: KASAN reports it on a kernel that has KASAN)
# lab-timeout: 120
. "$LAB_DIR/lib.sh"

command -v ip >/dev/null || lab_fail "no ip (iproute2) in the guest"
class=/sys/class/infiniband/$LAB_DEV
[ -d "$class" ] || lab_fail "$class does not exist"

# In exclusive mode a device lives in one namespace only and the second one
# would not see it: the test is about shared mode, the default.
if command -v rdma >/dev/null; then
	mode=$(timeout 10 rdma system show 2>/dev/null)
	case $mode in
	*"netns shared"*) ;;
	*) lab_fail "rdma system is not in netns shared mode: '$mode'" ;;
	esac
fi

ns=lab_sysfs_ns
ip netns del "$ns" 2>/dev/null
timeout 10 ip netns add "$ns" || lab_fail "ip netns add $ns failed"
trap 'ip netns del "$ns" 2>/dev/null' EXIT

# Every regular, readable attribute of the device directory (ports/ and
# power/ are directories, and not what a driver adds).
count=0
for path in "$class"/*; do
	[ -f "$path" ] && [ -r "$path" ] || continue
	name=${path##*/}
	case $name in uevent) continue ;; esac
	here=$(timeout 10 cat "$path" 2>&1) || lab_fail "reading $name in the initial namespace failed: $here"
	# `ip netns exec` mounts a sysfs of the namespace: there the class
	# directory holds the compat device, whose attributes are the same groups.
	there=$(timeout 10 ip netns exec "$ns" cat "/sys/class/infiniband/$LAB_DEV/$name" 2>&1) ||
		lab_fail "reading $name in namespace $ns failed: $there"
	[ "$here" = "$there" ] || lab_fail "$name differs: '$here' here, '$there' in namespace $ns"
	count=$((count + 1))
done
[ "$count" -ge 3 ] || lab_fail "only $count attributes found in $class"
for name in hw_rev hca_type board_id; do
	[ -r "$class/$name" ] || lab_fail "$class has no $name (the driver's attributes)"
done
# The values the C driver gives, which inventory scripts key on (ibstat's
# "CA type" is hca_type): both drivers speak the same device interface.
for expected in "hw_rev 1" "hca_type VMW_PVRDMA-1.0.1.0-k" "board_id 1"; do
	name=${expected%% *}
	value=$(cat "$class/$name")
	[ "$value" = "${expected#* }" ] || lab_fail "$name is '$value', not '${expected#* }' (the C driver's)"
done

lab_summary "$count sysfs attributes of $LAB_DEV read in the initial namespace and in $ns (compat device): identical"
