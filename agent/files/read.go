package files

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/boxsh/boxsh/agent/filetype"
	"github.com/boxsh/boxsh/agent/imaging"
	"github.com/boxsh/boxsh/tool"
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
	head = head[:n]
	ft := filetype.Detect(head, fi.Size())
	if ft.Binary {
		if strings.HasPrefix(ft.MIME, "image/") && fi.Size() <= maxImageFile {
			return readImage(f, ft.MIME, fi.Size())
		}
		return metadata(ft.MIME, fi.Size())
	}
	if n < len(head) {
		// The head holds the whole file (most files read are small).
		return readText(ctx, bytes.NewReader(head), ft.MIME, int64(n), args)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return tool.Errorf("read: %s: %s", args.Path, tool.ErrorText(err))
	}
	return readText(ctx, f, ft.MIME, fi.Size(), args)
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
