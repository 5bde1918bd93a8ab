package proc

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestReserveProcs(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(before) })

	t.Setenv("GOMAXPROCS", "")
	ReserveProcs(3)
	assert.Equal(t, before+3, runtime.GOMAXPROCS(0))
	ReserveProcs(0)
	assert.Equal(t, before+3, runtime.GOMAXPROCS(0), "nothing to reserve")

	runtime.GOMAXPROCS(before)
	t.Setenv("GOMAXPROCS", "1")
	ReserveProcs(3)
	assert.Equal(t, before, runtime.GOMAXPROCS(0), "a GOMAXPROCS the user set is kept")
}

func TestOneProc(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(before) })

	runtime.GOMAXPROCS(3)
	t.Setenv("GOMAXPROCS", "")
	OneProc()
	assert.Equal(t, 1, runtime.GOMAXPROCS(0))

	runtime.GOMAXPROCS(3)
	t.Setenv("GOMAXPROCS", "3")
	OneProc()
	assert.Equal(t, 3, runtime.GOMAXPROCS(0), "a GOMAXPROCS the user set is kept")
}
