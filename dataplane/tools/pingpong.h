/* SPDX-License-Identifier: Apache-2.0 */
/* pingpong.h - what the ping-pong floors (udp-pp, xsk-floor) share: the
 * stop flag their signal handler sets, the monotonic clock, and the round
 * trips kept and printed the same way, so that their figures stay
 * comparable: after 400 ms of warm-up (like sockperf), without the last
 * 50 ms, half round trips in usec, printed in sockperf's words.
 * Header-only: each tool is one C file (see Makefile). */
#ifndef TS_TOOLS_PINGPONG_H
#define TS_TOOLS_PINGPONG_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile sig_atomic_t stop;

static inline void on_sig(int s)
{
	(void)s;
	stop = 1;
}

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* the round trips of one ping run: [warm, end - 50 ms) of [start, end) */
struct pp_lat {
	double *lat;
	size_t n, cap;
	uint64_t start, end, warm;
};

/* 0, or -1 (errno ENOMEM) when there is no room for the samples */
static inline int pp_lat_init(struct pp_lat *l, double secs)
{
	l->cap = 4000000;
	l->n = 0;
	l->lat = calloc(l->cap, sizeof(double));
	l->start = now_ns();
	l->end = l->start + (uint64_t)(secs * 1e9);
	l->warm = l->start + 400000000ull; /* like sockperf: skip the first 400 ms */
	return l->lat ? 0 : -1;
}

/* one round trip sent at t0 and answered at t1 */
static inline void pp_lat_add(struct pp_lat *l, uint64_t t0, uint64_t t1)
{
	if (t0 >= l->warm && t1 < l->end - 50000000ull && l->n < l->cap)
		l->lat[l->n++] = (double)(t1 - t0) / 2000.0;
}

static inline int pp_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* 1 (and a line on stderr) when no round trip was measured, else 0 with
 * the samples sorted: the caller prints its "observations" line, then
 * pp_lat_print the percentiles */
static inline int pp_lat_sort(struct pp_lat *l, const char *tool)
{
	if (!l->n) {
		fprintf(stderr, "%s: no round trips measured\n", tool);
		return 1;
	}
	qsort(l->lat, l->n, sizeof(double), pp_cmp);
	return 0;
}

/* max, p99.9, p99, p50 and min of the sorted samples as sockperf's
 * "TOOL: ---> ..." lines; frees the samples */
static inline void pp_lat_print(struct pp_lat *l, const char *tool)
{
	const double *lat = l->lat;
	size_t n = l->n;

	printf("%s: ---> <MAX> observation = %.3f\n", tool, lat[n - 1]);
	printf("%s: ---> percentile 99.900 = %.3f\n", tool, lat[(size_t)((double)n * 0.999)]);
	printf("%s: ---> percentile 99.000 = %.3f\n", tool, lat[(size_t)((double)n * 0.99)]);
	printf("%s: ---> percentile 50.000 = %.3f\n", tool, lat[n / 2]);
	printf("%s: ---> <MIN> observation = %.3f\n", tool, lat[0]);
	free(l->lat);
	l->lat = NULL;
}

#endif
