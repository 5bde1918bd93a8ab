package rpc

import (
	"bytes"
	"os"
	"testing"
)

// BenchmarkReadLine20MB reads a 20 MB line through a pipe, as a write of a
// big file arrives on stdin.
func BenchmarkReadLine20MB(b *testing.B) {
	line := append(bytes.Repeat([]byte("x"), 20_000_000), '\n')
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		r, w, err := os.Pipe()
		if err != nil {
			b.Fatal(err)
		}
		go func() { _, _ = w.Write(line); w.Close() }()
		rd := newReader(r, MaxMessageSize)
		msg, err := rd.next()
		if err != nil || len(msg) != len(line)-1 {
			b.Fatal(err, len(msg))
		}
		r.Close()
	}
}
