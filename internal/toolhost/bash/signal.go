package bash

import (
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// signalName is the conventional name of sig, such as "SIGKILL".
func signalName(sig syscall.Signal) string {
	if name := unix.SignalName(sig); name != "" {
		return name
	}
	return "signal " + strings.TrimPrefix(sig.String(), "signal ")
}
