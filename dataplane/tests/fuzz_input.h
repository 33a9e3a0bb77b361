/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_input.h - a libFuzzer input read a byte at a time (the fuzz
 * targets' programs are decoded from it); past its end, zeros. */
#ifndef TS_FUZZ_INPUT_H
#define TS_FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>

struct in {
	const uint8_t *p;
	size_t n;
};

static inline unsigned take(struct in *in)
{
	if (!in->n)
		return 0;
	in->n--;
	return *in->p++;
}

#endif
