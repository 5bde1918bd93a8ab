//go:build !linux

package proc

import "errors"

// Apply sets l on the calling process; only Linux is supported.
func (l Limits) Apply() error {
	if l.IsZero() {
		return nil
	}
	return errors.New("resource limits need Linux")
}
