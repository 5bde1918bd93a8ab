// Package readhead is the part of the read tool that reports a small file
// from its head: text and metadata, never an image. boxsh-init's files.Read
// runs it, and so does the front for the reads it serves itself, so that
// both give the same answer; it imports no image decoder.
package readhead

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/boxsh/boxsh/internal/tool"
	"github.com/boxsh/boxsh/internal/toolhost/filetype"
	"golang.org/x/sys/unix"
)

// Text read limits, as in boxsh v3: whichever is reached first.
const (
	DefaultMaxLines = 2000
	DefaultMaxBytes = 50 << 10
)

// MaxImageFile bounds the image files decoded for inline display.
const MaxImageFile = 64 << 20

// Quick reports the read of fd, a regular file of size bytes that the
// caller opened for reading and closes, when that is certain to be quick
// (see files.ReadQuick): shorter than filetype.HeadSize, read whole in one
// system call, text or metadata. Otherwise ok is false. It is
// files.ReadQuick's answer once the file is open, and the front's.
func Quick(ctx context.Context, fd int, size int64, args tool.ReadArgs) (r tool.Result, ok bool) {
	if size >= filetype.HeadSize {
		return tool.Result{}, false
	}
	// One byte more than the file holds, to see its end in the same read.
	head := make([]byte, size+1)
	n, err := ReadFD(fd, head)
	if err != nil || n == len(head) {
		// A fault to report, or a file that grew since fstat: Read's.
		return tool.Result{}, false
	}
	head = head[:n]
	ft := filetype.Detect(head, size)
	if ft.Binary && IsImage(ft.MIME, size) {
		return tool.Result{}, false
	}
	return Report(ctx, head, size, ft, args), true
}

// Report reports a file held whole in head, of type ft, that is not an
// image (see IsImage).
func Report(ctx context.Context, head []byte, size int64, ft filetype.Type, args tool.ReadArgs) tool.Result {
	if ft.Binary {
		return Metadata(ft.MIME, size)
	}
	if r, ok := WholeText(head, ft.MIME, args); ok {
		return r
	}
	return Text(ctx, bytes.NewReader(head), ft.MIME, int64(len(head)), args)
}

// ReadFD fills buf from fd until it is full or the file ends.
func ReadFD(fd int, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		k, err := unix.Read(fd, buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return n, err
		}
		if k == 0 {
			break
		}
		n += k
	}
	return n, nil
}

// IsImage tells whether a binary file of type mime and size bytes is
// shown as an image: one not too large to decode.
func IsImage(mime string, size int64) bool {
	return strings.HasPrefix(mime, "image/") && size <= MaxImageFile
}

// WholeText reports text that is returned whole, as Text would, without
// copying it line by line.
//
// That is text from the first line, within the line limit; a head is far below
// the byte limit. ok is false when Text must cut.
func WholeText(text []byte, mime string, args tool.ReadArgs) (tool.Result, bool) {
	limit := args.Limit
	if limit <= 0 {
		limit = DefaultMaxLines
	}
	lines := bytes.Count(text, []byte{'\n'})
	if len(text) > 0 && text[len(text)-1] != '\n' {
		lines++
	}
	if args.Offset > 1 || lines > limit || len(text) > DefaultMaxBytes || !utf8.Valid(text) {
		return tool.Result{}, false
	}
	tr := false
	sc := tool.ReadOutput{Content: string(text), Encoding: "text", MimeType: mime, LineCount: &lines, Truncated: &tr}
	r := tool.TextResult(sc.Content)
	r.StructuredContent = sc
	return r, true
}

// Metadata reports a binary file that is not shown.
func Metadata(mime string, size int64) tool.Result {
	r := tool.TextResult(fmt.Sprintf("[Binary file: %s, %d bytes]", mime, size))
	r.StructuredContent = tool.ReadOutput{Encoding: "metadata", MimeType: mime, Size: &size}
	return r
}

// Text returns lines [offset, offset+limit) within DefaultMaxBytes.
func Text(ctx context.Context, f io.Reader, mime string, size int64, args tool.ReadArgs) tool.Result {
	start := max(args.Offset, 1)
	limit := args.Limit
	if limit <= 0 {
		limit = DefaultMaxLines
	}
	// Buffers sized to the file, not to the largest one: a small file
	// should not cost 64 KiB of allocation per read.
	bufSize := int64(64 << 10)
	if size >= 0 && size < bufSize {
		bufSize = size + 1 // bufio.NewReaderSize makes it at least 16
	}
	br := bufio.NewReaderSize(f, int(bufSize))
	var out bytes.Buffer
	out.Grow(int(min(bufSize, DefaultMaxBytes)))
	lineNo, collected := 0, 0
	truncated := false
	for {
		if lineNo%4096 == 0 && ctx.Err() != nil {
			return tool.Errorf("read: %s: %v", args.Path, ctx.Err())
		}
		line, err := readLine(br, DefaultMaxBytes)
		if len(line) == 0 && err != nil {
			if err != io.EOF {
				return tool.Errorf("read: %s: %s", args.Path, tool.ErrorText(err))
			}
			break
		}
		lineNo++
		if lineNo < start {
			continue
		}
		if collected >= limit {
			truncated = true
			break
		}
		if collected > 0 && out.Len()+len(line) > DefaultMaxBytes {
			truncated = true
			break
		}
		if collected == 0 && len(line) > DefaultMaxBytes {
			// A single line over the byte limit: return its first part.
			line = line[:DefaultMaxBytes]
			out.Write(line)
			collected++
			truncated = true
			discardLine(br)
			break
		}
		out.Write(line)
		collected++
	}
	totalLines := lineNo
	if truncated {
		n, err := countLines(br)
		if err != nil {
			return tool.Errorf("read: %s: %s", args.Path, tool.ErrorText(err))
		}
		totalLines = lineNo + n
	}
	content := out.Bytes()
	if !utf8.Valid(content) {
		return Metadata(mime, size)
	}
	lc, tr := collected, truncated
	sc := tool.ReadOutput{Content: string(content), Encoding: "text", MimeType: mime, LineCount: &lc, Truncated: &tr}
	if truncated {
		sc.TotalLines = totalLines
		sc.NextOffset = start + collected
	}
	r := tool.TextResult(sc.Content)
	r.StructuredContent = sc
	return r
}

// readLine returns the next line with its newline, holding at most max+1
// bytes of it (the rest of a longer line is left unread). The line is
// valid until the next read from br.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	chunk, err := br.ReadSlice('\n')
	if err != bufio.ErrBufferFull {
		return chunk, err // the whole line, still in the reader's buffer
	}
	line := slices.Clone(chunk)
	for err == bufio.ErrBufferFull && len(line) <= max {
		chunk, err = br.ReadSlice('\n')
		line = append(line, chunk...)
	}
	if err == bufio.ErrBufferFull {
		err = nil
	}
	return line, err
}

// discardLine skips the rest of the current line.
func discardLine(br *bufio.Reader) {
	for {
		if _, err := br.ReadSlice('\n'); err != bufio.ErrBufferFull {
			return
		}
	}
}

// countLines counts the lines left in r (a last line without newline
// counts).
func countLines(r io.Reader) (int, error) {
	buf := make([]byte, 64<<10)
	n, last := 0, byte('\n')
	for {
		k, err := r.Read(buf)
		if k > 0 {
			n += bytes.Count(buf[:k], []byte{'\n'})
			last = buf[k-1]
		}
		if err == io.EOF {
			if last != '\n' {
				n++
			}
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}
