// SPDX-License-Identifier: Apache-2.0
/* config.c - settings from the environment (TICKSTACK_*) and profiles. */
#include "ts_internal.h"

#include <linux/if_link.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct ts_config ts_cfg;

static void vlog(const char *fmt, va_list ap)
{
	char buf[512];
	int n;

	n = snprintf(buf, sizeof(buf), "tickstack[%d]: ", (int)getpid());
	if (n < 0)
		return;
	vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
	n = (int)strlen(buf);
	if (n < (int)sizeof(buf) - 1 && (n == 0 || buf[n - 1] != '\n')) {
		buf[n++] = '\n';
		buf[n] = 0;
	}
	if (ts_real_write)
		(void)!ts_real_write(2, buf, (size_t)n);
}

__thread int ts_log_quiet;

void ts_log(const char *fmt, ...)
{
	va_list ap;

	if (ts_log_quiet && !ts_cfg.debug)
		return;
	va_start(ap, fmt);
	vlog(fmt, ap);
	va_end(ap);
}

void ts_dbg(const char *fmt, ...)
{
	va_list ap;

	if (!ts_cfg.debug)
		return;
	va_start(ap, fmt);
	vlog(fmt, ap);
	va_end(ap);
}

static int env_long(const char *name, long min, long max, long *out)
{
	const char *v = getenv(name);
	char *end;
	long x;

	if (!v || !*v)
		return 0;
	errno = 0;
	x = strtol(v, &end, 10);
	if (errno || *end || x < min || x > max) {
		ts_log("invalid %s=%s: expected an integer in [%ld, %ld]; fix or "
		       "unset it",
		       name, v, min, max);
		return -EINVAL;
	}
	*out = x;
	return 1;
}

static int env_bool(const char *name, int *out)
{
	long x;
	int r = env_long(name, 0, 1, &x);

	if (r > 0)
		*out = (int)x;
	return r;
}

/* Profiles set defaults; explicit TICKSTACK_* variables win. */
static int apply_profile(const char *p)
{
	if (!p || !*p || !strcmp(p, "default")) {
		ts_cfg.spin_usec = 50;
		ts_cfg.kernel_poll_ns = 20000;
		snprintf(ts_cfg.profile, sizeof(ts_cfg.profile), "default");
		return 0;
	}
	if (!strcmp(p, "latency")) {
		/* spin 100 ms before sleeping (OpenOnload's EF_POLL_USEC=100000) */
		ts_cfg.spin_usec = 100000;
		ts_cfg.kernel_poll_ns = 100000;
		snprintf(ts_cfg.profile, sizeof(ts_cfg.profile), "latency");
		return 0;
	}
	if (!strcmp(p, "throughput")) {
		ts_cfg.spin_usec = 20;
		ts_cfg.kernel_poll_ns = 20000;
		ts_cfg.sockq_len = 4096;
		/* a deep fill ring from the start: a TCP stream's window
		 * arrives faster than a shallow one is topped up */
		ts_cfg.fill_frames = 4096;
		snprintf(ts_cfg.profile, sizeof(ts_cfg.profile), "throughput");
		return 0;
	}
	ts_log("invalid TICKSTACK_PROFILE=%s: use latency, throughput or "
	       "default",
	       p);
	return -EINVAL;
}

/* TICKSTACK_XDP_MODE: "native", "skb" (generic), "auto", "zerocopy",
 * "copy", or one of the first three and one of the last two, with a comma
 * ("native,zerocopy"). zerocopy alone means native too: generic XDP has no
 * zero-copy. */
static int xdp_mode_parse(const char *v)
{
	char buf[64], *tok, *save = NULL;
	int xdp = 0, bind = 0;

	if (strlen(v) >= sizeof(buf))
		return -EINVAL;
	snprintf(buf, sizeof(buf), "%s", v);
	snprintf(ts_cfg.xdp_mode_str, sizeof(ts_cfg.xdp_mode_str), "%s", v);
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "native") || !strcmp(tok, "drv")) {
			if (xdp++)
				return -EINVAL;
			ts_cfg.xdp_mode_auto = 0;
			ts_cfg.xdp_mode = XDP_FLAGS_DRV_MODE;
		} else if (!strcmp(tok, "skb") || !strcmp(tok, "generic")) {
			if (xdp++)
				return -EINVAL;
			ts_cfg.xdp_mode_auto = 0;
			ts_cfg.xdp_mode = XDP_FLAGS_SKB_MODE;
		} else if (!strcmp(tok, "auto")) {
			if (xdp++)
				return -EINVAL;
		} else if (!strcmp(tok, "zerocopy") || !strcmp(tok, "zc")) {
			if (bind++)
				return -EINVAL;
			ts_cfg.xdp_bind = TS_BIND_ZEROCOPY;
		} else if (!strcmp(tok, "copy")) {
			if (bind++)
				return -EINVAL;
			ts_cfg.xdp_bind = TS_BIND_COPY;
		} else {
			return -EINVAL;
		}
	}
	if (!xdp && !bind)
		return -EINVAL;
	if (ts_cfg.xdp_bind == TS_BIND_ZEROCOPY) {
		if (!ts_cfg.xdp_mode_auto && ts_cfg.xdp_mode == XDP_FLAGS_SKB_MODE)
			return -EINVAL;
		ts_cfg.xdp_mode_auto = 0;
		ts_cfg.xdp_mode = XDP_FLAGS_DRV_MODE;
	}
	return 0;
}

int ts_config__load(void)
{
	const char *v;
	long x;
	int err = 0, r;

	memset(&ts_cfg, 0, sizeof(ts_cfg));
	ts_cfg.xdp_mode = XDP_FLAGS_DRV_MODE;
	ts_cfg.xdp_mode_auto = 1;
	ts_cfg.udp_csum = 1;
	ts_cfg.tx_csum_offload = 1;
	ts_cfg.umem_frames = 8192;
	ts_cfg.fill_frames = 256;
	ts_cfg.xdpd_wait_ms = 30000; /* a rolling update of the daemon: 5-6 s on a loaded 2-CPU node */
	ts_cfg.sockq_len = 1024;
	ts_cfg.yield_ns = 500000;

	if (apply_profile(getenv("TICKSTACK_PROFILE")) < 0)
		err = -EINVAL;
	if (env_long("TICKSTACK_SPIN_USEC", -1, 3600L * 1000000, &x) > 0)
		ts_cfg.spin_usec = x;
	else if (errno == EINVAL && getenv("TICKSTACK_SPIN_USEC"))
		err = -EINVAL;
	if (env_long("TICKSTACK_KERNEL_POLL_USEC", 1, 10L * 1000000, &x) > 0)
		ts_cfg.kernel_poll_ns = (uint64_t)x * 1000;
	if (env_long("TICKSTACK_SPIN_YIELD_USEC", 0, 10L * 1000000, &x) > 0)
		ts_cfg.yield_ns = (uint64_t)x * 1000;
	v = getenv("TICKSTACK_QUEUE");
	if (v && !strcmp(v, "any"))
		ts_cfg.queue_any = 1;
	else if (env_long("TICKSTACK_QUEUE", 0, 63, &x) > 0) {
		ts_cfg.queue = (int)x;
		ts_cfg.queue_set = 1;
	} else if (v && *v)
		err = -EINVAL;
	if (env_long("TICKSTACK_UMEM_FRAMES", 1024, 1 << 18, &x) > 0)
		ts_cfg.umem_frames = (uint32_t)x;
	r = env_long("TICKSTACK_FILL_FRAMES", 64, 4096, &x);
	if (r > 0)
		ts_cfg.fill_frames = (uint32_t)x;
	else if (r < 0)
		err = -EINVAL;
	if (env_long("TICKSTACK_SOCKQ_LEN", 16, 1 << 16, &x) > 0)
		ts_cfg.sockq_len = (uint32_t)x;
	if (env_bool("TICKSTACK_REQUIRE", &ts_cfg.require) < 0)
		err = -EINVAL;
	if (env_bool("TICKSTACK_UDP_CSUM", &ts_cfg.udp_csum) < 0)
		err = -EINVAL;
	if (env_bool("TICKSTACK_TX_CSUM_OFFLOAD", &ts_cfg.tx_csum_offload) < 0)
		err = -EINVAL;
	if (env_bool("TICKSTACK_STATS", &ts_cfg.stats_dump) < 0)
		err = -EINVAL;
	if (env_bool("TICKSTACK_DEBUG", &ts_cfg.debug) < 0)
		err = -EINVAL;
	if (env_bool("TICKSTACK_DISABLE", &ts_cfg.disabled) < 0)
		err = -EINVAL;
	if (env_bool("TICKSTACK_RX_HWTSTAMP", &ts_cfg.rx_hwtstamp) < 0)
		err = -EINVAL;
	v = getenv("TICKSTACK_STATS_FILE");
	if (v && *v) {
		snprintf(ts_cfg.stats_file, sizeof(ts_cfg.stats_file), "%s", v);
		ts_cfg.stats_dump = 1;
	}
	v = getenv("TICKSTACK_XDPD_SOCKET");
	if (v && *v) {
		if (v[0] != '/' || strlen(v) >= sizeof(ts_cfg.xdpd_socket)) {
			ts_log("invalid TICKSTACK_XDPD_SOCKET=%s: an absolute path "
			       "of at most %zu bytes (the pod's xdp.sock)",
			       v, sizeof(ts_cfg.xdpd_socket) - 1);
			err = -EINVAL;
		} else {
			snprintf(ts_cfg.xdpd_socket, sizeof(ts_cfg.xdpd_socket),
				 "%s", v);
		}
	}
	/* how long a request waits for a daemon that restarts */
	switch (env_long("TICKSTACK_XDPD_WAIT_MS", 0, 60000, &x)) {
	case 1:
		ts_cfg.xdpd_wait_ms = (int)x;
		break;
	case -EINVAL:
		err = -EINVAL;
		break;
	}
	/* how a pod's XSK is made when the daemon serves it: by the daemon
	 * from the process's memfd (no capability), or by the process
	 * itself (the fallback: CAP_NET_RAW, and CAP_IPC_LOCK or memlock) */
	v = getenv("TICKSTACK_XDPD_MODE");
	if (v && *v) {
		if (!strcmp(v, "memfd"))
			ts_cfg.xdpd_netraw = 0;
		else if (!strcmp(v, "netraw"))
			ts_cfg.xdpd_netraw = 1;
		else {
			ts_log("invalid TICKSTACK_XDPD_MODE=%s: memfd (the "
			       "default: the daemon makes the XSK) or netraw "
			       "(the process makes it, with CAP_NET_RAW)", v);
			err = -EINVAL;
		}
	}
	v = getenv("TICKSTACK_IFACES");
	if (v)
		snprintf(ts_cfg.ifaces, sizeof(ts_cfg.ifaces), "%s", v);
	v = getenv("TICKSTACK_XDP_MODE");
	if (v && *v && xdp_mode_parse(v) < 0) {
		ts_log("invalid TICKSTACK_XDP_MODE=%s: a comma list of at most "
		       "one XDP mode (native, skb or auto) and one bind mode "
		       "(zerocopy or copy; zerocopy needs native), e.g. "
		       "native,zerocopy",
		       v);
		err = -EINVAL;
	}
	return err;
}
