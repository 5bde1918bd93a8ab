package audit

import (
	"bufio"
	"bytes"
	"io"
)

// maxLine bounds a line Read accepts: entries are far smaller (their
// strings are cut, see Summarize).
const maxLine = 4 << 20

// lineReader reads lines of any length up to maxLine; a longer line is
// returned cut (and then fails to parse).
type lineReader struct {
	r *bufio.Reader
}

func newLineReader(r io.Reader) *lineReader { return &lineReader{bufio.NewReaderSize(r, 64<<10)} }

// next returns the next line without its newline; a last line without one
// too.
func (lr *lineReader) next() ([]byte, error) {
	var line []byte
	for {
		b, err := lr.r.ReadSlice('\n')
		if len(line)+len(b) <= maxLine {
			line = append(line, b...)
		}
		switch err {
		case nil:
			return bytes.TrimSuffix(line, []byte{'\n'}), nil
		case bufio.ErrBufferFull:
			continue
		case io.EOF:
			if len(line) == 0 {
				return nil, io.EOF
			}
			return line, nil
		default:
			return nil, err
		}
	}
}
