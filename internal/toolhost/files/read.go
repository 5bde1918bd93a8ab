package files

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/boxsh/boxsh/internal/tool"
	"github.com/boxsh/boxsh/internal/toolhost/filetype"
	"github.com/boxsh/boxsh/internal/toolhost/imaging"
	"github.com/boxsh/boxsh/internal/toolhost/readhead"
	"golang.org/x/sys/unix"
)

// Text read limits, as in boxsh v3: whichever is reached first.
const (
	DefaultMaxLines = readhead.DefaultMaxLines
	DefaultMaxBytes = readhead.DefaultMaxBytes
)

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
	n, err := readhead.ReadFD(fd, head)
	if err == nil && n == len(head) && n < filetype.HeadSize {
		// The file grew since fstat: the head is not complete.
		var more int
		head = append(head, make([]byte, filetype.HeadSize-n)...)
		more, err = readhead.ReadFD(fd, head[n:])
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
	return readhead.Quick(ctx, fd, size, args)
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
	if ft.Binary && readhead.IsImage(ft.MIME, size) {
		return inlineImage(head, ft.MIME, size)
	}
	return readhead.Report(ctx, head, size, ft, args)
}

// readLarge reports a file of which head is the first filetype.HeadSize
// bytes, reading it again from the start through f.
func readLarge(ctx context.Context, f *os.File, head []byte, size int64, args tool.ReadArgs) tool.Result {
	ft := filetype.Detect(head, size)
	if ft.Binary {
		if readhead.IsImage(ft.MIME, size) {
			return readImage(f, ft.MIME, size)
		}
		return readhead.Metadata(ft.MIME, size)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return tool.Errorf("read: %s: %s", args.Path, tool.ErrorText(err))
	}
	return readhead.Text(ctx, f, ft.MIME, size, args)
}

func readImage(f *os.File, mime string, size int64) tool.Result {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return readhead.Metadata(mime, size)
	}
	raw, err := io.ReadAll(f)
	if err != nil {
		return readhead.Metadata(mime, size)
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
