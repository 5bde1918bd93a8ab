// Package initproto is the contract between the boxsh front and boxsh-init.
//
// It holds, in one place:
//
//   - the channel, where each frame is a 4-byte big-endian length followed by
//     that many bytes of JSON;
//   - the Hello each side sends first, with ProtocolVersion and the build,
//     which must match;
//   - the calls, replies, errors and JSON-RPC error codes;
//   - the entries of the rules file.
//
// Client is the front's end of the channel. It checks what boxsh-init sends
// before it reaches the front's client. boxsh-init's end is package
// internal/toolhost.
package initproto

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
)

// MaxSize is the largest frame payload either side accepts (64 MiB, as in
// boxsh v3). A bash result holds two streams of at most 10 MiB each, twice
// (text and structured content), well below it.
const MaxSize = 64 << 20

// ErrTooLarge reports a frame whose declared length exceeds the limit.
var ErrTooLarge = errors.New("frame: payload exceeds size limit")

// Reader reads frames from a stream.
type Reader struct {
	r   *bufio.Reader
	max uint32
}

// NewReader returns a Reader that accepts payloads of up to MaxSize bytes.
func NewReader(r io.Reader) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, 64<<10), max: MaxSize}
}

// Buffered returns how many bytes of the stream have been read ahead. It is
// zero when the next Read has to wait for the stream.
func (fr *Reader) Buffered() int { return fr.r.Buffered() }

// Read returns the next payload. At a clean end of stream it returns io.EOF;
// a stream cut inside a frame gives io.ErrUnexpectedEOF, and an oversized
// length gives an error wrapping ErrTooLarge (the stream is then unusable:
// the frame boundary is lost).
func (fr *Reader) Read() ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(fr.r, hdr[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("read frame header: %w", err)
		}
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > fr.max {
		return nil, fmt.Errorf("read frame of %d bytes (limit %d): %w", n, fr.max, ErrTooLarge)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(fr.r, buf); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("read frame body of %d bytes: %w", n, err)
	}
	return buf, nil
}

// Writer writes frames to a stream. It is safe for concurrent use: each
// frame is written whole.
type Writer struct {
	mu sync.Mutex
	w  io.Writer
	// deferred are frames (headers included) that Defer queued for the
	// next Write or Flush.
	deferred []byte
}

// NewWriter returns a Writer on w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write writes payload as one frame.
func (fw *Writer) Write(payload []byte) error {
	if len(payload) > MaxSize {
		return fmt.Errorf("write frame of %d bytes (limit %d): %w", len(payload), MaxSize, ErrTooLarge)
	}
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(payload)))
	// One writev for header and body where the stream supports it (a
	// socket does): the reader then wakes once per frame, not twice.
	bufs := net.Buffers{hdr[:], payload}
	fw.mu.Lock()
	defer fw.mu.Unlock()
	if len(fw.deferred) > 0 {
		bufs = net.Buffers{fw.deferred, hdr[:], payload}
		fw.deferred = fw.deferred[:0]
	}
	if err := writeBuffers(fw.w, bufs); err != nil {
		return fmt.Errorf("write frame: %w", err)
	}
	return nil
}

// WriteParts writes parts as one frame, without joining them first.
//
// Where the stream supports writev, it is one write. So a call's large
// arguments are written from where they are.
func (fw *Writer) WriteParts(parts ...[]byte) error {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	if n > MaxSize {
		return fmt.Errorf("write frame of %d bytes (limit %d): %w", n, MaxSize, ErrTooLarge)
	}
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(n))
	fw.mu.Lock()
	defer fw.mu.Unlock()
	bufs := append(net.Buffers{fw.deferred, hdr[:]}, parts...)
	fw.deferred = fw.deferred[:0]
	if err := writeBuffers(fw.w, bufs); err != nil {
		return fmt.Errorf("write frame: %w", err)
	}
	return nil
}

// Defer queues payload, a small frame that may wait, to be written before the
// next frame that Write writes, or by Flush.
//
// Frames keep their order, and a burst of them goes out in one write.
func (fw *Writer) Defer(payload []byte) {
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(payload)))
	fw.mu.Lock()
	fw.deferred = append(append(fw.deferred, hdr[:]...), payload...)
	fw.mu.Unlock()
}

// Flush writes the frames Defer queued, if any.
func (fw *Writer) Flush() error {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	if len(fw.deferred) == 0 {
		return nil
	}
	_, err := fw.w.Write(fw.deferred)
	fw.deferred = fw.deferred[:0]
	if err != nil {
		return fmt.Errorf("write frame: %w", err)
	}
	return nil
}

// BuffersWriter is a writer that writes net.Buffers whole, in one writev
// where it can, as net.Buffers.WriteTo does for a net.Conn of the net
// package (see proc.NoWaitConn).
type BuffersWriter interface {
	WriteBuffers(*net.Buffers) (int64, error)
}

// writeBuffers writes bufs to w, in one writev where w takes them.
func writeBuffers(w io.Writer, bufs net.Buffers) error {
	if bw, ok := w.(BuffersWriter); ok {
		_, err := bw.WriteBuffers(&bufs)
		return err
	}
	_, err := bufs.WriteTo(w)
	return err
}

// WriteJSON encodes v as JSON and writes it as one frame.
func (fw *Writer) WriteJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode frame: %w", err)
	}
	return fw.Write(b)
}
