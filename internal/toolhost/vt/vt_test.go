package vt

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRender(t *testing.T) {
	tests := []struct {
		name       string
		cols, rows int
		in         string
		want       string
	}{
		// Text and C0 controls.
		{"plain", 20, 5, "hello", "hello"},
		{"empty", 20, 5, "", ""},
		{"crlf", 20, 5, "one\r\ntwo", "one\ntwo"},
		{"lf keeps column", 20, 5, "ab\ncd", "ab\n  cd"},
		{"cr overwrites", 20, 5, "hello\rworld", "world"},
		{"cr partial overwrite", 20, 5, "hello\rHE", "HEllo"},
		{"backspace", 20, 5, "abc\b\bXY", "aXY"},
		{"backspace at column 0", 20, 5, "\b\bab", "ab"},
		{"tab", 20, 5, "A\tB", "A       B"},
		{"tab from column 8", 20, 5, "12345678\tB", "12345678        B"},
		{"tab stops at last column", 12, 5, "A\t\t\tB", "A          B"},
		{"vertical tab and form feed are line feeds", 20, 5, "a\vb\fc", "a\n b\n  c"},
		{"bell and nul ignored", 20, 5, "a\a\x00b\x7fc", "abc"},
		{"trailing spaces trimmed", 20, 5, "ab   \r\ncd  ", "ab\ncd"},
		{"trailing empty lines removed", 20, 5, "ab\r\n\r\n\r\n", "ab"},
		{"inner empty lines kept", 20, 5, "a\r\n\r\nb", "a\n\nb"},
		{"utf8", 20, 5, "héllo wörld ✓", "héllo wörld ✓"},
		{"wide characters", 20, 5, "日本語x", "日本語x"},
		{"wide character overwritten by narrow", 20, 5, "日本\rX", "X 本"},
		{"wide character half overwritten", 20, 5, "日本\x1b[2GX", " X本"},
		{"combining mark", 20, 5, "e\u0301!", "e\u0301!"},
		{"c1 controls ignored", 20, 5, "a\u0085b", "ab"},
		{"invalid utf8", 20, 5, "a\xffb", "a\ufffdb"},

		// Wrapping.
		{"autowrap", 5, 3, "abcdefg", "abcde\nfg"},
		{"exact width does not wrap early", 5, 3, "abcde", "abcde"},
		{"pending wrap then cr", 5, 3, "abcde\rX", "Xbcde"},
		{"pending wrap then crlf", 5, 3, "abcde\r\nX", "abcde\nX"},
		{"wide character wraps whole", 5, 3, "abcd日", "abcd\n日"},
		{"no autowrap", 5, 3, "\x1b[?7labcdefg", "abcdg"},
		{"autowrap back on", 5, 3, "\x1b[?7l\x1b[?7habcdefg", "abcde\nfg"},

		// SGR and other ignored sequences.
		{"sgr colour", 20, 5, "\x1b[31mRED\x1b[0m NORMAL", "RED NORMAL"},
		{"sgr bold underline", 20, 5, "\x1b[1mBOLD\x1b[22m \x1b[4mUNDER\x1b[24m", "BOLD UNDER"},
		{"sgr 256 and truecolour", 20, 5, "\x1b[38;5;196mFG256\x1b[0m \x1b[48;2;0;128;255mTRUE\x1b[0m", "FG256 TRUE"},
		{"sgr colon subparameters", 20, 5, "\x1b[38:2::10:20:30mX\x1b[m", "X"},
		{"osc title bel", 20, 5, "\x1b]0;my title\aTEXT", "TEXT"},
		{"osc title st", 20, 5, "\x1b]2;my title\x1b\\TEXT", "TEXT"},
		{"osc hyperlink", 30, 5, "\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "link"},
		{"dcs ignored", 20, 5, "a\x1bP1$r0m\x1b\\b", "ab"},
		{"apc ignored", 20, 5, "a\x1b_Gi=1;AAAA\x1b\\b", "ab"},
		{"private modes ignored", 20, 5, "\x1b[?25l\x1b[?2004h\x1b[?1h\x1b=ok\x1b[?25h", "ok"},
		{"unknown csi ignored", 20, 5, "a\x1b[5;6;7zb\x1b[>4;1mc\x1b[ q", "abc"},
		{"csi with intermediate ignored", 20, 5, "a\x1b[!pb", "ab"},
		{"unknown esc ignored", 20, 5, "a\x1bNb\x1b%Gc", "abc"},
		{"can aborts sequence", 20, 5, "a\x1b[3\x18b", "ab"},
		{"control inside csi", 20, 5, "ab\x1b[1\bCX", "abX"},
		{"window ops ignored", 20, 5, "\x1b[22;0;0tX", "X"},

		// Cursor movement.
		{"cub", 20, 5, "ABCDE\x1b[3Dxyz", "ABxyz"},
		{"cub default", 20, 5, "ABC\x1b[Dx", "ABx"},
		{"cub stops at margin", 20, 5, "AB\x1b[10Dx", "xB"},
		{"cuf", 20, 5, "AB\x1b[3CCD", "AB   CD"},
		{"cuf stops at right edge", 5, 3, "A\x1b[99CB", "A   B"},
		{"cuu cud", 20, 5, "a\r\nb\x1b[AX\x1b[2BY", "aX\nb\n  Y"},
		{"cup", 20, 5, "\x1b[2;3HX\x1b[HY", "Y\n  X"},
		{"hvp", 20, 5, "\x1b[3;2fX", "\n\n X"},
		{"cup clamps", 5, 3, "\x1b[99;99HX", "\n\n    X"},
		{"cha", 20, 5, "abcdef\x1b[2GX", "aXcdef"},
		{"hpa", 20, 5, "abcdef\x1b[3`X", "abXdef"},
		{"hpr", 20, 5, "ab\x1b[2aX", "ab  X"},
		{"vpa", 20, 5, "ab\x1b[3dX", "ab\n\n  X"},
		{"vpr", 20, 5, "ab\x1b[eX", "ab\n  X"},
		{"cnl cpl", 20, 5, "ab\x1b[2EX\x1b[FY", "ab\nY\nX"},
		{"cht cbt", 20, 5, "\x1b[2IX\x1b[2ZY", "        Y       X"},
		{"save restore esc", 20, 5, "ab\x1b7\r\nlater\x1b8X", "abX\nlater"},
		{"save restore csi", 20, 5, "ab\x1b[s\r\nlater\x1b[uX", "abX\nlater"},
		{"restore without save homes", 20, 5, "ab\r\ncd\x1b8X", "Xb\ncd"},

		// Erasing.
		{"el 0", 20, 5, "XXXX\rAB\x1b[K", "AB"},
		{"el 1", 20, 5, "abcdef\x1b[3G\x1b[1K", "   def"},
		{"el 2", 20, 5, "abcdef\x1b[2K", ""},
		{"el splits wide character", 20, 5, "日本\x1b[2G\x1b[K", ""},
		{"ed 0", 20, 5, "aaa\r\nbbb\r\nccc\x1b[2;2H\x1b[J", "aaa\nb"},
		{"ed 1", 20, 5, "aaa\r\nbbb\r\nccc\x1b[2;2H\x1b[1J", "\n  b\nccc"},
		{"ed 2", 20, 5, "OLD\n\x1b[2J\x1b[HNEW", "NEW"},
		{"ed 3 keeps screen", 20, 2, "1\r\n2\r\n3\x1b[3J", "2\n3"},
		{"clear", 20, 2, "1\r\n2\r\n3\x1b[H\x1b[2J\x1b[3J", ""},
		{"ech", 20, 5, "abcdef\x1b[2G\x1b[3X", "a   ef"},
		{"decsed", 20, 5, "abc\x1b[2G\x1b[?J", "a"},

		// Inserting and deleting.
		{"ich", 20, 5, "abcdef\x1b[3G\x1b[2@", "ab  cdef"},
		{"ich pushes off the edge", 6, 3, "abcdef\x1b[1G\x1b[2@", "  abcd"},
		{"dch", 20, 5, "abcdef\x1b[2G\x1b[2P", "adef"},
		{"dch more than line", 20, 5, "abcdef\x1b[2G\x1b[99P", "a"},
		{"irm", 20, 5, "abc\x1b[2G\x1b[4hXY\x1b[4lZ", "aXYZc"},
		{"il", 20, 5, "1\r\n2\r\n3\x1b[2H\x1b[L", "1\n\n2\n3"},
		{"il pushes off the bottom", 20, 3, "1\r\n2\r\n3\x1b[1H\x1b[2L", "\n\n1"},
		{"dl", 20, 5, "1\r\n2\r\n3\r\n4\x1b[2H\x1b[2M", "1\n4"},
		{"rep", 20, 5, "a\x1b[3b", "aaaa"},

		// Scrolling.
		{"scroll at bottom", 20, 3, "1\r\n2\r\n3\r\n4", "1\n2\n3\n4"},
		{"su", 20, 3, "1\r\n2\r\n3\x1b[S", "1\n2\n3"},
		{"sd", 20, 3, "1\r\n2\r\n3\x1b[T", "\n1\n2"},
		{"ri at top", 20, 3, "1\r\n2\r\n3\x1b[H\x1bMx", "x\n1\n2"},
		{"ind nel", 20, 3, "a\x1bDb\x1bEc", "a\n b\nc"},
		{"scroll region", 20, 4, "1\r\n2\r\n3\r\n4\x1b[2;3r\x1b[3H\nX", "1\n3\nX\n4"},
		{"scroll region ri", 20, 4, "1\r\n2\r\n3\r\n4\x1b[2;3r\x1b[2H\x1bMX", "1\nX\n2\n4"},
		{"scroll region il", 20, 4, "1\r\n2\r\n3\r\n4\x1b[2;3r\x1b[2H\x1b[LX", "1\nX\n2\n4"},
		{"origin mode", 20, 4, "\x1b[2;3r\x1b[?6h\x1b[1;1HX\x1b[9;1HY", "\nX\nY"},
		{"decstbm reset", 20, 3, "\x1b[1;2r\x1b[r\x1b[3H1\r\n2", "\n\n1\n2"},

		// Tab stops.
		{"hts tbc", 20, 5, "\x1b[3G\x1bH\x1b[g\r\tX", "        X"},
		{"hts", 20, 5, "\x1b[4G\x1bH\r\tX", "   X"},
		{"tbc all", 10, 5, "\x1b[3g\tX", "         X"},

		// Character sets.
		{"dec graphics", 20, 5, "\x1b(0lqk\x1b(B x", "┌─┐ x"},
		{"so si", 20, 5, "\x1b)0a\x0eq\x0fq", "a─q"},

		// Screens.
		{"alt screen 1049", 20, 5, "main\x1b[?1049hALT", "    ALT"},
		{"alt screen 1049 restores", 20, 5, "main\x1b[?1049hALT\x1b[?1049lX", "mainX"},
		{"alt screen 1049 cleared on entry", 20, 5, "\x1b[?1049hA\x1b[?1049l\x1b[?1049h", ""},
		{"alt screen 47", 20, 5, "main\x1b[?47h\x1b[HALT\x1b[?47l", "main"},
		{"alt screen 1047", 20, 5, "m\x1b[?1047hA\x1b[?1047l\x1b[?1047h", ""},
		{"alt screen 1048", 20, 5, "ab\x1b[?1048h\r\ncd\x1b[?1048lX", "abX\ncd"},
		{"ris", 20, 5, "abc\x1b[?1049hdef\x1bcX", "X"},
		{"decaln", 3, 2, "\x1b#8", "EEE\nEEE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			term := New(tt.cols, tt.rows, DefaultScrollback)
			_, err := term.Write([]byte(tt.in))
			require.NoError(t, err)
			assert.Equal(t, tt.want, term.String())
		})
	}
}

// TestWriteSplit feeds every input one byte at a time: a sequence or a UTF-8
// character cut between two writes must not change the result.
func TestWriteSplit(t *testing.T) {
	in := "\x1b[31mRED\x1b[0m 日本 é\x1b]0;title\a\x1b[2;3HX\x1b[1;1Hé\x1b(0q\x1b(B"
	whole := New(20, 5, 0)
	_, _ = whole.Write([]byte(in))

	split := New(20, 5, 0)
	for i := range len(in) {
		_, _ = split.Write([]byte{in[i]})
	}
	assert.Equal(t, "é─D 日本 é\n  X", whole.String())
	assert.Equal(t, whole.String(), split.String())
}

func TestCursor(t *testing.T) {
	tests := []struct {
		name       string
		in         string
		wantX      int
		wantY      int
		wantString string
	}{
		{"after text", "abc", 3, 0, "abc"},
		{"pending wrap stays in last column", "0123456789", 9, 0, "0123456789"},
		{"after cup", "\x1b[3;4H", 3, 2, ""},
		{"after crlf", "ab\r\n", 0, 1, "ab"},
		{"at bottom after scroll", "1\r\n2\r\n3\r\n4\r\n5", 1, 3, "1\n2\n3\n4\n5"},
		{"wide", "日", 2, 0, "日"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			term := New(10, 4, DefaultScrollback)
			_, _ = term.Write([]byte(tt.in))
			x, y := term.Cursor()
			assert.Equal(t, tt.wantX, x, "column")
			assert.Equal(t, tt.wantY, y, "row")
			assert.Equal(t, tt.wantString, term.String())
		})
	}
}

func TestScrollback(t *testing.T) {
	term := New(10, 3, 5)
	for i := 1; i <= 20; i++ {
		_, _ = term.Write([]byte(strconv.Itoa(i) + "\r\n"))
	}
	// 20 lines and an empty last line: the screen shows 19, 20 and the empty
	// line; the scrollback keeps the 5 lines before.
	assert.Equal(t, 5, term.ScrollbackLines())
	assert.Equal(t, "14\n15\n16\n17\n18\n19\n20", term.String())
	assert.Equal(t, "19\n20", term.Screen())

	_, _ = term.Write([]byte("\x1b[3J"))
	assert.Equal(t, 0, term.ScrollbackLines())
	assert.Equal(t, "19\n20", term.String())

	_, _ = term.Write([]byte("a\r\nb\r\nc\r\nd"))
	assert.Equal(t, "19\n20\na\nb\nc\nd", term.String())
}

func TestScrollbackNotFromAltScreenOrRegion(t *testing.T) {
	term := New(10, 3, 100)
	_, _ = term.Write([]byte("\x1b[?1049h1\r\n2\r\n3\r\n4\r\n5"))
	assert.Equal(t, 0, term.ScrollbackLines(), "alternate screen")
	assert.Equal(t, "3\n4\n5", term.String())
	assert.True(t, term.AltScreen())

	_, _ = term.Write([]byte("\x1b[?1049l\x1b[2;3r\x1b[3H\n\n\n"))
	assert.False(t, term.AltScreen())
	assert.Equal(t, 0, term.ScrollbackLines(), "region not at the top")

	_, _ = term.Write([]byte("\x1b[rA\x1b[2H\x1b[M"))
	assert.Equal(t, 0, term.ScrollbackLines(), "deleted lines")
}

func TestScrollbackWhileAltScreenHidden(t *testing.T) {
	term := New(10, 2, 100)
	_, _ = term.Write([]byte("1\r\n2\r\n3"))
	_, _ = term.Write([]byte("\x1b[?1049h\x1b[Hvim"))
	assert.Equal(t, "vim", term.String(), "the alternate screen hides the scrollback")
	_, _ = term.Write([]byte("\x1b[?1049l"))
	assert.Equal(t, "1\n2\n3", term.String())
}

func TestNoScrollback(t *testing.T) {
	term := New(10, 2, 0)
	_, _ = term.Write([]byte("1\r\n2\r\n3"))
	assert.Equal(t, "2\n3", term.String())
	assert.Equal(t, 0, term.ScrollbackLines())
}

func TestBounded(t *testing.T) {
	term := New(80, 24, DefaultScrollback)
	var b strings.Builder
	for i := range 100000 {
		b.WriteString(strconv.Itoa(i))
		b.WriteString("\r\n")
	}
	_, _ = term.Write([]byte(b.String()))
	out := term.String()
	lines := strings.Split(out, "\n")
	assert.Len(t, lines, DefaultScrollback+23)
	assert.Equal(t, "99999", lines[len(lines)-1])
	assert.Equal(t, strconv.Itoa(100000-DefaultScrollback-23), lines[0])
}

func TestResponses(t *testing.T) {
	term := New(20, 5, 0)
	assert.Empty(t, term.TakeResponse())
	_, _ = term.Write([]byte("ab\r\ncd\x1b[6n\x1b[5n\x1b[c\x1b[>c"))
	assert.Equal(t, "\x1b[2;3R\x1b[0n\x1b[?1;2c", string(term.TakeResponse()))
	assert.Empty(t, term.TakeResponse())
	assert.Equal(t, "ab\ncd", term.String())
}

func TestNeverEscapes(t *testing.T) {
	// Garbage of every kind must not leak control characters into the text.
	var b strings.Builder
	for i := range 4096 {
		b.WriteByte(byte(i*7919 + i/3))
	}
	term := New(40, 10, 50)
	_, _ = term.Write([]byte(b.String()))
	_, _ = term.Write([]byte("\x1b[0m\x1b\\\r\nEND"))
	out := term.String()
	for _, r := range out {
		if r == '\n' {
			continue
		}
		assert.False(t, r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0), "control %U in output", r)
	}
	assert.True(t, strings.HasSuffix(out, "END"), out)
}

func TestSmallSizes(t *testing.T) {
	term := New(0, 0, -1)
	cols, rows := term.Size()
	assert.Equal(t, 1, cols)
	assert.Equal(t, 1, rows)
	_, _ = term.Write([]byte("ab日"))
	assert.Equal(t, "a\nb\n日", term.String())
	_, _ = term.Write([]byte("\x1b[5@\x1b[5P\x1b[L\x1b[M\t\x1b[Z\x1b[5b\x1b[?1049h\x1b[2;3r"))
	assert.Equal(t, "", term.String())
}

func TestRuneWidth(t *testing.T) {
	tests := []struct {
		r    rune
		want int
	}{
		{'a', 1}, {'é', 1}, {0xAD, 1}, {'─', 1}, {'✓', 1},
		{0x0301, 0}, {0x200D, 0}, {0xFE0F, 0},
		{'日', 2}, {'한', 2}, {'Ａ', 2}, {0x1F600, 2}, {0x20000, 2}, {0x3000, 2},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, runeWidth(tt.r), "%U", tt.r)
	}
}

// FuzzWrite checks that no input makes the terminal panic or leak control
// characters into its text.
func FuzzWrite(f *testing.F) {
	for _, seed := range []string{
		"hello\r\nworld",
		"\x1b[31mRED\x1b[0m",
		"\x1b[2;3r\x1b[?6h\x1b[5;5H\x1b[3L\x1b[2M\x1b[4@\x1b[3P\x1b[9X",
		"\x1b[?1049h日本\x1b[?1049l\x1b(0lqk\x1b(B",
		"\x1b]0;t\a\x1bP$q\x1b\\\x1b[6n\x1b[99b",
		"e\u0301\u0301\u0301\t\b\x1b[Z\x1b[3g\x1bH\x1b7\x1b8\x1bc",
	} {
		f.Add([]byte(seed), uint8(10), uint8(4))
	}
	f.Fuzz(func(t *testing.T, in []byte, cols, rows uint8) {
		term := New(int(cols%50), int(rows%20), 8)
		_, _ = term.Write(in)
		x, y := term.Cursor()
		c, r := term.Size()
		if x < 0 || x >= c || y < 0 || y >= r {
			t.Fatalf("cursor %d,%d outside %dx%d", x, y, c, r)
		}
		for _, ch := range term.String() {
			if ch != '\n' && (ch < 0x20 || ch == 0x7f || (ch >= 0x80 && ch < 0xa0)) {
				t.Fatalf("control %U in output", ch)
			}
		}
	})
}
