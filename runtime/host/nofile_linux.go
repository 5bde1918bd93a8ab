package host

/*
#include <sys/resource.h>

static struct rlimit boxsh_start_nofile;
static int boxsh_start_nofile_ok;

// Runs before the Go runtime, which raises its soft limit of open files
// to the hard one as it starts (and gives a child it starts the limit
// back): this is the limit boxsh was started with.
__attribute__((constructor)) static void boxsh_record_nofile(void) {
	boxsh_start_nofile_ok = getrlimit(RLIMIT_NOFILE, &boxsh_start_nofile) == 0;
}

static int boxsh_nofile(unsigned long long *soft, unsigned long long *hard) {
	*soft = boxsh_start_nofile.rlim_cur;
	*hard = boxsh_start_nofile.rlim_max;
	return boxsh_start_nofile_ok;
}
*/
import "C"

import "github.com/boxsh/boxsh/runtime/plan"

// startNoFile is the limit of open files the process was started with,
// recorded before the Go runtime raised its soft limit.
func startNoFile() *plan.Rlimit {
	var soft, hard C.ulonglong
	if C.boxsh_nofile(&soft, &hard) == 0 {
		return currentNoFile()
	}
	return &plan.Rlimit{Soft: uint64(soft), Hard: uint64(hard)}
}
