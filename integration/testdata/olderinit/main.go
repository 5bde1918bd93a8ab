// Command olderinit stands in for a boxsh-init of an older build, one that
// speaks protocol 1.
//
// It knows only the options boxsh-init had when the hello came in. It
// refuses any other option with its usage and exit status 2, as every
// build does. Otherwise it sends its hello, checks the front's, and exits 1
// on a mismatch. The integration tests put it beside a front of this
// build.
package main

import (
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
)

// build is this stand-in's version string, as -ldflags "-X main.build=..."
// sets it.
var build = "older-build"

// hello is the first frame each side sends.
type hello struct {
	Hello struct {
		Protocol int    `json:"protocol"`
		Build    string `json:"build"`
	} `json:"hello"`
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "--exec" {
		fmt.Fprintln(os.Stderr, "olderinit: --exec is not stood in for")
		os.Exit(2)
	}
	fs := flag.NewFlagSet("boxsh-init", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Int("workers", 4, "")
	fs.String("shell", "/bin/sh", "")
	fs.String("log-level", "warn", "")
	fd := fs.Int("fd", 3, "")
	fs.Float64("timeout-default", 0, "")
	fs.Int64("max-output", 0, "")
	fs.Int64("memory", 0, "")
	fs.Int("pids", 0, "")
	fs.String("rules", "", "")
	fs.Int("proxy-fd", 0, "")
	fs.String("proxy-listen", "", "")
	if err := fs.Parse(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "boxsh-init: %v\n", err)
		os.Exit(2)
	}
	f := os.NewFile(uintptr(*fd), "frames")
	conn, err := net.FileConn(f)
	if err != nil {
		fmt.Fprintf(os.Stderr, "boxsh-init: fd %d is not the frame socket: %v\n", *fd, err)
		os.Exit(2)
	}
	var mine hello
	mine.Hello.Protocol, mine.Hello.Build = 1, build
	if err := write(conn, mine); err != nil {
		fmt.Fprintf(os.Stderr, "boxsh-init: send hello: %v\n", err)
		os.Exit(1)
	}
	var theirs hello
	if err := read(conn, &theirs); err != nil || theirs.Hello != mine.Hello {
		os.Exit(1)
	}
	// Not reached with a front of another build: serve nothing.
	os.Exit(1)
}

// write writes v as one frame: a 4-byte big-endian length, then the JSON.
func write(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(b)))
	_, err = w.Write(append(hdr[:], b...))
	return err
}

// read reads one frame into v.
func read(r io.Reader, v any) error {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return err
	}
	b := make([]byte, binary.BigEndian.Uint32(hdr[:]))
	if _, err := io.ReadFull(r, b); err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}
