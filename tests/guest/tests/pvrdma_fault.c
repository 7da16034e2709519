// SPDX-License-Identifier: GPL-2.0
/*
 * pvrdma_fault: arms a fault of the patched device model's fault injection
 * (tools/qemu/patches/0016): the device misbehaves once, at the next
 * occasion for the kind. It writes the kind to the fault register (BAR 1,
 * offset 0x38) through the PCI function's sysfs resource file, which works
 * whether a driver is bound or not.
 *
 *   pvrdma_fault KIND        arm KIND (a name below)
 *   pvrdma_fault --wait SEC  wait up to SEC seconds for the armed fault to
 *                            happen (the register reads 0); exit 1 if not.
 *                            A late answer (cmd-late-*, cmd-resp-front-to-
 *                            back) happens when its command is taken: the
 *                            answer may still be on its way
 *   pvrdma_fault --pending   print the pending kind's number
 *   pvrdma_fault --open DEV  open RDMA device DEV (ibv_open_device(): the
 *                            driver's CREATE_UC command, the first the
 *                            device sees) and print how that went, with the
 *                            errno a refusal reached user space with (which
 *                            ibv_devinfo does not print); exit 1 if refused
 *   pvrdma_fault --query-port DEV [KIND]
 *                            open DEV, arm KIND if given (so that the next
 *                            command, the port query's QUERY_PORT, is the
 *                            one it hits), query port 1 and print its
 *                            attributes, one per line; exit 1 if the query
 *                            failed
 *
 * The stock model has no such register: it keeps what is written there, so
 * a fault reads back pending for ever (--wait fails) and nothing happens.
 */
#define _GNU_SOURCE /* strerrorname_np() */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define REG_FAULT 0x38
#define BAR1_MAP 4096

/* The kinds, numbered as the device model's PVRDMA_FAULT_* */
static const char *const kinds[] = {
	[1] = "cqe-unknown-qp",
	[2] = "cqe-bad-wr-id",
	[3] = "cq-ring-index",
	[4] = "async-ring-index",
	[5] = "cq-notify-ring-index",
	[6] = "cmd-no-response",
	[7] = "cmd-wrong-response",
	[8] = "irq-storm",
	[9] = "stale-events",
	[10] = "caps",
	[11] = "cqe-reorder",
	[12] = "cq-arm-notify",
	[13] = "cmd-late-response",
	[14] = "cqe-byte-len",
	[15] = "cqe-qp-high-bits",
	[16] = "port-attrs",
	[17] = "cmd-late-15s",
	[18] = "cmd-late-60s",
	[19] = "cmd-resp-front-to-back",
};
#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

/*
 * The kinds that happen as the register is written (and read back as 0 at
 * once); the others wait for their occasion, so a 0 read back right after
 * arming one means the model refused it (a model without that kind).
 */
static const int at_once[NKINDS] = {
	[4] = 1, [5] = 1, [8] = 1, [9] = 1,
};

static int read_hex(const char *dir, const char *file, unsigned long *val)
{
	char path[512], buf[32];
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	f = fopen(path, "r");
	if (!f)
		return -1;
	ok = fgets(buf, sizeof(buf), f) != NULL;
	fclose(f);
	if (!ok)
		return -1;
	*val = strtoul(buf, NULL, 16);
	return 0;
}

/* Maps BAR 1 of the first pvrdma function (15ad:0820). */
static volatile uint32_t *map_regs(void)
{
	const char *base = "/sys/bus/pci/devices";
	char dir[512], path[600];
	struct dirent *e;
	unsigned long vendor, device;
	void *map;
	DIR *d;
	int fd;

	d = opendir(base);
	if (!d) {
		perror(base);
		exit(2);
	}
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(dir, sizeof(dir), "%s/%s", base, e->d_name);
		if (read_hex(dir, "vendor", &vendor) || read_hex(dir, "device", &device))
			continue;
		if (vendor != 0x15ad || device != 0x0820)
			continue;
		closedir(d);
		snprintf(path, sizeof(path), "%s/resource1", dir);
		fd = open(path, O_RDWR | O_SYNC);
		if (fd < 0) {
			perror(path);
			exit(2);
		}
		map = mmap(NULL, BAR1_MAP, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		close(fd);
		if (map == MAP_FAILED) {
			perror("mmap resource1");
			exit(2);
		}
		return map;
	}
	closedir(d);
	fprintf(stderr, "no pvrdma device (15ad:0820)\n");
	exit(2);
}

static unsigned int kind_of(const char *name)
{
	for (unsigned int i = 1; i < NKINDS; i++)
		if (kinds[i] && !strcmp(kinds[i], name))
			return i;
	fprintf(stderr, "unknown fault '%s'; one of:", name);
	for (unsigned int i = 1; i < NKINDS; i++)
		fprintf(stderr, " %s", kinds[i]);
	fprintf(stderr, "\n");
	exit(2);
}

/* Opens RDMA device NAME and closes it again: 0 if it opened, 1 if not, 2 if there is none. */
static int open_device(const char *name)
{
	struct ibv_device **list, **d;
	struct ibv_context *ctx;
	int err, ret = 2;

	list = ibv_get_device_list(NULL);
	if (!list) {
		perror("ibv_get_device_list");
		return 2;
	}
	for (d = list; *d; d++) {
		if (strcmp(ibv_get_device_name(*d), name))
			continue;
		errno = 0;
		ctx = ibv_open_device(*d);
		err = errno;
		if (ctx) {
			printf("open %s: opened\n", name);
			ibv_close_device(ctx);
			ret = 0;
		} else {
			printf("open %s: refused with %s (errno %d: %s)\n", name,
			       strerrorname_np(err) ?: "no errno name", err, strerror(err));
			ret = 1;
		}
		break;
	}
	if (ret == 2)
		fprintf(stderr, "no RDMA device %s\n", name);
	ibv_free_device_list(list);
	return ret;
}

/* Arms the fault named NAME: 0 if armed, 1 if the model refused it. */
static int arm(const char *name)
{
	unsigned int kind = kind_of(name);
	volatile uint32_t *regs = map_regs();
	uint32_t pending;

	regs[REG_FAULT / 4] = kind;
	pending = regs[REG_FAULT / 4];
	/* The faults that happen at once read back as 0 already. */
	if (pending != kind && !(pending == 0 && at_once[kind])) {
		fprintf(stderr, "fault register reads %u after writing %u: %s\n", pending, kind,
			pending ? "no fault injection" : "the model does not know this fault");
		return 1;
	}
	printf("armed %s (%u)%s\n", kinds[kind], kind, pending ? "" : ", happened at once");
	return 0;
}

/*
 * Opens RDMA device NAME, arms fault KIND (if not NULL), queries port 1 and
 * prints what it says: 0 if the query succeeded, 1 if it failed, 2 if there
 * is no such device or the fault could not be armed.
 */
static int query_port(const char *name, const char *kind)
{
	struct ibv_device **list, **d;
	struct ibv_port_attr attr;
	struct ibv_context *ctx = NULL;
	int err, ret = 2;

	list = ibv_get_device_list(NULL);
	if (!list) {
		perror("ibv_get_device_list");
		return 2;
	}
	for (d = list; *d; d++)
		if (!strcmp(ibv_get_device_name(*d), name))
			break;
	if (*d)
		ctx = ibv_open_device(*d);
	if (!ctx) {
		fprintf(stderr, "cannot open RDMA device %s\n", name);
		goto out;
	}
	if (kind && arm(kind))
		goto out;
	memset(&attr, 0, sizeof(attr));
	err = ibv_query_port(ctx, 1, &attr);
	if (err) {
		printf("query port 1 of %s: failed with %s (%d)\n", name,
		       strerrorname_np(err) ?: "no errno name", err);
		ret = 1;
		goto out;
	}
	printf("state %d\nmax_mtu %d\nactive_mtu %d\ngid_tbl_len %d\nport_cap_flags %#x\n"
	       "max_msg_sz %u\npkey_tbl_len %u\nlid %u\nactive_width %u\nactive_speed %u\n"
	       "phys_state %u\nlink_layer %u\n",
	       attr.state, attr.max_mtu, attr.active_mtu, attr.gid_tbl_len, attr.port_cap_flags,
	       attr.max_msg_sz, attr.pkey_tbl_len, attr.lid, attr.active_width, attr.active_speed,
	       attr.phys_state, attr.link_layer);
	ret = 0;
out:
	if (ctx)
		ibv_close_device(ctx);
	ibv_free_device_list(list);
	return ret;
}

int main(int argc, char **argv)
{
	volatile uint32_t *regs;
	uint32_t pending;

	if (argc < 2) {
		fprintf(stderr,
			"usage: %s KIND | --wait SECONDS | --pending | --open DEV | --query-port DEV [KIND]\n",
			argv[0]);
		return 2;
	}
	if (!strcmp(argv[1], "--query-port")) {
		if (argc < 3) {
			fprintf(stderr, "usage: %s --query-port DEV [KIND]\n", argv[0]);
			return 2;
		}
		return query_port(argv[2], argc > 3 ? argv[3] : NULL);
	}
	if (!strcmp(argv[1], "--open")) {
		if (argc < 3) {
			fprintf(stderr, "usage: %s --open DEV\n", argv[0]);
			return 2;
		}
		return open_device(argv[2]);
	}
	if (!strcmp(argv[1], "--pending")) {
		regs = map_regs();
		printf("%u\n", regs[REG_FAULT / 4]);
		return 0;
	}
	if (!strcmp(argv[1], "--wait")) {
		long ms = argc > 2 ? atol(argv[2]) * 1000 : 10000;
		struct timespec tick = { 0, 10 * 1000 * 1000 };

		regs = map_regs();
		for (; ms > 0; ms -= 10) {
			pending = regs[REG_FAULT / 4];
			if (!pending) {
				printf("fault happened\n");
				return 0;
			}
			nanosleep(&tick, NULL);
		}
		printf("fault %u still pending\n", regs[REG_FAULT / 4]);
		return 1;
	}
	return arm(argv[1]);
}
