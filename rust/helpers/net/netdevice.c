// SPDX-License-Identifier: GPL-2.0

#include <linux/netdevice.h>

#ifdef CONFIG_NET

__rust_helper void rust_helper_netdev_hold(struct net_device *dev,
					   netdevice_tracker *tracker, gfp_t gfp)
{
	netdev_hold(dev, tracker, gfp);
}

__rust_helper void rust_helper_netdev_put(struct net_device *dev,
					  netdevice_tracker *tracker)
{
	netdev_put(dev, tracker);
}

__rust_helper bool rust_helper_netif_carrier_ok(const struct net_device *dev)
{
	return netif_carrier_ok(dev);
}

__rust_helper bool rust_helper_netif_running(const struct net_device *dev)
{
	return netif_running(dev);
}

#endif
