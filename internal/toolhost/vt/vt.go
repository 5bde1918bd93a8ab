// Package vt is a small terminal emulator that keeps the screen as text.
//
// A Terminal interprets what a program writes to a VT100/xterm-compatible
// terminal. It understands:
//
//   - printable text (UTF-8, including wide and combining characters) and the
//     C0 controls;
//   - cursor movement, erasing, and scrolling with margins;
//   - insertion and deletion of characters and lines, and tab stops;
//   - the alternate screen, saved cursors and the DEC line-drawing character
//     set.
//
// It accepts and discards colours and other graphic renditions, operating
// system commands (window titles and the like), and every sequence it does not
// implement. So the text never carries escape sequences.
//
// Lines that scroll off the top of the primary screen are kept as text in a
// bounded scrollback.
package vt

import (
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// DefaultScrollback is the number of scrolled-off lines a Terminal keeps when
// New is given a negative scrollback.
const DefaultScrollback = 1000

// maxParams bounds the number of parameters of a control sequence; further
// parameters are ignored.
const maxParams = 16

// maxParam bounds a numeric parameter so that hostile input cannot overflow.
const maxParam = 1 << 16

// maxCombining bounds the combining marks kept on one cell, in bytes.
const maxCombining = 32

// cell is one character position of the screen. The zero cell is blank.
type cell struct {
	r    rune   // the character; 0 for a blank
	comb string // combining marks drawn over r
	wide bool   // r occupies this cell and the next
	cont bool   // right half of the wide character in the previous cell
}

// line is one row of cells.
type line []cell

// clear blanks the cells of l in [from, to).
func (l line) clear(from, to int) {
	for i := from; i < to; i++ {
		l[i] = cell{}
	}
}

// fixWide blanks the halves of wide characters that an operation on l split.
func (l line) fixWide() {
	for i := range l {
		if l[i].wide && (i+1 >= len(l) || !l[i+1].cont) {
			l[i] = cell{}
		}
		if l[i].cont && (i == 0 || !l[i-1].wide) {
			l[i] = cell{}
		}
	}
}

// appendText appends the text of l to b, without trailing blanks.
func (l line) appendText(b []byte) []byte {
	end := len(l)
	for end > 0 && (l[end-1].r == 0 || l[end-1].r == ' ') && l[end-1].comb == "" {
		end--
	}
	for _, c := range l[:end] {
		switch {
		case c.cont:
			continue
		case c.r == 0:
			b = append(b, ' ')
		default:
			b = utf8.AppendRune(b, c.r)
		}
		b = append(b, c.comb...)
	}
	return b
}

// charset is a character set that can be designated as G0 or G1.
type charset uint8

const (
	charsetASCII    charset = iota // US ASCII
	charsetGraphics                // DEC special graphics (line drawing)
)

// decGraphics maps 0x5F-0x7E to the DEC special graphics characters.
var decGraphics = [...]rune{
	' ', '◆', '▒', '␉', '␌', '␍', '␊', '°', '±', '␤', '␋', '┘', '┐', '┌', '└', '┼',
	'⎺', '⎻', '─', '⎼', '⎽', '├', '┤', '┴', '┬', '│', '≤', '≥', 'π', '≠', '£', '·',
}

// cursor is the cursor state that DECSC saves and DECRC restores.
type cursor struct {
	x, y     int
	wrapnext bool // a character was written in the last column; the next wraps
	origin   bool // DECOM: row numbers are relative to the scrolling region
	charsets [2]charset
	gl       int // which of charsets is in use (SI/SO)
}

// screen is one of the two screen buffers.
type screen struct {
	lines    []line
	saved    cursor
	hasSaved bool
}

// parser states.
const (
	stateGround = iota
	stateEscape
	stateCSI
	stateCSIIgnore
	stateOSC    // operating system command: ignored up to BEL or ST
	stateString // DCS, SOS, PM and APC: ignored up to ST
)

// Terminal is an emulated terminal screen. Write feeds it output; String and
// Screen render it as text. A Terminal is not safe for concurrent use.
type Terminal struct {
	cols, rows int
	primary    screen
	alt        screen
	scr        *screen // primary or alt
	cur        cursor
	autowrap   bool // DECAWM
	insert     bool // IRM
	top        int  // scrolling region, inclusive
	bottom     int
	tabs       []bool
	last       rune // last printed character, for REP

	scrollback []string // ring buffer of rendered lines
	sbStart    int      // index of the oldest line in scrollback
	sbLen      int
	sbMax      int

	state    int
	params   [maxParams]int
	nparams  int  // number of parameters started
	private  rune // '?', '>', '<' or '=' leading a control sequence, or 0
	inter    []byte
	pending  []byte // incomplete UTF-8 sequence from the previous Write
	response []byte // replies to queries, for TakeResponse
}

// New returns a Terminal of cols columns and rows rows.
//
// It keeps at most scrollback lines scrolled off its primary screen:
// DefaultScrollback if scrollback is negative, none if it is zero. Sizes below
// 1 are taken as 1.
func New(cols, rows, scrollback int) *Terminal {
	if scrollback < 0 {
		scrollback = DefaultScrollback
	}
	t := &Terminal{
		cols:  max(cols, 1),
		rows:  max(rows, 1),
		sbMax: scrollback,
		inter: make([]byte, 0, 4),
	}
	t.primary.lines = newLines(t.cols, t.rows)
	t.reset()
	return t
}

// newLines returns rows blank lines of cols cells.
func newLines(cols, rows int) []line {
	cells := make([]cell, cols*rows)
	lines := make([]line, rows)
	for i := range lines {
		lines[i] = cells[i*cols : (i+1)*cols : (i+1)*cols]
	}
	return lines
}

// reset puts the terminal in its power-on state, keeping the scrollback.
func (t *Terminal) reset() {
	t.scr = &t.primary
	t.alt = screen{}
	t.primary.hasSaved = false
	for _, l := range t.primary.lines {
		l.clear(0, len(l))
	}
	t.cur = cursor{}
	t.autowrap = true
	t.insert = false
	t.top, t.bottom = 0, t.rows-1
	t.tabs = make([]bool, t.cols)
	for i := 8; i < t.cols; i += 8 {
		t.tabs[i] = true
	}
	t.last = 0
	t.state = stateGround
}

// Size reports the size of the screen.
func (t *Terminal) Size() (cols, rows int) { return t.cols, t.rows }

// Cursor reports the cursor position, counted from 0 at the top left.
func (t *Terminal) Cursor() (col, row int) { return t.cur.x, t.cur.y }

// AltScreen reports whether the alternate screen is shown.
func (t *Terminal) AltScreen() bool { return t.scr == &t.alt }

// ScrollbackLines reports how many lines the scrollback holds.
func (t *Terminal) ScrollbackLines() int { return t.sbLen }

// TakeResponse returns, and forgets, the replies the terminal owes the
// program for the queries it wrote (device status and attributes). The caller
// is expected to write them to the program's input.
func (t *Terminal) TakeResponse() []byte {
	r := t.response
	t.response = nil
	return r
}

// Screen renders the visible screen: one line of text per row, joined by
// newlines, with trailing blanks and trailing empty lines removed.
func (t *Terminal) Screen() string {
	return t.render(false)
}

// String renders the scrollback followed by the visible screen, like Screen.
// While the alternate screen is shown, only that screen is rendered.
func (t *Terminal) String() string {
	return t.render(true)
}

func (t *Terminal) render(withScrollback bool) string {
	var b []byte
	if withScrollback && t.scr == &t.primary {
		for i := 0; i < t.sbLen; i++ {
			b = append(b, t.scrollback[(t.sbStart+i)%len(t.scrollback)]...)
			b = append(b, '\n')
		}
	}
	for _, l := range t.scr.lines {
		b = l.appendText(b)
		b = append(b, '\n')
	}
	return strings.TrimRight(string(b), "\n")
}

// Write interprets p as output of a program running in the terminal. It
// always consumes all of p and returns len(p), nil; a UTF-8 sequence cut at
// the end of p is completed by the next Write.
func (t *Terminal) Write(p []byte) (int, error) {
	n := len(p)
	if len(t.pending) > 0 {
		p = append(t.pending, p...)
		t.pending = nil
	}
	for i := 0; i < len(p); {
		b := p[i]
		if b < utf8.RuneSelf {
			t.input(rune(b))
			i++
			continue
		}
		if !utf8.FullRune(p[i:]) {
			t.pending = append([]byte(nil), p[i:]...)
			break
		}
		r, size := utf8.DecodeRune(p[i:])
		t.input(r)
		i += size
	}
	return n, nil
}

// input runs one character through the parser.
func (t *Terminal) input(r rune) {
	if r < 0x20 || r == 0x7F {
		t.control(r)
		return
	}
	switch t.state {
	case stateGround:
		if r >= 0x80 && r < 0xA0 { // C1 controls encoded as UTF-8: ignored
			return
		}
		t.print(r)
	case stateEscape:
		switch {
		case r >= 0x20 && r <= 0x2F:
			if len(t.inter) < cap(t.inter) {
				t.inter = append(t.inter, byte(r))
			}
		case len(t.inter) == 0 && r == '[':
			t.state = stateCSI
			t.params = [maxParams]int{}
			t.nparams = 0
			t.private = 0
		case len(t.inter) == 0 && r == ']':
			t.state = stateOSC
		case len(t.inter) == 0 && (r == 'P' || r == 'X' || r == '^' || r == '_'):
			t.state = stateString
		case r >= 0x30 && r <= 0x7E:
			t.state = stateGround
			t.escDispatch(r)
		default:
			t.state = stateGround
		}
	case stateCSI:
		switch {
		case r >= '0' && r <= '9':
			if !t.startParams() {
				return
			}
			if i := t.nparams - 1; i < maxParams {
				t.params[i] = min(t.params[i]*10+int(r-'0'), maxParam)
			}
		case r == ';' || r == ':':
			if !t.startParams() {
				return
			}
			if t.nparams < maxParams {
				t.params[t.nparams] = 0
			}
			t.nparams++
		case r >= '<' && r <= '?':
			if t.nparams > 0 || t.private != 0 || len(t.inter) > 0 {
				t.state = stateCSIIgnore
				return
			}
			t.private = r
		case r >= 0x20 && r <= 0x2F:
			if len(t.inter) < cap(t.inter) {
				t.inter = append(t.inter, byte(r))
			}
		case r >= 0x40 && r <= 0x7E:
			t.state = stateGround
			t.csiDispatch(r)
		default:
			t.state = stateCSIIgnore
		}
	case stateCSIIgnore:
		if r >= 0x40 && r <= 0x7E {
			t.state = stateGround
		}
	case stateOSC, stateString:
		// The content is ignored.
	}
}

// control handles a C0 control character (or DEL) in any parser state.
func (t *Terminal) control(r rune) {
	switch r {
	case 0x1B: // ESC: also terminates a string (ST is ESC \)
		t.state = stateEscape
		t.inter = t.inter[:0]
		return
	case 0x18, 0x1A: // CAN, SUB: abort any sequence
		t.state = stateGround
		return
	}
	switch t.state {
	case stateOSC:
		if r == 0x07 { // BEL ends an OSC, as xterm allows
			t.state = stateGround
		}
		return
	case stateString:
		return
	}
	switch r {
	case 0x08: // BS
		t.cur.wrapnext = false
		if t.cur.x > 0 {
			t.cur.x--
		}
	case 0x09: // HT
		t.tab(1)
	case 0x0A, 0x0B, 0x0C: // LF, VT, FF
		t.index()
	case 0x0D: // CR
		t.cur.x = 0
		t.cur.wrapnext = false
	case 0x0E: // SO: G1
		t.cur.gl = 1
	case 0x0F: // SI: G0
		t.cur.gl = 0
	}
	// BEL, NUL, DEL and the other controls are ignored.
}

// print writes a printable character at the cursor.
func (t *Terminal) print(r rune) {
	if t.cur.charsets[t.cur.gl] == charsetGraphics && r >= 0x5F && r <= 0x7E {
		r = decGraphics[r-0x5F]
	}
	w := runeWidth(r)
	if w == 0 {
		t.combine(r)
		return
	}
	if w == 2 && t.cols < 2 {
		w = 1
	}
	if t.cur.wrapnext && t.autowrap {
		t.cur.x = 0
		t.index()
	}
	t.cur.wrapnext = false
	if w == 2 && t.cur.x == t.cols-1 {
		if t.autowrap {
			t.putBlank(t.cur.x)
			t.cur.x = 0
			t.index()
		} else {
			t.cur.x--
		}
	}
	l := t.scr.lines[t.cur.y]
	if t.insert {
		t.insertBlanks(w)
	}
	t.putBlank(t.cur.x)
	if w == 2 {
		t.putBlank(t.cur.x + 1)
		l[t.cur.x] = cell{r: r, wide: true}
		l[t.cur.x+1] = cell{cont: true}
	} else {
		l[t.cur.x] = cell{r: r}
	}
	t.last = r
	if t.cur.x+w >= t.cols {
		t.cur.x = t.cols - 1
		t.cur.wrapnext = t.autowrap
	} else {
		t.cur.x += w
	}
}

// putBlank blanks the cell at column x of the cursor line, together with the
// other half of a wide character it belongs to.
func (t *Terminal) putBlank(x int) {
	l := t.scr.lines[t.cur.y]
	if l[x].cont && x > 0 {
		l[x-1] = cell{}
	}
	if l[x].wide && x+1 < len(l) {
		l[x+1] = cell{}
	}
	l[x] = cell{}
}

// combine attaches a zero-width character to the character before the cursor.
func (t *Terminal) combine(r rune) {
	x := t.cur.x
	if !t.cur.wrapnext {
		x--
	}
	l := t.scr.lines[t.cur.y]
	if x >= 0 && l[x].cont {
		x--
	}
	if x < 0 || l[x].r == 0 {
		return
	}
	if len(l[x].comb)+utf8.RuneLen(r) <= maxCombining {
		l[x].comb += string(r)
	}
}

// tab moves the cursor forward n tab stops (backward if n is negative).
func (t *Terminal) tab(n int) {
	t.cur.wrapnext = false
	for ; n > 0 && t.cur.x < t.cols-1; n-- {
		t.cur.x++
		for t.cur.x < t.cols-1 && !t.tabs[t.cur.x] {
			t.cur.x++
		}
	}
	for ; n < 0 && t.cur.x > 0; n++ {
		t.cur.x--
		for t.cur.x > 0 && !t.tabs[t.cur.x] {
			t.cur.x--
		}
	}
}

// index moves the cursor down one line, scrolling at the bottom margin (LF).
func (t *Terminal) index() {
	t.cur.wrapnext = false
	switch {
	case t.cur.y == t.bottom:
		t.scrollUp(t.top, t.bottom, 1, true)
	case t.cur.y < t.rows-1:
		t.cur.y++
	}
}

// reverseIndex moves the cursor up one line, scrolling at the top margin (RI).
func (t *Terminal) reverseIndex() {
	t.cur.wrapnext = false
	switch {
	case t.cur.y == t.top:
		t.scrollDown(t.top, t.bottom, 1)
	case t.cur.y > 0:
		t.cur.y--
	}
}

// scrollUp moves lines top+n..bottom up by n, blanking the n lines at the
// bottom. If save is set and the lines leave the top of the primary screen,
// they go to the scrollback.
func (t *Terminal) scrollUp(top, bottom, n int, save bool) {
	n = min(n, bottom-top+1)
	if n <= 0 {
		return
	}
	lines := t.scr.lines
	if save && top == 0 && t.scr == &t.primary {
		for _, l := range lines[:n] {
			t.pushScrollback(string(l.appendText(nil)))
		}
	}
	rotate(lines[top:bottom+1], n)
	for _, l := range lines[bottom-n+1 : bottom+1] {
		l.clear(0, len(l))
	}
}

// scrollDown moves lines top..bottom-n down by n, blanking the n lines at the
// top.
func (t *Terminal) scrollDown(top, bottom, n int) {
	n = min(n, bottom-top+1)
	if n <= 0 {
		return
	}
	lines := t.scr.lines
	rotate(lines[top:bottom+1], bottom-top+1-n)
	for _, l := range lines[top : top+n] {
		l.clear(0, len(l))
	}
}

// rotate moves the first n lines of ls to its end, in place.
func rotate(ls []line, n int) {
	slices.Reverse(ls[:n])
	slices.Reverse(ls[n:])
	slices.Reverse(ls)
}

// pushScrollback appends a rendered line to the scrollback, dropping the
// oldest line when it is full.
func (t *Terminal) pushScrollback(s string) {
	if t.sbMax == 0 {
		return
	}
	if t.sbLen < t.sbMax {
		if len(t.scrollback) < t.sbMax {
			t.scrollback = append(t.scrollback, s)
		} else {
			t.scrollback[(t.sbStart+t.sbLen)%len(t.scrollback)] = s
		}
		t.sbLen++
		return
	}
	t.scrollback[t.sbStart] = s
	t.sbStart = (t.sbStart + 1) % len(t.scrollback)
}

// clearScrollback forgets the scrollback.
func (t *Terminal) clearScrollback() {
	t.scrollback = nil
	t.sbStart, t.sbLen = 0, 0
}

// escDispatch runs the escape sequence ESC inter final.
func (t *Terminal) escDispatch(final rune) {
	if len(t.inter) == 0 {
		switch final {
		case '7': // DECSC
			t.saveCursor()
		case '8': // DECRC
			t.restoreCursor()
		case 'D': // IND
			t.index()
		case 'E': // NEL
			t.cur.x = 0
			t.index()
		case 'M': // RI
			t.reverseIndex()
		case 'H': // HTS
			t.tabs[t.cur.x] = true
		case 'c': // RIS
			t.reset()
		}
		// ST (ESC \), keypad modes (ESC =, ESC >) and the rest are ignored.
		return
	}
	switch t.inter[0] {
	case '(', ')': // designate G0 or G1
		if len(t.inter) != 1 {
			return
		}
		cs := charsetASCII
		if final == '0' {
			cs = charsetGraphics
		}
		t.cur.charsets[t.inter[0]-'('] = cs
	case '#':
		if final == '8' && len(t.inter) == 1 { // DECALN: fill the screen with E
			for _, l := range t.scr.lines {
				for i := range l {
					l[i] = cell{r: 'E'}
				}
			}
			t.top, t.bottom = 0, t.rows-1
			t.cur.x, t.cur.y, t.cur.wrapnext = 0, 0, false
		}
	}
}

// param returns parameter i of the current control sequence, or def if it is
// missing or zero.
func (t *Terminal) param(i, def int) int {
	if i >= t.nparams || i >= maxParams || t.params[i] == 0 {
		return def
	}
	return t.params[i]
}

// csiDispatch runs the control sequence CSI private params inter final.
func (t *Terminal) csiDispatch(final rune) {
	if len(t.inter) > 0 {
		return // DECSCUSR, DECSTR and the like: nothing to show
	}
	switch t.private {
	case 0:
	case '?':
		switch final {
		case 'h', 'l':
			for i := 0; i < max(t.nparams, 1) && i < maxParams; i++ {
				t.setPrivateMode(t.params[i], final == 'h')
			}
		case 'J': // DECSED
			t.eraseDisplay(t.param(0, 0))
		case 'K': // DECSEL
			t.eraseLine(t.param(0, 0))
		}
		return
	default:
		return
	}
	n := t.param(0, 1)
	switch final {
	case '@': // ICH
		t.cur.wrapnext = false
		t.insertBlanks(n)
	case 'A': // CUU
		t.cursorUp(n)
	case 'B', 'e': // CUD, VPR
		t.cursorDown(n)
	case 'C', 'a': // CUF, HPR
		t.moveTo(t.cur.x+n, t.cur.y)
	case 'D': // CUB
		t.moveTo(t.cur.x-n, t.cur.y)
	case 'E': // CNL
		t.cursorDown(n)
		t.cur.x = 0
	case 'F': // CPL
		t.cursorUp(n)
		t.cur.x = 0
	case 'G', '`': // CHA, HPA
		t.moveTo(n-1, t.cur.y)
	case 'H', 'f': // CUP, HVP
		t.moveToOrigin(t.param(1, 1)-1, n-1)
	case 'I': // CHT
		t.tab(n)
	case 'J': // ED
		t.eraseDisplay(t.param(0, 0))
	case 'K': // EL
		t.eraseLine(t.param(0, 0))
	case 'L': // IL
		if t.cur.y >= t.top && t.cur.y <= t.bottom {
			t.scrollDown(t.cur.y, t.bottom, n)
			t.cur.x, t.cur.wrapnext = 0, false
		}
	case 'M': // DL
		if t.cur.y >= t.top && t.cur.y <= t.bottom {
			t.scrollUp(t.cur.y, t.bottom, n, false)
			t.cur.x, t.cur.wrapnext = 0, false
		}
	case 'P': // DCH
		t.cur.wrapnext = false
		l := t.scr.lines[t.cur.y]
		n = min(n, t.cols-t.cur.x)
		copy(l[t.cur.x:], l[t.cur.x+n:])
		l.clear(t.cols-n, t.cols)
		l.fixWide()
	case 'S': // SU
		t.scrollUp(t.top, t.bottom, n, true)
	case 'T': // SD; with more parameters it is mouse tracking
		if t.nparams <= 1 {
			t.scrollDown(t.top, t.bottom, n)
		}
	case 'X': // ECH
		t.cur.wrapnext = false
		l := t.scr.lines[t.cur.y]
		l.clear(t.cur.x, min(t.cur.x+n, t.cols))
		l.fixWide()
	case 'Z': // CBT
		t.tab(-n)
	case 'b': // REP
		if t.last != 0 {
			for range min(n, t.cols*t.rows) {
				t.print(t.last)
			}
		}
	case 'c': // DA
		if t.param(0, 0) == 0 {
			t.respond("\x1b[?1;2c")
		}
	case 'd': // VPA
		t.moveToOrigin(t.cur.x, n-1)
	case 'g': // TBC
		switch t.param(0, 0) {
		case 0:
			t.tabs[t.cur.x] = false
		case 3:
			clear(t.tabs)
		}
	case 'h', 'l': // SM, RM
		for i := 0; i < t.nparams && i < maxParams; i++ {
			if t.params[i] == 4 { // IRM
				t.insert = final == 'h'
			}
		}
	case 'n': // DSR
		switch t.param(0, 0) {
		case 5:
			t.respond("\x1b[0n")
		case 6:
			y := t.cur.y
			if t.cur.origin {
				y -= t.top
			}
			t.respond("\x1b[" + strconv.Itoa(y+1) + ";" + strconv.Itoa(t.cur.x+1) + "R")
		}
	case 'r': // DECSTBM
		top, bottom := t.param(0, 1)-1, t.param(1, t.rows)-1
		if top < bottom && bottom < t.rows {
			t.top, t.bottom = top, bottom
			t.moveToOrigin(0, 0)
		}
	case 's': // SCOSC
		if t.nparams == 0 {
			t.saveCursor()
		}
	case 'u': // SCORC
		t.restoreCursor()
	}
	// SGR (m), window manipulation (t) and the rest are ignored.
}

// setPrivateMode sets or resets a DEC private mode.
func (t *Terminal) setPrivateMode(mode int, set bool) {
	switch mode {
	case 6: // DECOM
		t.cur.origin = set
		t.moveToOrigin(0, 0)
	case 7: // DECAWM
		t.autowrap = set
		if !set {
			t.cur.wrapnext = false
		}
	case 47: // alternate screen
		t.useAltScreen(set, false)
	case 1047: // alternate screen, cleared on leaving
		if !set && t.scr == &t.alt {
			t.eraseDisplay(2)
		}
		t.useAltScreen(set, false)
	case 1048: // save or restore the cursor
		if set {
			t.saveCursor()
		} else {
			t.restoreCursor()
		}
	case 1049: // save the cursor and use a cleared alternate screen
		if set {
			if t.scr == &t.alt {
				return
			}
			t.saveCursor()
			t.useAltScreen(true, true)
		} else {
			if t.scr != &t.alt {
				return
			}
			t.useAltScreen(false, false)
			t.restoreCursor()
		}
	}
	// Cursor keys, visibility, mouse, bracketed paste and the like are
	// ignored.
}

// useAltScreen switches to the alternate screen (alt set) or back to the
// primary one, clearing the alternate screen if clear is set.
func (t *Terminal) useAltScreen(alt, clear bool) {
	if !alt {
		t.scr = &t.primary
		return
	}
	if t.alt.lines == nil {
		t.alt.lines = newLines(t.cols, t.rows)
	} else if clear {
		for _, l := range t.alt.lines {
			l.clear(0, len(l))
		}
	}
	t.scr = &t.alt
}

// saveCursor saves the cursor state of the current screen (DECSC).
func (t *Terminal) saveCursor() {
	t.scr.saved = t.cur
	t.scr.hasSaved = true
}

// restoreCursor restores the cursor state saved on the current screen
// (DECRC), or homes the cursor if none was saved.
func (t *Terminal) restoreCursor() {
	if t.scr.hasSaved {
		t.cur = t.scr.saved
	} else {
		t.cur = cursor{}
	}
	t.cur.x = min(t.cur.x, t.cols-1)
	t.cur.y = min(t.cur.y, t.rows-1)
}

// moveTo moves the cursor to column x, row y, clamped to the screen.
func (t *Terminal) moveTo(x, y int) {
	t.cur.x = min(max(x, 0), t.cols-1)
	t.cur.y = min(max(y, 0), t.rows-1)
	t.cur.wrapnext = false
}

// moveToOrigin moves the cursor to column x, row y, where y counts from the
// top margin and is confined to the scrolling region in origin mode.
func (t *Terminal) moveToOrigin(x, y int) {
	if t.cur.origin {
		y = min(max(y+t.top, t.top), t.bottom)
	}
	t.moveTo(x, y)
}

// cursorUp moves the cursor up n rows, stopping at the top margin.
func (t *Terminal) cursorUp(n int) {
	limit := 0
	if t.cur.y >= t.top {
		limit = t.top
	}
	t.moveTo(t.cur.x, max(t.cur.y-n, limit))
}

// cursorDown moves the cursor down n rows, stopping at the bottom margin.
func (t *Terminal) cursorDown(n int) {
	limit := t.rows - 1
	if t.cur.y <= t.bottom {
		limit = t.bottom
	}
	t.moveTo(t.cur.x, min(t.cur.y+n, limit))
}

// insertBlanks inserts n blanks at the cursor, shifting the rest of the line
// right (ICH).
func (t *Terminal) insertBlanks(n int) {
	l := t.scr.lines[t.cur.y]
	n = min(n, t.cols-t.cur.x)
	copy(l[t.cur.x+n:], l[t.cur.x:])
	l.clear(t.cur.x, t.cur.x+n)
	l.fixWide()
}

// eraseLine erases part of the cursor line (EL): 0 from the cursor to the
// end, 1 from the start to the cursor, 2 all of it.
func (t *Terminal) eraseLine(mode int) {
	l := t.scr.lines[t.cur.y]
	switch mode {
	case 0:
		l.clear(t.cur.x, t.cols)
	case 1:
		l.clear(0, t.cur.x+1)
	case 2:
		l.clear(0, t.cols)
	default:
		return
	}
	l.fixWide()
}

// eraseDisplay erases part of the screen (ED).
//
// mode 0 erases from the cursor to the end, 1 from the start to the cursor, 2
// all of it, and 3 the scrollback.
func (t *Terminal) eraseDisplay(mode int) {
	lines := t.scr.lines
	switch mode {
	case 0:
		t.eraseLine(0)
		for _, l := range lines[t.cur.y+1:] {
			l.clear(0, t.cols)
		}
	case 1:
		t.eraseLine(1)
		for _, l := range lines[:t.cur.y] {
			l.clear(0, t.cols)
		}
	case 2:
		for _, l := range lines {
			l.clear(0, t.cols)
		}
	case 3:
		t.clearScrollback()
	}
}

// respond queues a reply to a query.
func (t *Terminal) respond(s string) {
	if len(t.response) < 4096 {
		t.response = append(t.response, s...)
	}
}

// startParams begins the parameter list of a CSI sequence at its first
// digit or separator. Parameters after intermediate bytes make the
// sequence invalid: it is then ignored and startParams reports false.
func (t *Terminal) startParams() bool {
	if len(t.inter) > 0 {
		t.state = stateCSIIgnore
		return false
	}
	if t.nparams == 0 {
		t.nparams = 1
		t.params[0] = 0
	}
	return true
}
