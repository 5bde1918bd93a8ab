/*
 * boxsh-zygote.so: turns one started shell into a fork server for
 * boxsh-init's bash pool (see agent/bash/zygote_linux.go).
 *
 * Starting a shell by exec costs most of a millisecond of CPU: loading and
 * linking the shell and its libraries, and the C library's start-up. The
 * pool starts the shell once, with this library in LD_PRELOAD and
 * BOXSH_ZYGOTE_FD naming a SOCK_SEQPACKET socket. The constructor below runs
 * before the shell's main and never lets the zygote reach it: it serves
 * requests on the socket until the socket closes, then exits. Each request
 * carries four descriptors (stdin, stdout, stderr and the command pipe);
 * the zygote clones itself (CLONE_PARENT: the new process is boxsh-init's
 * child, which waits for it) and answers the new process's PID, or -errno.
 * The new process takes the four descriptors as 0-3 and returns from the
 * constructor into the shell's main: it is a shell starting afresh, with
 * the zygote's arguments (the pool's warm-shell program) and environment,
 * as if it had just been executed, without the exec.
 *
 * Outside a zygote (no BOXSH_ZYGOTE_FD) the library does nothing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ZYGOTE_FD_ENV "BOXSH_ZYGOTE_FD"
#define ZYGOTE_NFDS 4
/* ZYGOTE_HELLO is the zygote's first message: it is serving. */
#define ZYGOTE_HELLO 0x62787a31 /* "bxz1" */

extern char **environ;

/* The environment is read and changed directly, not through getenv and
 * unsetenv: a shell may define its own (bash does), which before its main
 * do not look at environ. */

/* env_value returns the value of variable name, or NULL. */
static const char *env_value(const char *name) {
	size_t n = strlen(name);
	for (char **e = environ; e && *e; e++)
		if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
			return *e + n + 1;
	return NULL;
}

/* env_remove removes variable name from environ, in place. */
static void env_remove(const char *name) {
	size_t n = strlen(name);
	char **w = environ;
	if (!w)
		return;
	for (char **e = environ; *e; e++)
		if (!(strncmp(*e, name, n) == 0 && (*e)[n] == '='))
			*w++ = *e;
	*w = NULL;
}

static int reply(int sock, int32_t v) {
	return write(sock, &v, sizeof v) == (ssize_t)sizeof v ? 0 : -1;
}

/* parse_fd reads a descriptor number of at least 3. */
static int parse_fd(const char *s) {
	char *end;
	long n;
	if (!s || !*s)
		return -1;
	errno = 0;
	n = strtol(s, &end, 10);
	if (errno || *end || n < 3 || n > 1 << 20)
		return -1;
	return (int)n;
}

/* receive waits for a request and stores its descriptors in fds; it
 * returns 1 for a request, 0 when the socket has closed. */
static int receive(int sock, int fds[ZYGOTE_NFDS]) {
	char b;
	struct iovec iov = {&b, 1};
	union {
		char buf[CMSG_SPACE(ZYGOTE_NFDS * sizeof(int))];
		struct cmsghdr align;
	} c;
	struct msghdr msg;
	struct cmsghdr *cm;
	ssize_t n;

	for (;;) {
		memset(&msg, 0, sizeof msg);
		msg.msg_iov = &iov;
		msg.msg_iovlen = 1;
		msg.msg_control = c.buf;
		msg.msg_controllen = sizeof c.buf;
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return 0;
		cm = CMSG_FIRSTHDR(&msg);
		if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
		    cm->cmsg_len == CMSG_LEN(ZYGOTE_NFDS * sizeof(int)) && !(msg.msg_flags & MSG_CTRUNC)) {
			memcpy(fds, CMSG_DATA(cm), ZYGOTE_NFDS * sizeof(int));
			return 1;
		}
		/* Not a request of the pool's: drop what came with it. */
		for (; cm; cm = CMSG_NXTHDR(&msg, cm)) {
			if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
				int *p = (int *)CMSG_DATA(cm);
				size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
				for (size_t i = 0; i < k; i++)
					close(p[i]);
			}
		}
		if (reply(sock, -EINVAL) < 0)
			return 0;
	}
}

__attribute__((constructor)) static void zygote(void) {
	int sock = parse_fd(env_value(ZYGOTE_FD_ENV));
	int fds[ZYGOTE_NFDS];
	pid_t parent;

	if (sock < 0)
		return;
	/* The shells it makes must not load this library again, nor see its
	 * variables. */
	env_remove(ZYGOTE_FD_ENV);
	env_remove("LD_PRELOAD");
	parent = getppid();
	if (reply(sock, ZYGOTE_HELLO) < 0)
		_exit(1);
	while (receive(sock, fds)) {
		/* Not fork(): its new process would be the zygote's child, which
		 * boxsh-init could not wait for. The C library's own state needs
		 * nothing of fork's: the process is single-threaded and in none of
		 * its functions, and raise() asks the kernel for the thread ID. */
		long pid = syscall(SYS_clone, CLONE_PARENT | SIGCHLD, 0, 0, 0, 0);
		if (pid == 0) {
			/* The new shell: its own process group, killed when
			 * boxsh-init dies (the death signal is not inherited). */
			setpgid(0, 0);
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() != parent)
				_exit(1);
			close(sock);
			for (int i = 0; i < ZYGOTE_NFDS; i++)
				if (dup2(fds[i], i) < 0)
					_exit(126);
			for (int i = 0; i < ZYGOTE_NFDS; i++)
				if (fds[i] >= ZYGOTE_NFDS)
					close(fds[i]);
			return; /* on into the shell's main */
		}
		int err = errno;
		for (int i = 0; i < ZYGOTE_NFDS; i++)
			close(fds[i]);
		if (reply(sock, pid > 0 ? (int32_t)pid : -err) < 0)
			break;
	}
	_exit(0);
}
