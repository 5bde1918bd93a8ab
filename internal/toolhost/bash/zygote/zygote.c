/*
 * boxsh-zygote.so: turns one started shell into a fork server for
 * boxsh-init's bash pool (see internal/toolhost/bash/zygote_linux.go).
 *
 * Starting a shell by exec costs most of a millisecond of CPU: loading and
 * linking the shell and its libraries, and the C library's start-up. The
 * pool starts the shell once, with this library in LD_PRELOAD and
 * BOXSH_ZYGOTE_FD naming a SOCK_SEQPACKET socket. The constructor below
 * runs before the shell's main and never lets the zygote reach it: it
 * serves requests on the socket until the socket closes, then exits. Each
 * request carries four descriptors: stdin, stdout, stderr and a command
 * pipe. The zygote clones itself (CLONE_PARENT: the new process is
 * boxsh-init's child, which waits for it) and answers the new process's
 * PID, or -errno.
 *
 * The new process takes the first three descriptors as 0-2 and waits for
 * its command on the pipe. Once the command is there, it becomes argv[2]
 * and the process returns from the constructor into the shell's main: a
 * shell starting afresh as `SHELL -c COMMAND`, with the zygote's
 * environment, as if it had just been executed, without the exec.
 *
 * No command may read or write the memory of the zygote or of a clone
 * waiting for its command (through /proc/PID/mem, say: same user): code
 * planted there would run in later calls' shells. So they are not
 * dumpable until the clone has its command. The pool starts the zygote
 * non-dumpable from its exec on (from an execute-only copy of the shell,
 * the descriptor after the socket: see zygote_linux.go); the constructor
 * makes sure of it, and the clones inherit it.
 *
 * A shell that does not load the library (a static one) runs PLACEHOLDER,
 * which exits at once; outside a zygote (no BOXSH_ZYGOTE_FD) the library
 * does nothing.
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
/* ZYGOTE_BIND_ENV marks an LD_BIND_NOW that the pool set for the zygote
 * alone (see zygote_linux.go). */
#define ZYGOTE_BIND_ENV "BOXSH_ZYGOTE_BIND_NOW"
#define ZYGOTE_NFDS 4
/* ZYGOTE_HELLO is the zygote's first message: it is serving. */
#define ZYGOTE_HELLO 0x62787a32 /* "bxz2" */
/* ZYGOTE_MAX_COMMAND bounds a command (boxsh's frames are smaller). */
#define ZYGOTE_MAX_COMMAND (256u << 20)

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

/* reply sends an answer; a closed socket is an error, not a SIGPIPE. */
static int reply(int sock, int32_t v) {
	return send(sock, &v, sizeof v, MSG_NOSIGNAL) == (ssize_t)sizeof v ? 0 : -1;
}

/* parse_fd reads a descriptor number of at least 3. (Not with strtol,
 * which newer C libraries version: the library must load with the C
 * library of whatever system the shell is on.) */
static int parse_fd(const char *s) {
	int n = 0;
	if (!s || !*s)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || n > 1 << 20)
			return -1;
		n = n * 10 + (*s - '0');
	}
	return n >= 3 ? n : -1;
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

/* read_full reads exactly n bytes; it returns 0 on success. */
static int read_full(int fd, void *buf, size_t n) {
	char *p = buf;
	while (n > 0) {
		ssize_t k = read(fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* read_command reads the command the shell is to run from fd: its length
 * (4 bytes, native order), then the command. It returns NULL when the
 * command does not arrive whole (the pool died while writing it, or
 * discarded the shell), so that part of one is never run. */
static char *read_command(int fd) {
	uint32_t n;
	char *cmd;
	if (read_full(fd, &n, sizeof n) < 0 || n > ZYGOTE_MAX_COMMAND)
		return NULL;
	cmd = malloc((size_t)n + 1);
	if (!cmd || read_full(fd, cmd, n) < 0)
		return NULL;
	cmd[n] = 0;
	return cmd;
}

/* become_shell makes the new process the shell for one command: the
 * request's descriptors as stdin, stdout and stderr, the command (read
 * from the fourth) as argv[2]. */
static void become_shell(int fds[ZYGOTE_NFDS], char **argv) {
	char *cmd;
	size_t room, n;

	for (int i = 0; i < 3; i++)
		if (dup2(fds[i], i) < 0)
			_exit(126);
	for (int i = 0; i < 3; i++)
		if (fds[i] > 2)
			close(fds[i]);
	cmd = read_command(fds[3]);
	close(fds[3]);
	if (!cmd)
		_exit(125);
	/* Its own command from here on: open to it, as any process of the
	 * user's (/proc/$$/fd, a debugger). */
	prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	/* What ps shows, from the zygote's argument memory: as much of the
	 * command as the placeholder has room for. */
	room = strlen(argv[2]);
	n = strlen(cmd);
	if (n > room)
		n = room;
	memcpy(argv[2], cmd, n);
	memset(argv[2] + n, 0, room - n);
	argv[2] = cmd;
}

__attribute__((constructor)) static void zygote(int argc, char **argv, char **envp) {
	int sock = parse_fd(env_value(ZYGOTE_FD_ENV));
	int fds[ZYGOTE_NFDS];
	pid_t parent;

	(void)envp;
	if (sock < 0)
		return;
	/* Nothing of the zygote's, nor of the clones it makes, is open to the
	 * commands. (Started as the pool starts it, it already is not.) */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		_exit(126);
	/* The copy of the shell it was started from (the descriptor after the
	 * socket). */
	close(sock + 1);
	/* The shells it makes must not load this library again, nor see its
	 * variables. */
	env_remove(ZYGOTE_FD_ENV);
	env_remove("LD_PRELOAD");
	/* LD_BIND_NOW, when the pool set it (the marker says so), had the
	 * loader bind every symbol now, once for all the clones: each would
	 * otherwise bind those its shell calls again, writing (and so
	 * copying) the pages that hold them. */
	if (env_value(ZYGOTE_BIND_ENV)) {
		env_remove(ZYGOTE_BIND_ENV);
		env_remove("LD_BIND_NOW");
	}
	/* The C library's allocator sets itself up on its first use: here,
	 * once, rather than in every clone. */
	free(malloc(1));
	/* `shell -c PLACEHOLDER`: the command replaces the placeholder. */
	if (argc != 3 || strcmp(argv[1], "-c") != 0)
		_exit(126);
	/* The name ps shows, which the exec took from the copy's path. */
	const char *name = strrchr(argv[0], '/');
	prctl(PR_SET_NAME, name ? name + 1 : argv[0], 0, 0, 0);
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
			become_shell(fds, argv);
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
