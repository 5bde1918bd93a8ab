package files

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/boxsh/boxsh/internal/tool"
	"github.com/boxsh/boxsh/internal/toolhost/filetype"
	"github.com/boxsh/boxsh/internal/toolhost/imaging"
	"golang.org/x/sys/unix"
)

// Text read limits, as in boxsh v3: whichever is reached first.
const (
	DefaultMaxLines = 2000
	DefaultMaxBytes = 50 << 10
)

// maxImageFile bounds the image files decoded for inline display.
const maxImageFile = 64 << 20

// Read runs the read tool.
func Read(ctx context.Context, args tool.ReadArgs) tool.Result {
	if r, ok := readRegular(ctx, args); ok {
		return r
	}
	return readAny(ctx, args)
}

// readRegular reads a regular file in the fewest system calls: open, fstat,
// read (the whole of a small file) and close.
//
// It reads through the descriptor rather than the os package's file, which
// costs five more calls to find that a regular file cannot be polled. It gives
// up (ok false, nothing reported) on whatever is not a regular file it could
// open. The errors, the look-alike names, directories, FIFOs and devices are
// left to readAny. The kernel enforces the sandbox's file rules on the open,
// as on any other.
func readRegular(ctx context.Context, args tool.ReadArgs) (tool.Result, bool) {
	fd, size, ok := openRegular(args.Path)
	if !ok {
		return tool.Result{}, false
	}
	// One byte more than the file holds, to see its end in the same read.
	head := make([]byte, min(size+1, filetype.HeadSize))
	n, err := readFD(fd, head)
	if err == nil && n == len(head) && n < filetype.HeadSize {
		// The file grew since fstat: the head is not complete.
		var more int
		head = append(head, make([]byte, filetype.HeadSize-n)...)
		more, err = readFD(fd, head[n:])
		n += more
	}
	if err != nil {
		unix.Close(fd)
		return tool.Errorf("read: %s: %s", args.Path, tool.ErrorText(&fs.PathError{Op: "read", Path: args.Path, Err: err})), true
	}
	if n < len(head) {
		// The head holds the whole file (most files read are small).
		unix.Close(fd)
		return readHead(ctx, head[:n], size, args), true
	}
	f := os.NewFile(uintptr(fd), args.Path)
	defer f.Close()
	return readLarge(ctx, f, head, size, args), true
}

// ReadQuick runs the read tool when that is certain to be quick. Otherwise ok
// is false, and nothing was done but looking: run Read.
//
// It is quick when path names a regular file shorter than filetype.HeadSize,
// read whole in one system call, whose result is text or metadata, not an
// image to decode. The result is then Read's.
func ReadQuick(ctx context.Context, args tool.ReadArgs) (r tool.Result, ok bool) {
	fd, size, ok := openRegular(args.Path)
	if !ok {
		return tool.Result{}, false
	}
	defer unix.Close(fd)
	return ReadQuickFD(ctx, fd, size, args)
}

// ReadQuickFD is ReadQuick for fd, a regular file of size bytes that the
// caller opened for reading and closes. The front uses it for the reads it
// serves itself, so that their results are boxsh-init's.
func ReadQuickFD(ctx context.Context, fd int, size int64, args tool.ReadArgs) (r tool.Result, ok bool) {
	if size >= filetype.HeadSize {
		return tool.Result{}, false
	}
	// One byte more than the file holds, to see its end in the same read.
	head := make([]byte, size+1)
	n, err := readFD(fd, head)
	if err != nil || n == len(head) {
		// A fault to report, or a file that grew since fstat: Read's.
		return tool.Result{}, false
	}
	head = head[:n]
	ft := filetype.Detect(head, size)
	if ft.Binary && isImage(ft.MIME, size) {
		return tool.Result{}, false
	}
	return reportHead(ctx, head, size, ft, args), true
}

// openRegular opens path if it is a regular file, and returns the descriptor
// and the file's size.
//
// ok is false, and nothing is left open, when it cannot be opened or is
// anything else.
func openRegular(path string) (fd int, size int64, ok bool) {
	// A FIFO is not opened here at all: a reader that comes and goes would
	// let a writer's open succeed, and its data would be lost when that
	// reader closes.
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return -1, 0, false
	}
	// O_NONBLOCK: a file replaced by a FIFO since the stat must not wait for
	// a writer here; the fstat below tells it.
	fd, err := openRetry(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOCTTY|unix.O_NONBLOCK)
	if err != nil {
		return -1, 0, false
	}
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return -1, 0, false
	}
	return fd, st.Size, true
}

// openRetry opens path, retrying when a signal interrupts the call.
func openRetry(path string, flags int) (int, error) {
	for {
		fd, err := unix.Open(path, flags, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// readFD fills buf from fd until it is full or the file ends.
func readFD(fd int, buf []byte) (int, error) {
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

// readAny reads whatever path names, through the os package.
func readAny(ctx context.Context, args tool.ReadArgs) tool.Result {
	path, fi, err := resolve(args.Path)
	if err != nil {
		return tool.Errorf("read: cannot open file: %s: %s", args.Path, tool.ErrorText(err))
	}
	if fi.IsDir() {
		return tool.Errorf("read: cannot open file: %s: is a directory", args.Path)
	}
	f, err := os.Open(path)
	if err != nil {
		return tool.Errorf("read: cannot open file: %s: %s", args.Path, tool.ErrorText(err))
	}
	defer f.Close()

	head := make([]byte, filetype.HeadSize)
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return tool.Errorf("read: %s: %s", args.Path, tool.ErrorText(err))
	}
	if n < len(head) {
		// The head holds the whole file.
		return readHead(ctx, head[:n], fi.Size(), args)
	}
	return readLarge(ctx, f, head, fi.Size(), args)
}

// readHead reports a file held whole in head.
func readHead(ctx context.Context, head []byte, size int64, args tool.ReadArgs) tool.Result {
	return reportHead(ctx, head, size, filetype.Detect(head, size), args)
}

// reportHead is readHead for a head whose type is ft.
func reportHead(ctx context.Context, head []byte, size int64, ft filetype.Type, args tool.ReadArgs) tool.Result {
	if ft.Binary {
		if isImage(ft.MIME, size) {
			return inlineImage(head, ft.MIME, size)
		}
		return metadata(ft.MIME, size)
	}
	if r, ok := wholeText(head, ft.MIME, args); ok {
		return r
	}
	return readText(ctx, bytes.NewReader(head), ft.MIME, int64(len(head)), args)
}

// readLarge reports a file of which head is the first filetype.HeadSize
// bytes, reading it again from the start through f.
func readLarge(ctx context.Context, f *os.File, head []byte, size int64, args tool.ReadArgs) tool.Result {
	ft := filetype.Detect(head, size)
	if ft.Binary {
		if isImage(ft.MIME, size) {
			return readImage(f, ft.MIME, size)
		}
		return metadata(ft.MIME, size)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return tool.Errorf("read: %s: %s", args.Path, tool.ErrorText(err))
	}
	return readText(ctx, f, ft.MIME, size, args)
}

// isImage tells whether a binary file of type mime and size bytes is
// shown as an image: one not too large to decode.
func isImage(mime string, size int64) bool {
	return strings.HasPrefix(mime, "image/") && size <= maxImageFile
}

// wholeText reports text that is returned whole, as readText would, without
// copying it line by line.
//
// That is text from the first line, within the line limit; a head is far below
// the byte limit. ok is false when readText must cut.
func wholeText(text []byte, mime string, args tool.ReadArgs) (tool.Result, bool) {
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

func metadata(mime string, size int64) tool.Result {
	r := tool.TextResult(fmt.Sprintf("[Binary file: %s, %d bytes]", mime, size))
	r.StructuredContent = tool.ReadOutput{Encoding: "metadata", MimeType: mime, Size: &size}
	return r
}

func readImage(f *os.File, mime string, size int64) tool.Result {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return metadata(mime, size)
	}
	raw, err := io.ReadAll(f)
	if err != nil {
		return metadata(mime, size)
	}
	return inlineImage(raw, mime, size)
}

// inlineImage reports the image file raw, fitted for inline display.
func inlineImage(raw []byte, mime string, size int64) tool.Result {
	img, err := imaging.Fit(raw, mime, imaging.DefaultLimits)
	if err != nil {
		r := tool.TextResult(fmt.Sprintf("[Image: %s, %d bytes — could not be processed for inline display]", mime, size))
		r.StructuredContent = tool.ReadOutput{Encoding: "metadata", MimeType: mime, Size: &size}
		return r
	}
	text := fmt.Sprintf("[Image: %s, %dx%d", img.MIME, img.Width, img.Height)
	if img.Resized {
		text += fmt.Sprintf(", resized from %dx%d", img.OriginalWidth, img.OriginalHeight)
	}
	text += "]"
	resized := img.Resized
	return tool.Result{
		Content: []tool.Content{
			{Type: "text", Text: text},
			{Type: "image", Data: img.Data, MimeType: img.MIME},
		},
		StructuredContent: tool.ReadOutput{
			Encoding: "image", MimeType: img.MIME,
			Width: img.Width, Height: img.Height,
			OriginalWidth: img.OriginalWidth, OriginalHeight: img.OriginalHeight,
			WasResized: &resized, Size: &size,
		},
	}
}

// readText returns lines [offset, offset+limit) within DefaultMaxBytes.
func readText(ctx context.Context, f io.Reader, mime string, size int64, args tool.ReadArgs) tool.Result {
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
		return metadata(mime, size)
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
