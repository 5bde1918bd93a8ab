package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestExecWithoutProxySocket checks that boxsh-init --exec runs its command
// without a proxy when --proxy-fd names a descriptor that is not open.
//
// That happens with a spec run by another runtime, which passes only the
// descriptors asked for. The command's network namespace then holds only
// loopback.
func TestExecWithoutProxySocket(t *testing.T) {
	assert.Equal(t, 0, runExec([]string{"--exec", "--proxy-fd", "1000", "--proxy-listen", "127.0.0.1:0", "--", "true"}))
	assert.Equal(t, 3, runExec([]string{"--exec", "--proxy-fd", "1000", "--proxy-listen", "127.0.0.1:0", "--", "sh", "-c", "exit 3"}))
}
