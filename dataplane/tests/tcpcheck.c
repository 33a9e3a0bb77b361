// SPDX-License-Identifier: Apache-2.0
/* tcpcheck.c - stream checks for the harness (an ordinary program, run
 * through the interposer or on the kernel alike):
 *
 *   tcpcheck recv-server PORT OUT    accept one connection, write all it
 *                                    receives to OUT until EOF
 *   tcpcheck send-server PORT IN     accept one connection, send IN, then
 *                                    shut down writing and wait for EOF
 *   tcpcheck send-client HOST PORT IN
 *   tcpcheck recv-client HOST PORT OUT
 *   tcpcheck cycles-server PORT N    N times: accept, read "ping", answer
 *                                    "pong", close first
 *   tcpcheck cycles-client HOST PORT N
 *                                    N times: connect, "ping", read "pong"
 *                                    and EOF, close; then check that its
 *                                    open fds are back where they started
 *
 * Receivers read with read(), recv() and readv() in turn, senders write
 * with write(), send() and writev() in turn, so all three families carry
 * the stream. Exit status 0 on success, 1 with a message otherwise. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

static int die(const char *what)
{
	fprintf(stderr, "tcpcheck: %s: %s\n", what, strerror(errno));
	exit(1);
}

static int listener(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	if (fd < 0)
		die("socket");
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("bind");
	if (listen(fd, 128) < 0)
		die("listen");
	return fd;
}

static int connect_to(const char *host, int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0)
		die("socket");
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
		fprintf(stderr, "tcpcheck: bad address %s\n", host);
		exit(1);
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("connect");
	return fd;
}

static ssize_t rd(int fd, char *buf, size_t len, unsigned k)
{
	struct iovec iov[2] = { { buf, len / 2 }, { buf + len / 2, len - len / 2 } };

	switch (k % 3) {
	case 0:
		return read(fd, buf, len);
	case 1:
		return recv(fd, buf, len, 0);
	default:
		return readv(fd, iov, 2);
	}
}

static ssize_t wr(int fd, const char *buf, size_t len, unsigned k)
{
	struct iovec iov[2] = { { (char *)buf, len / 3 },
				{ (char *)buf + len / 3, len - len / 3 } };

	switch (k % 3) {
	case 0:
		return write(fd, buf, len);
	case 1:
		return send(fd, buf, len, MSG_NOSIGNAL);
	default:
		return writev(fd, iov, 2);
	}
}

static void sink(int fd, const char *out)
{
	static char buf[1 << 16];
	int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	unsigned k = 0;
	ssize_t n;

	if (o < 0)
		die(out);
	while ((n = rd(fd, buf, sizeof(buf) - (k % 7) * 1000, k)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("read");
		}
		if (write(o, buf, (size_t)n) != n)
			die("write file");
		k++;
	}
	close(o);
}

static void source(int fd, const char *in)
{
	static char buf[1 << 16];
	int i = open(in, O_RDONLY);
	unsigned k = 0;
	ssize_t n;

	if (i < 0)
		die(in);
	/* varying chunk sizes, so segment boundaries move */
	while ((n = read(i, buf, sizeof(buf) - (k % 5) * 3001)) > 0) {
		ssize_t off = 0;

		while (off < n) {
			ssize_t w = wr(fd, buf + off, (size_t)(n - off), k++);

			if (w < 0) {
				if (errno == EINTR)
					continue;
				die("write");
			}
			off += w;
		}
	}
	if (n < 0)
		die("read file");
	close(i);
	if (shutdown(fd, SHUT_WR) < 0)
		die("shutdown");
	/* the peer closes after it has read everything */
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		;
	if (n < 0)
		die("read EOF");
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1; /* the directory's own fd */
}

static void expect(int fd, const char *want)
{
	char buf[16];
	size_t got = 0, len = strlen(want);

	while (got < len) {
		ssize_t n = read(fd, buf + got, len - got);

		if (n <= 0)
			die(n == 0 ? "early EOF" : "read");
		got += (size_t)n;
	}
	if (memcmp(buf, want, len)) {
		fprintf(stderr, "tcpcheck: got %.*s, want %s\n", (int)len, buf,
			want);
		exit(1);
	}
}

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "";
	int fd, c, i, n;

	signal(SIGPIPE, SIG_IGN);
	if (!strcmp(m, "recv-server") && argc == 4) {
		fd = listener(atoi(argv[2]));
		c = accept(fd, NULL, NULL);
		if (c < 0)
			die("accept");
		sink(c, argv[3]);
		close(c);
		close(fd);
	} else if (!strcmp(m, "send-server") && argc == 4) {
		fd = listener(atoi(argv[2]));
		c = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			die("accept");
		source(c, argv[3]);
		close(c);
		close(fd);
	} else if (!strcmp(m, "send-client") && argc == 5) {
		fd = connect_to(argv[2], atoi(argv[3]));
		source(fd, argv[4]);
		close(fd);
	} else if (!strcmp(m, "recv-client") && argc == 5) {
		fd = connect_to(argv[2], atoi(argv[3]));
		sink(fd, argv[4]);
		close(fd);
	} else if (!strcmp(m, "cycles-server") && argc == 4) {
		fd = listener(atoi(argv[2]));
		n = atoi(argv[3]);
		for (i = 0; i < n; i++) {
			c = accept(fd, NULL, NULL);
			if (c < 0)
				die("accept");
			expect(c, "ping");
			if (write(c, "pong", 4) != 4)
				die("write");
			close(c);
		}
		close(fd);
	} else if (!strcmp(m, "cycles-client") && argc == 5) {
		int base = count_fds(), now;
		char b;

		n = atoi(argv[4]);
		for (i = 0; i < n; i++) {
			fd = connect_to(argv[2], atoi(argv[3]));
			if (write(fd, "ping", 4) != 4)
				die("write");
			expect(fd, "pong");
			if (read(fd, &b, 1) != 0)
				die("no EOF after pong");
			close(fd);
		}
		/* closing connections finish on the library's timer thread:
		 * poll (bounded) until the fds are back */
		for (i = 0; i < 200 && (now = count_fds()) != base; i++)
			usleep(10000);
		now = count_fds();
		if (now != base) {
			fprintf(stderr, "tcpcheck: %d fds open after %d cycles, "
					"%d before\n",
				now, n, base);
			return 1;
		}
		printf("tcpcheck: %d cycles, fds %d before and after\n", n, base);
	} else {
		fprintf(stderr, "usage: see the comment at the top of "
				"tests/tcpcheck.c\n");
		return 2;
	}
	return 0;
}
