package starttrace

import (
	"io"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"
)

func TestMarkOff(t *testing.T) {
	enabled = false
	out := captureStderr(t, func() { Mark("x") })
	if out != "" {
		t.Errorf("a mark with BOXSH_TRACE_START unset wrote %q", out)
	}
	env := []string{"A=1"}
	if got := Env(env); !slices.Equal(got, env) {
		t.Errorf("Env with marks off = %v, want %v", got, env)
	}
}

func TestMarkOn(t *testing.T) {
	enabled = true
	defer func() { enabled = false }()
	at := time.Unix(1, 500)
	out := captureStderr(t, func() { MarkAt("front.main", at) })
	if want := Prefix + "front.main " + strconv.FormatInt(at.UnixNano(), 10) + "\n"; out != want {
		t.Errorf("mark = %q, want %q", out, want)
	}
	env := make([]string, 1, 4)
	env[0] = "A=1"
	got := Env(env)
	if !slices.Equal(got, []string{"A=1", EnvVar + "=1"}) {
		t.Errorf("Env = %v", got)
	}
	// The caller's slice is not written into.
	if env[:2][1] != "" {
		t.Errorf("Env wrote into the caller's array: %q", env[:2][1])
	}
}

func captureStderr(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stderr
	os.Stderr = w
	f()
	os.Stderr = old
	w.Close()
	b, _ := io.ReadAll(r)
	r.Close()
	return string(b)
}
