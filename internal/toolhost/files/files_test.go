package files

import (
	"bytes"
	"context"
	"encoding/base64"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/tool"
)

var ctx = context.Background()

func file(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

func readOut(t *testing.T, args tool.ReadArgs) (tool.Result, tool.ReadOutput) {
	t.Helper()
	r := Read(ctx, args)
	require.False(t, r.IsError, "read failed: %+v", r.Content)
	sc, ok := r.StructuredContent.(tool.ReadOutput)
	require.True(t, ok)
	return r, sc
}

func lines(n int, f func(i int) string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		b.WriteString(f(i))
		b.WriteByte('\n')
	}
	return b.String()
}

func TestReadPaging(t *testing.T) {
	p := file(t, "a.txt", lines(100, func(i int) string { return "line" + string(rune('0'+i%10)) }))
	r, sc := readOut(t, tool.ReadArgs{Path: p, Offset: 20, Limit: 10})
	assert.Equal(t, "text", sc.Encoding)
	assert.Equal(t, "text/plain", sc.MimeType)
	assert.Equal(t, 10, *sc.LineCount)
	assert.True(t, *sc.Truncated)
	assert.Equal(t, 100, sc.TotalLines)
	assert.Equal(t, 30, sc.NextOffset)
	assert.Equal(t, sc.Content, r.Content[0].Text)
	assert.True(t, strings.HasPrefix(sc.Content, "line0\n"), sc.Content)

	_, sc = readOut(t, tool.ReadArgs{Path: p})
	assert.False(t, *sc.Truncated)
	assert.Equal(t, 100, *sc.LineCount)
	assert.Zero(t, sc.TotalLines)
	assert.Zero(t, sc.NextOffset)

	_, sc = readOut(t, tool.ReadArgs{Path: p, Offset: 500})
	assert.Equal(t, "", sc.Content)
	assert.Equal(t, 0, *sc.LineCount)
}

func TestReadDefaultLimits(t *testing.T) {
	p := file(t, "big.txt", lines(3000, func(i int) string { return "L" }))
	_, sc := readOut(t, tool.ReadArgs{Path: p})
	assert.Equal(t, DefaultMaxLines, *sc.LineCount)
	assert.Equal(t, 3000, sc.TotalLines)
	assert.Equal(t, 2001, sc.NextOffset)

	p = file(t, "wide.txt", lines(600, func(int) string { return strings.Repeat("x", 99) }))
	_, sc = readOut(t, tool.ReadArgs{Path: p})
	assert.True(t, *sc.Truncated)
	assert.Equal(t, 512, *sc.LineCount, "50 KB of 100-byte lines")
	assert.Equal(t, 600, sc.TotalLines)
	assert.Equal(t, 513, sc.NextOffset)

	p = file(t, "oneline.txt", strings.Repeat("y", 200_000)+"\nsecond\n")
	_, sc = readOut(t, tool.ReadArgs{Path: p})
	assert.Len(t, sc.Content, DefaultMaxBytes, "an over-long line is cut at the byte limit")
	assert.True(t, *sc.Truncated)
	assert.Equal(t, 2, sc.TotalLines)
	assert.Equal(t, 2, sc.NextOffset)
}

func TestReadKeepsExactBytes(t *testing.T) {
	for _, content := range []string{"", "no newline", "crlf\r\nlines\r\n", "héllo ✓\n"} {
		_, sc := readOut(t, tool.ReadArgs{Path: file(t, "f", content)})
		assert.Equal(t, content, sc.Content)
		assert.Equal(t, "text", sc.Encoding)
	}
}

func TestReadErrors(t *testing.T) {
	r := Read(ctx, tool.ReadArgs{Path: "/nonexistent/boxsh-file"})
	assert.True(t, r.IsError)
	assert.Equal(t, "read: cannot open file: /nonexistent/boxsh-file: no such file or directory", r.Content[0].Text)

	r = Read(ctx, tool.ReadArgs{Path: t.TempDir()})
	assert.True(t, r.IsError)
	assert.Contains(t, r.Content[0].Text, "is a directory")
}

func TestReadBinary(t *testing.T) {
	p := file(t, "x.bin", "\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00")
	r, sc := readOut(t, tool.ReadArgs{Path: p})
	assert.Equal(t, "metadata", sc.Encoding)
	assert.Equal(t, int64(16), *sc.Size)
	assert.Contains(t, r.Content[0].Text, "[Binary file: "+sc.MimeType+", 16 bytes]")

	p = file(t, "trunc.png", "\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR")
	_, sc = readOut(t, tool.ReadArgs{Path: p})
	assert.Equal(t, "metadata", sc.Encoding, "an image that cannot be decoded is metadata")
	assert.Equal(t, "image/png", sc.MimeType)
}

func TestReadImage(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 40, 30))
	img.Set(1, 1, color.RGBA{255, 0, 0, 255})
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	p := file(t, "pic.png", buf.String())
	r, sc := readOut(t, tool.ReadArgs{Path: p})
	assert.Equal(t, "image", sc.Encoding)
	assert.Equal(t, 40, sc.Width)
	assert.Equal(t, 30, sc.Height)
	require.Len(t, r.Content, 2)
	assert.Equal(t, "image", r.Content[1].Type)
	assert.Equal(t, "image/png", r.Content[1].MimeType)
	data, err := base64.StdEncoding.DecodeString(r.Content[1].Data)
	require.NoError(t, err)
	assert.Equal(t, buf.Bytes(), data, "an image within limits passes unchanged")
}

func TestLookAlikeNames(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "it\u2019s 3\u202fPM.txt"), []byte("curly\n"), 0o644))
	_, sc := readOut(t, tool.ReadArgs{Path: filepath.Join(dir, "it's 3 PM.txt")})
	assert.Equal(t, "curly\n", sc.Content)

	r := Edit(ctx, tool.EditArgs{Path: filepath.Join(dir, "it's 3 PM.txt"), Edits: []tool.Edit{{OldText: "curly", NewText: "fixed"}}})
	require.False(t, r.IsError, "%+v", r.Content)
	b, _ := os.ReadFile(filepath.Join(dir, "it\u2019s 3\u202fPM.txt"))
	assert.Equal(t, "fixed\n", string(b))
}

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a", "b", "c.txt")
	r := Write(ctx, tool.WriteArgs{Path: p, Content: "abc"})
	require.False(t, r.IsError, "%+v", r.Content)
	assert.Equal(t, "written 3 bytes", r.Content[0].Text)
	b, _ := os.ReadFile(p)
	assert.Equal(t, "abc", string(b))

	require.NoError(t, os.Chmod(p, 0o600))
	r = Write(ctx, tool.WriteArgs{Path: p, Content: "AQID", Encoding: "base64"})
	require.False(t, r.IsError)
	b, _ = os.ReadFile(p)
	assert.Equal(t, []byte{1, 2, 3}, b)
	fi, _ := os.Stat(p)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "an existing file keeps its mode")

	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink(p, link))
	require.False(t, Write(ctx, tool.WriteArgs{Path: link, Content: "via link"}).IsError)
	b, _ = os.ReadFile(p)
	assert.Equal(t, "via link", string(b))
	lfi, _ := os.Lstat(link)
	assert.True(t, lfi.Mode()&os.ModeSymlink != 0, "the link stays a link")

	entries, _ := os.ReadDir(filepath.Dir(p))
	assert.Len(t, entries, 1, "no temporary files are left behind")

	r = Write(ctx, tool.WriteArgs{Path: dir, Content: "x"})
	assert.True(t, r.IsError)
	assert.Contains(t, r.Content[0].Text, "write: cannot create file: "+dir+": is a directory")

	r = Write(ctx, tool.WriteArgs{Path: p, Content: "!!", Encoding: "base64"})
	assert.True(t, r.IsError)
	assert.Contains(t, r.Content[0].Text, "not valid base64")

	r = Write(ctx, tool.WriteArgs{Path: p, Content: "QUJD\n", Encoding: "text"})
	require.False(t, r.IsError, "%+v", r.Content)
	b, _ = os.ReadFile(p)
	assert.Equal(t, "QUJD\n", string(b), `encoding "text" writes the content as it is, as "utf8" does`)

	r = Write(ctx, tool.WriteArgs{Path: "/proc/boxsh-no/file", Content: "x"})
	assert.True(t, r.IsError)
	assert.True(t, strings.HasPrefix(r.Content[0].Text, "write: "))
}

func edit(t *testing.T, content string, edits ...tool.Edit) (tool.Result, string) {
	t.Helper()
	p := file(t, "e.txt", content)
	r := Edit(ctx, tool.EditArgs{Path: p, Edits: edits})
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return r, string(b)
}

func TestEdit(t *testing.T) {
	cases := []struct {
		name, in, out string
		edits         []tool.Edit
	}{
		{"single", "hello world\n", "hello earth\n", []tool.Edit{ed("world", "earth")}},
		{"multiple", "foo\nbar\nbaz\n", "FOO\nbar\nBAZ\n", []tool.Edit{ed("baz", "BAZ"), ed("foo", "FOO")}},
		{"crlf kept", "hello\r\nworld\r\n", "hi\r\nearth\r\n", []tool.Edit{ed("hello\nworld", "hi\nearth")}},
		{"crlf in oldText", "a\r\nb\r\n", "a\r\nB\r\n", []tool.Edit{ed("a\r\nb", "a\nB")}},
		{"bom kept", "\ufeffhello world\n", "\ufeffhi world\n", []tool.Edit{ed("hello", "hi")}},
		{"bom and crlf", "\ufefffoo\r\nbar\r\n", "\ufeffFOO\r\nBAR\r\n", []tool.Edit{ed("foo\nbar", "FOO\nBAR")}},
		{"fuzzy trailing blanks", "hello   \nworld  \n", "hi\nearth\n", []tool.Edit{ed("hello\nworld", "hi\nearth")}},
		{"fuzzy tabs", "aaa\t\nbbb\n", "AAA\nBBB\n", []tool.Edit{ed("aaa\nbbb", "AAA\nBBB")}},
		{"exact preferred", "hello\nworld\n", "hi\nearth\n", []tool.Edit{ed("hello\nworld", "hi\nearth")}},
		{"delete", "keep\ndrop\n", "keep\n", []tool.Edit{ed("drop\n", "")}},
	}
	for _, c := range cases {
		r, got := edit(t, c.in, c.edits...)
		require.False(t, r.IsError, "%s: %+v", c.name, r.Content)
		assert.Equal(t, c.out, got, c.name)
	}
}

func TestEditDiff(t *testing.T) {
	r, _ := edit(t, "one\ntwo\nthree\nfour\n", tool.Edit{OldText: "three", NewText: "THREE"})
	sc := r.StructuredContent.(tool.EditOutput)
	assert.Equal(t, 3, sc.FirstChangedLine)
	assert.Contains(t, sc.Diff, "-three\n+THREE\n")
	assert.Contains(t, sc.Diff, "@@ -")
	assert.Contains(t, sc.Diff, " two\n", "the diff has context lines")
}

func TestEditRefusals(t *testing.T) {
	cases := []struct {
		name, in, msg string
		edits         []tool.Edit
	}{
		{"ambiguous", "repeat\nrepeat\n", "not unique", []tool.Edit{ed("repeat", "once")}},
		{"fuzzy ambiguous", "dup  \ndup  \n", "not unique", []tool.Edit{ed("dup", "x")}},
		{"missing", "hello\n", "not found", []tool.Edit{ed("goodbye", "hi")}},
		{"empty oldText", "hello\n", "must not be empty", []tool.Edit{ed("", "x")}},
		{"overlap", "abcdef\n", "overlapping", []tool.Edit{ed("abcd", "x"), ed("cdef", "y")}},
		{"all or nothing", "a\nb\n", "not found", []tool.Edit{ed("a", "A"), ed("zzz", "Z")}},
	}
	for _, c := range cases {
		r, got := edit(t, c.in, c.edits...)
		assert.True(t, r.IsError, c.name)
		assert.Contains(t, r.Content[0].Text, c.msg, c.name)
		assert.Nil(t, r.StructuredContent, c.name)
		assert.Equal(t, c.in, got, "%s: the file is unchanged", c.name)
	}
	r := Edit(ctx, tool.EditArgs{Path: "/no/such/file.txt", Edits: []tool.Edit{ed("x", "y")}})
	assert.True(t, r.IsError)
	assert.Contains(t, r.Content[0].Text, "edit: cannot open file: /no/such/file.txt")
}

func ed(oldText, newText string) tool.Edit { return tool.Edit{OldText: oldText, NewText: newText} }

// TestReadRegularMatchesGeneralPath checks that the short path for regular
// files (readRegular) answers exactly as the general one (readAny) does.
//
// It checks both sides of the head size, with paging, for binary, non-UTF-8
// and empty files, and for /proc files, whose size is reported as 0.
func TestReadRegularMatchesGeneralPath(t *testing.T) {
	line := "the quick brown fox jumps over the lazy dog 0123456789abcdef\n" // 61 bytes
	text := strings.Repeat(line, 400)
	var paths []string
	for _, n := range []int{0, 1, 60, 61, 1024, 8190, 8191, 8192, 8193, 9000, len(text)} {
		paths = append(paths, file(t, "f", text[:n]))
	}
	paths = append(paths,
		file(t, "latin1", "caf\xe9\n"),
		file(t, "elf", "\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00"),
		file(t, "html", "<!DOCTYPE html><html><body>x</body></html>\n"),
		"/proc/self/limits", "/proc/self/cmdline",
	)
	for _, p := range paths {
		for _, args := range []tool.ReadArgs{{Path: p}, {Path: p, Offset: 2}, {Path: p, Limit: 3}, {Path: p, Offset: 130, Limit: 5}} {
			fast, ok := readRegular(ctx, args)
			require.True(t, ok, "%s is a regular file", p)
			assert.Equal(t, readAny(ctx, args), fast, "%+v", args)
		}
	}
	for _, p := range []string{"/nonexistent/boxsh-file", t.TempDir(), "/dev/null"} {
		_, ok := readRegular(ctx, tool.ReadArgs{Path: p})
		assert.False(t, ok, "%s is left to the general path", p)
	}
}

// TestReadQuick checks that ReadQuick answers exactly as Read does where it
// answers, and that it answers small text and binary files.
//
// It also checks that ReadQuick leaves to Read, without blocking, whatever is
// not certain to be quick: files of the head size and more, images (decoded),
// FIFOs, directories, devices, missing files and /proc files (size 0).
func TestReadQuick(t *testing.T) {
	line := "the quick brown fox jumps over the lazy dog 0123456789abcdef\n" // 61 bytes
	text := strings.Repeat(line, 200)
	img := image.NewRGBA(image.Rect(0, 0, 4, 3))
	var png8 bytes.Buffer
	require.NoError(t, png.Encode(&png8, img))
	var quick []string
	for _, n := range []int{0, 1, 61, 1024, 8191} {
		quick = append(quick, file(t, "f", text[:n]))
	}
	quick = append(quick,
		file(t, "latin1", "caf\xe9\n"),
		file(t, "elf", "\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00"),
	)
	for _, p := range quick {
		for _, args := range []tool.ReadArgs{{Path: p}, {Path: p, Offset: 2}, {Path: p, Limit: 3}, {Path: p, Offset: 130, Limit: 5}} {
			r, ok := ReadQuick(ctx, args)
			require.True(t, ok, "%+v is quick", args)
			assert.Equal(t, Read(ctx, args), r, "%+v", args)
		}
	}
	fifo := filepath.Join(t.TempDir(), "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	for _, p := range []string{
		file(t, "f", text[:8192]), file(t, "big", text),
		file(t, "pic.png", png8.String()), file(t, "trunc.png", "\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR"),
		fifo, t.TempDir(), "/dev/null", "/nonexistent/boxsh-file", "/proc/self/limits",
	} {
		_, ok := ReadQuick(ctx, tool.ReadArgs{Path: p})
		assert.False(t, ok, "%s is left to Read", p)
	}
}
