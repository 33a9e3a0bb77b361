// SPDX-License-Identifier: Apache-2.0
/* check.h - what the unit tests (test_pkt, test_sock) share: CHECK, which
 * counts a failed condition and goes on with the test, and check_exit, the
 * end of their main. */
#ifndef TICKSTACK_TESTS_CHECK_H
#define TICKSTACK_TESTS_CHECK_H

#include <stdio.h>

static int failures;

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "FAIL %s:%d %s: %s: ", __FILE__,       \
				__LINE__, __func__, #cond);                    \
			fprintf(stderr, __VA_ARGS__);                          \
			fprintf(stderr, "\n");                                 \
			failures++;                                            \
		}                                                              \
	} while (0)

/* check_exit NAME: main's exit status, 1 after any failed CHECK */
static int check_exit(const char *name)
{
	if (failures) {
		fprintf(stderr, "%s: %d failure(s)\n", name, failures);
		return 1;
	}
	printf("%s: all tests passed\n", name);
	return 0;
}

#endif
