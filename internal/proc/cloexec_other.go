//go:build !linux

package proc

import "errors"

func closeRangeOnExec(uint) error { return errors.ErrUnsupported }
