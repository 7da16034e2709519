// SPDX-License-Identifier: GPL-2.0

#include <linux/mm.h>
#include <net/netlink.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

#ifdef CONFIG_RUST_INFINIBAND_ABSTRACTIONS

__rust_helper struct ib_ucontext *
rust_helper_rdma_udata_to_ucontext(struct ib_udata *udata)
{
	return udata ? rdma_udata_to_uverbs_attr_bundle(udata)->context : NULL;
}

__rust_helper struct ib_udata *
rust_helper_uverbs_attr_bundle_udata(struct uverbs_attr_bundle *attrs)
{
	return attrs ? &attrs->driver_udata : NULL;
}

__rust_helper struct ib_device *rust_helper_rdma_device_to_ibdev(struct device *device)
{
	return rdma_device_to_ibdev(device);
}

__rust_helper bool rust_helper_rdma_is_port_valid(const struct ib_device *device,
						  unsigned int port)
{
	return rdma_is_port_valid(device, port);
}

__rust_helper bool rust_helper_rdma_protocol_ib(const struct ib_device *device, u32 port_num)
{
	return rdma_protocol_ib(device, port_num);
}

__rust_helper pgprot_t rust_helper_pgprot_noncached(pgprot_t prot)
{
	return pgprot_noncached(prot);
}

__rust_helper bool rust_helper_ib_device_try_get(struct ib_device *dev)
{
	return ib_device_try_get(dev);
}

__rust_helper size_t rust_helper_ib_umem_num_dma_blocks(struct ib_umem *umem,
							unsigned long pgsz)
{
	return ib_umem_num_dma_blocks(umem, pgsz);
}

__rust_helper struct nlattr *rust_helper_nla_nest_start_noflag(struct sk_buff *skb,
							       int attrtype)
{
	return nla_nest_start_noflag(skb, attrtype);
}

__rust_helper int rust_helper_nla_nest_end(struct sk_buff *skb, struct nlattr *start)
{
	return nla_nest_end(skb, start);
}

__rust_helper void rust_helper_nla_nest_cancel(struct sk_buff *skb, struct nlattr *start)
{
	nla_nest_cancel(skb, start);
}

#endif
