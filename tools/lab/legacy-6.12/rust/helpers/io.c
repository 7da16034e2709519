// SPDX-License-Identifier: GPL-2.0

#include <linux/io.h>

u32 rust_helper_readl(const void __iomem *addr)
{
	return readl(addr);
}

void rust_helper_writel(u32 value, void __iomem *addr)
{
	writel(value, addr);
}

void rust_helper_mb(void)
{
	mb();
}

void rust_helper_rmb(void)
{
	rmb();
}

void rust_helper_wmb(void)
{
	wmb();
}
