// Package audit keeps boxsh's audit log, one JSON line per audited event.
//
// The front appends the entries (each a tool.AuditEntry), outside the
// sandbox. It writes one for each tool call, each run of shell mode and
// each decision of the network proxy. See docs/security.md, "The audit
// log".
//
// Each entry is written with a single write(2) on a descriptor opened with
// O_APPEND. So entries of several writers never interleave, and a front
// that dies (a crash, kill -9) loses at most the entry of the call in
// flight. A death may still cut an entry short, when the kernel stops a
// write between two pages. The next Open of the file then drops that
// partial line, if no other writer has the file open, so that every line
// of the file is an entry.
package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/boxsh/boxsh/internal/front/ownfile"
	"github.com/boxsh/boxsh/internal/tool"
)

// Entry is one line of the log.
type Entry = tool.AuditEntry

// what names the file in errors.
const what = "audit log"

// Log is an open audit log.
type Log struct {
	path string
	fd   int
	f    *os.File // owns fd
	// Repaired is how many bytes of a torn last line Open dropped.
	Repaired int64
}

// Open opens the audit log path for appending. It makes the file, mode
// 0600 whatever the umask, when it does not exist. The log is kept open,
// with a shared lock, until Close.
//
// An existing path must be checked as the HTTP token file is (see
// ownfile.Check). It must be a regular file of the user's, not a symbolic
// link, with no group or other permission bits and a single link. The log
// records commands, which may hold secrets. A file another user planted,
// or a second name of it somewhere else, could be changed behind boxsh's
// back.
func Open(path string) (*Log, error) {
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_APPEND|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o600)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, ownfile.SymlinkError(what, path)
		}
		return nil, fmt.Errorf("%s %s: %w", what, path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s %s: %w", what, path, err)
	}
	if err := ownfile.Check(what, path, uint32(st.Mode), st.Uid, uint32(os.Geteuid())); err != nil {
		f.Close()
		return nil, err
	}
	if uint64(st.Nlink) != 1 {
		f.Close()
		return nil, fmt.Errorf("%s %s has %d links: another name of it could be changed by whoever can write there; give a file with one name", what, path, st.Nlink)
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s %s: %w", what, path, err)
	}
	l := &Log{path: path, fd: fd, f: f}
	// Alone with the file, drop a line a dead writer left torn; then hold
	// a shared lock, which keeps a later Open from doing so while this
	// log may be writing.
	if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) == nil {
		if l.Repaired, err = dropTornTail(fd, st.Size); err != nil {
			f.Close()
			return nil, fmt.Errorf("%s %s: %w", what, path, err)
		}
	}
	if err := unix.Flock(fd, unix.LOCK_SH); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s %s: lock: %w", what, path, err)
	}
	return l, nil
}

// dropTornTail truncates a file of size bytes whose last byte is not a
// newline after its last newline, and returns how many bytes it dropped.
func dropTornTail(fd int, size int64) (int64, error) {
	if size == 0 {
		return 0, nil
	}
	var last [1]byte
	if _, err := unix.Pread(fd, last[:], size-1); err != nil {
		return 0, err
	}
	if last[0] == '\n' {
		return 0, nil
	}
	end, err := lastNewline(fd, size)
	if err != nil {
		return 0, err
	}
	if err := unix.Ftruncate(fd, end); err != nil {
		return 0, err
	}
	return size - end, nil
}

// lastNewline is the offset just after the last newline before size (0
// when there is none).
func lastNewline(fd int, size int64) (int64, error) {
	buf := make([]byte, 64<<10)
	for end := size; end > 0; {
		start := max(end-int64(len(buf)), 0)
		b := buf[:end-start]
		if _, err := unix.Pread(fd, b, start); err != nil {
			return 0, err
		}
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			return start + int64(i) + 1, nil
		}
		end = start
	}
	return 0, nil
}

// Path is the log's file name.
func (l *Log) Path() string { return l.path }

// Close closes the log.
func (l *Log) Close() error { return l.f.Close() }

// Record appends e as one line, with one write(2). The time is set when e
// has none.
func (l *Log) Record(e Entry) error {
	if e.Time == "" {
		e.Time = Now()
	}
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("%s: encode entry: %w", what, err)
	}
	b = append(b, '\n')
	for {
		n, err := unix.Write(l.fd, b)
		switch {
		case errors.Is(err, unix.EINTR):
			continue // nothing was written
		case err != nil:
			return fmt.Errorf("%s %s: %w", what, l.path, err)
		case n != len(b):
			return fmt.Errorf("%s %s: short write (%d of %d bytes)", what, l.path, n, len(b))
		}
		return nil
	}
}

// Now is the time of an entry made now.
func Now() string { return Time(time.Now()) }

// Time is t as an entry's time: RFC 3339 with nanoseconds, UTC.
func Time(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// Tail returns the last n entries of the log, oldest first, and how many
// of the lines read were not entries.
func (l *Log) Tail(n int) ([]Entry, int, error) { return l.TailOf(n, nil) }

// TailOf returns the last n entries of the log for which keep (nil: every
// entry) is true, oldest first, and how many of the lines read were not
// entries. It reads the file backwards, one line at a time, from its end
// to the n-th entry kept or the file's start.
func (l *Log) TailOf(n int, keep func(Entry) bool) ([]Entry, int, error) {
	var st unix.Stat_t
	if err := unix.Fstat(l.fd, &st); err != nil {
		return nil, 0, fmt.Errorf("%s %s: %w", what, l.path, err)
	}
	var entries []Entry
	skipped := 0
	err := linesBack(l.fd, st.Size, func(line []byte) bool {
		if len(entries) >= n {
			return false
		}
		var e Entry
		if json.Unmarshal(line, &e) != nil || e.Kind == "" {
			skipped++
			return true
		}
		if keep == nil || keep(e) {
			entries = append(entries, e)
		}
		return len(entries) < n
	})
	if err != nil {
		return nil, 0, fmt.Errorf("%s %s: %w", what, l.path, err)
	}
	slices.Reverse(entries)
	if entries == nil {
		entries = []Entry{}
	}
	return entries, skipped, nil
}

// linesBack calls f with each complete line before size, the last first,
// until f returns false (a last line without its newline, still being
// written, is left out).
func linesBack(fd int, size int64, f func([]byte) bool) error {
	const chunk = 64 << 10
	var pending []byte // [start, end of the last complete line]
	start := size
	complete := false
	for {
		if i := bytes.LastIndexByte(pending, '\n'); complete && i >= 0 {
			// pending ends a line; the line is after the newline before it.
			body := pending[:len(pending)-1]
			if j := bytes.LastIndexByte(body, '\n'); j >= 0 || start == 0 {
				line := body[j+1:]
				pending = pending[:j+1]
				if len(line) > 0 && !f(line) {
					return nil
				}
				continue
			}
		}
		if start == 0 {
			return nil
		}
		from := max(start-chunk, 0)
		b := make([]byte, start-from, int64(len(pending))+start-from)
		if _, err := unix.Pread(fd, b, from); err != nil {
			return err
		}
		pending = append(b, pending...)
		start = from
		if !complete {
			// Drop the last line until its newline is there.
			i := bytes.LastIndexByte(pending, '\n')
			if i < 0 {
				pending = pending[:0]
				continue
			}
			pending = pending[:i+1]
			complete = true
		}
	}
}

// A LineError is a line of a log that is not an entry.
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string {
	return fmt.Sprintf("line %d is not an audit entry: %v", e.Line, e.Err)
}

// Read reads the entries of a log. It calls each for each entry in order,
// and bad for each line that is not an entry. It returns the first error
// of reading or of each.
func Read(r io.Reader, each func(Entry) error, bad func(*LineError)) error {
	br := newLineReader(r)
	for n := 1; ; n++ {
		line, err := br.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		var e Entry
		if err := json.Unmarshal(line, &e); err != nil || e.Kind == "" {
			if err == nil {
				err = errors.New("no kind")
			}
			bad(&LineError{Line: n, Err: err})
			continue
		}
		if err := each(e); err != nil {
			return err
		}
	}
}

// ReadFile opens the log path for reading, refusing a symbolic link or a
// file that is not the user's as Open does.
func ReadFile(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, ownfile.SymlinkError(what, path)
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s %s: %w", what, path, fs.ErrNotExist)
		}
		return nil, fmt.Errorf("%s %s: %w", what, path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s %s: %w", what, path, err)
	}
	if err := ownfile.Check(what, path, uint32(st.Mode), st.Uid, uint32(os.Geteuid())); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
