package rpc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
)

// MaxMessageSize bounds the size of one incoming JSON-RPC message, as in
// boxsh v3.
const MaxMessageSize = 64 << 20

// errTooLarge reports a message over MaxMessageSize; the message was
// skipped and the stream is still usable.
var errTooLarge = errors.New("request buffer exceeded 64 MiB")

// errTruncated reports a Content-Length body cut short by the end of input.
var errTruncated = errors.New("truncated message")

// errBadHeader reports a Content-Length header block that cannot be used.
var errBadHeader = errors.New("bad Content-Length header")

// reader splits the input stream into JSON-RPC messages. The transport is
// detected from the first non-blank bytes: "Content-Length:" selects LSP-style
// framing, anything else newline-delimited JSON.
type reader struct {
	r        *bufio.Reader
	max      int
	detected bool
	framed   bool
}

func newReader(r io.Reader, max int) *reader {
	return &reader{r: bufio.NewReaderSize(r, 256<<10), max: max}
}

// next returns the next message. Blank lines are skipped. errTooLarge and
// errBadHeader leave the stream positioned after the offending message.
func (rd *reader) next() ([]byte, error) {
	if !rd.detected {
		if err := rd.detect(); err != nil {
			return nil, err
		}
	}
	if rd.framed {
		return rd.nextFramed()
	}
	return rd.nextLine()
}

func (rd *reader) detect() error {
	for {
		b, err := rd.r.Peek(1)
		if err != nil {
			return err
		}
		switch b[0] {
		case ' ', '\t', '\r', '\n':
			_, _ = rd.r.ReadByte()
			continue
		}
		const prefix = "content-length:"
		p, _ := rd.r.Peek(len(prefix))
		rd.framed = len(p) == len(prefix) && strings.EqualFold(string(p), prefix)
		rd.detected = true
		return nil
	}
}

func (rd *reader) nextLine() ([]byte, error) {
	for {
		line, err := rd.readLine()
		if err != nil {
			return nil, err
		}
		line = bytes.TrimRight(line, "\r")
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		return line, nil
	}
}

// readLine reads up to a newline (or the end of input), refusing to buffer
// more than max bytes.
func (rd *reader) readLine() ([]byte, error) {
	// parts are the pieces of a line longer than the buffer, copied as
	// they come. They are joined at the end into one slice of the line's
	// size. Appending them to one growing slice would copy a long line
	// (a big file to write) again at each growth.
	var parts [][]byte
	n := 0
	for {
		chunk, err := rd.r.ReadSlice('\n')
		if n+len(chunk) > rd.max {
			// Skip the rest of this line without keeping it.
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = rd.r.ReadSlice('\n')
			}
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, err
			}
			return nil, errTooLarge
		}
		switch {
		case err == nil:
			chunk = chunk[:len(chunk)-1]
		case errors.Is(err, bufio.ErrBufferFull):
			parts = append(parts, bytes.Clone(chunk))
			n += len(chunk)
			continue
		case !errors.Is(err, io.EOF) || n+len(chunk) == 0:
			return nil, err
		}
		if parts == nil {
			return bytes.Clone(chunk), nil
		}
		// bytes.Join does not zero the line's memory first.
		return bytes.Join(append(parts, chunk), nil), nil
	}
}

func (rd *reader) nextFramed() ([]byte, error) {
	length := -1
	sawHeader := false
	for {
		line, err := rd.r.ReadSlice('\n')
		if err != nil {
			if errors.Is(err, io.EOF) && !sawHeader && len(bytes.TrimSpace(line)) == 0 {
				return nil, io.EOF
			}
			if errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("%w: end of input inside the header block", errTruncated)
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				return nil, fmt.Errorf("%w: header line too long", errBadHeader)
			}
			return nil, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			if !sawHeader {
				continue // blank lines between messages
			}
			break
		}
		sawHeader = true
		name, value, ok := bytes.Cut(line, []byte(":"))
		if ok && strings.EqualFold(string(bytes.TrimSpace(name)), "content-length") {
			n, err := strconv.Atoi(string(bytes.TrimSpace(value)))
			if err != nil || n < 0 {
				length = -2
			} else {
				length = n
			}
		}
	}
	switch {
	case length == -1:
		return nil, fmt.Errorf("%w: no Content-Length in the header block", errBadHeader)
	case length == -2:
		return nil, fmt.Errorf("%w: Content-Length is not a non-negative integer", errBadHeader)
	case length > rd.max:
		if _, err := io.CopyN(io.Discard, rd.r, int64(length)); err != nil {
			return nil, fmt.Errorf("%w: body of %d bytes cut short", errTruncated, length)
		}
		return nil, errTooLarge
	}
	body := make([]byte, length)
	if n, err := io.ReadFull(rd.r, body); err != nil {
		return nil, fmt.Errorf("%w: expected %d body bytes, got %d", errTruncated, length, n)
	}
	return body, nil
}

// writer writes whole messages, in the framing the input used.
type writer struct {
	mu     sync.Mutex
	w      *bufio.Writer
	framed func() bool
	err    error
}

func newWriter(w io.Writer, framed func() bool) *writer {
	return &writer{w: bufio.NewWriterSize(w, 64<<10), framed: framed}
}

// failed returns the error that ended the output, if any.
func (wr *writer) failed() error {
	wr.mu.Lock()
	defer wr.mu.Unlock()
	return wr.err
}

// notify writes a notification: on stdio, a message like any other.
func (wr *writer) notify(msg []byte) error { return wr.write(msg) }

// write writes one message and flushes it. After a write error every later
// write fails with the same error.
func (wr *writer) write(parts ...[]byte) error {
	wr.mu.Lock()
	defer wr.mu.Unlock()
	if wr.err != nil {
		return wr.err
	}
	if wr.framed() {
		n := 0
		for _, p := range parts {
			n += len(p)
		}
		fmt.Fprintf(wr.w, "Content-Length: %d\r\n\r\n", n)
	}
	for _, p := range parts {
		_, _ = wr.w.Write(p)
	}
	if !wr.framed() {
		_ = wr.w.WriteByte('\n')
	}
	wr.err = wr.w.Flush()
	return wr.err
}
