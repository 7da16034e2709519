// SPDX-License-Identifier: GPL-2.0

#include <linux/completion.h>

void rust_helper_reinit_completion(struct completion *x)
{
	reinit_completion(x);
}
