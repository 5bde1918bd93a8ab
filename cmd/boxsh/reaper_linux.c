//go:build linux && cgo

// The front's reaper before the Go runtime starts (see host.StartReaper).
// The front starts itself as "boxsh-reaper" with _BOXSH_REAPER=1 and the
// read end of its lifeline pipe as descriptor 3, in a session of its own.
// This constructor forks at once, before the Go runtime (and its threads)
// exist, and the parent exits: the child is adopted by the system's init,
// out of the front's process tree, one exec after the front asked for it.
// The child waits on the pipe, in C, until the front has gone. Only if a
// state directory the front named is still there (the front did not
// clean up) does it start the Go runtime, with descriptor 3 now holding
// those directories, to clean up after them (host.RunReaper); a front
// that ended normally costs no Go start at all.

#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

// boxsh_reaper_dirs is set when descriptor 3 holds the state directories
// the Go reaper is to clean up after (see reaper_linux.go).
int boxsh_reaper_dirs;

static void write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			_exit(1);
		p += w;
		n -= (size_t)w;
	}
}

// glibc calls constructors with the program's argc and argv.
__attribute__((constructor)) static void boxsh_reaper(int argc, char **argv)
{
	const char *stage = getenv("_BOXSH_REAPER");
	if (stage == NULL || strcmp(stage, "1") != 0 || argc != 1 || strcmp(argv[0], "boxsh-reaper") != 0)
		return;
	pid_t pid = fork();
	if (pid < 0)
		_exit(1);
	if (pid > 0)
		_exit(0);

	// The state directories, one a line, until the front has gone.
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap);
	if (buf == NULL)
		_exit(1);
	for (;;) {
		if (len == cap) {
			cap *= 2;
			buf = realloc(buf, cap);
			if (buf == NULL)
				_exit(1);
		}
		ssize_t n = read(3, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}

	// Those still there, for the Go reaper. Each line was one write of
	// less than PIPE_BUF bytes: a line is whole or absent.
	int out = -1;
	char *p = buf, *end = buf + len;
	while (p < end) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		if (nl == NULL)
			break;
		*nl = '\0';
		struct stat st;
		int there = p[0] == '/' && lstat(p, &st) == 0 && S_ISDIR(st.st_mode);
		*nl = '\n';
		if (there) {
			if (out < 0 && (out = memfd_create("boxsh-reaper", MFD_CLOEXEC)) < 0)
				_exit(1);
			write_all(out, p, (size_t)(nl + 1 - p));
		}
		p = nl + 1;
	}
	free(buf);
	if (out < 0)
		_exit(0);
	if (lseek(out, 0, SEEK_SET) != 0 || dup2(out, 3) != 3)
		_exit(1);
	close(out);
	boxsh_reaper_dirs = 1;
}
