package proc

import "golang.org/x/sys/unix"

// Apply sets l on the calling process (soft and hard limits alike, so
// that nothing it runs can raise them again).
func (l Limits) Apply() error {
	if l.Data > 0 {
		if err := unix.Setrlimit(unix.RLIMIT_DATA, &unix.Rlimit{Cur: uint64(l.Data), Max: uint64(l.Data)}); err != nil {
			return err
		}
	}
	if l.Procs > 0 {
		if err := unix.Setrlimit(unix.RLIMIT_NPROC, &unix.Rlimit{Cur: uint64(l.Procs), Max: uint64(l.Procs)}); err != nil {
			return err
		}
	}
	return nil
}
