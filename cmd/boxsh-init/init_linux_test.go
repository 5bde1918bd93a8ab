package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestExecWithoutProxySocket: boxsh-init --exec given --proxy-fd of a
// descriptor that is not open (a spec run by another runtime, which passes
// only the descriptors asked for) runs its command, with no proxy, rather
// than failing: the command's network namespace holds only loopback.
func TestExecWithoutProxySocket(t *testing.T) {
	assert.Equal(t, 0, runExec([]string{"--exec", "--proxy-fd", "1000", "--proxy-listen", "127.0.0.1:0", "--", "true"}))
	assert.Equal(t, 3, runExec([]string{"--exec", "--proxy-fd", "1000", "--proxy-listen", "127.0.0.1:0", "--", "sh", "-c", "exit 3"}))
}
