package filetype

import (
	"bytes"
	"strings"
)

// Copies of mimetype's text detectors (internal/magic/text.go,
// text_csv.go, internal/csv and internal/scan of v1.4.16), and bounds for
// the ones not copied. See fast.go.

// isWS is mimetype's whitespace (scan.ByteIsWS).
func isWS(c byte) bool {
	return c == '\t' || c == '\n' || c == '\x0c' || c == '\r' || c == ' '
}

// trimLWS drops leading whitespace (scan.Bytes.TrimLWS).
func trimLWS(b []byte) []byte {
	i := 0
	for i < len(b) && isWS(b[i]) {
		i++
	}
	return b[i:]
}

// firstLine returns the first line of b without its line feed and one
// carriage return before it, and the rest of b (scan.Bytes.Line).
func firstLine(b []byte) (line, rest []byte) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		line, rest = b, b[len(b):]
	} else {
		line, rest = b[:i], b[i+1:]
	}
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, rest
}

// Match flags (scan.Flags).
const (
	compactWS  = 1 << iota // one space of the pattern matches a run of spaces
	ignoreCase             // an upper-case letter of the pattern matches either case
	fullWord               // the match must be followed by a space or the end
)

// matchLen returns how many bytes of b pattern p matches at its start, or
// -1 (scan.Bytes.Match).
func matchLen(b, p []byte, flags int) int {
	l := len(b)
	if len(p) == 0 {
		return 0
	}
	if l == 0 {
		return -1
	}
	if flags == 0 || flags == fullWord {
		if !bytes.HasPrefix(b, p) {
			return -1
		}
		b, p = b[len(p):], p[len(p):]
	}
	for len(b) > 0 && len(p) > 0 {
		switch {
		case flags&ignoreCase != 0 && 'A' <= p[0] && p[0] <= 'Z':
			c := b[0]
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			if c != p[0] {
				return -1
			}
			b, p = b[1:], p[1:]
		case flags&compactWS != 0 && isWS(p[0]):
			p = p[1:]
			if !isWS(b[0]) {
				return -1
			}
			b = b[1:]
			if len(p) > 0 && !isWS(p[0]) {
				b = trimLWS(b)
			}
		default:
			if b[0] != p[0] {
				return -1
			}
			b, p = b[1:], p[1:]
		}
	}
	if len(p) > 0 {
		return -1
	}
	if flags&fullWord != 0 && len(b) > 0 && !isWS(b[0]) {
		return -1
	}
	return l - len(b)
}

// search reports whether pattern p matches b at some index
// (scan.Bytes.Search with flags other than 0).
func search(b, p []byte, flags int) bool {
	for i := range b {
		if len(b)-i < len(p) {
			return false
		}
		if matchLen(b[i:], p, flags) != -1 {
			return true
		}
	}
	return false
}

// ciCheck reports whether raw starts with sig, upper-case letters of sig
// matching either case, and has at least one more byte (magic.ciCheck).
func ciCheck(sig string, raw []byte) bool {
	if len(raw) < len(sig)+1 {
		return false
	}
	for i := 0; i < len(sig); i++ {
		b, db := sig[i], raw[i]
		if 'A' <= b && b <= 'Z' {
			db &= 0xDF
		}
		if b != db {
			return false
		}
	}
	return true
}

// ciPrefix reports whether ciCheck holds for any of sigs.
func ciPrefix(raw []byte, sigs ...string) bool {
	for _, s := range sigs {
		if ciCheck(s, raw) {
			return true
		}
	}
	return false
}

// markup reports whether raw, after a UTF-8 byte-order mark and
// whitespace, starts with one of sigs followed by whitespace or '>'
// (magic.markup).
func markup(raw []byte, sigs ...string) bool {
	raw = bytes.TrimPrefix(raw, []byte("\xef\xbb\xbf"))
	raw = trimLWS(raw)
	if len(raw) == 0 {
		return false
	}
	for _, s := range sigs {
		if ciCheck(s, raw) {
			if c := raw[len(s)]; isWS(c) || c == '>' {
				return true
			}
		}
	}
	return false
}

// svgMay bounds magic.Svg: with or without an XML declaration, "<svg" must
// occur.
func svgMay(raw []byte) verdict {
	if bytes.Contains(raw, []byte("<svg")) {
		return maybe
	}
	return no
}

// isHTML is magic.HTML.
func isHTML(raw []byte) bool {
	return markup(raw,
		"<!DOCTYPE HTML", "<HTML", "<HEAD", "<SCRIPT", "<IFRAME", "<H1", "<DIV",
		"<FONT", "<TABLE", "<A", "<STYLE", "<TITLE", "<B", "<BODY", "<BR", "<P", "<!--")
}

// isXML is magic.XML.
func isXML(raw []byte) bool {
	return markup(raw, "<?XML")
}

// xmlSig is a root element and namespace of an XML format (magic.xmlSig).
type xmlSig struct{ localName, xmlns []byte }

// xmlChildren returns the signatures of text/xml's children but XHTML, whose
// leaves are all outside text/*.
func xmlChildren() []xmlSig {
	var sigs []xmlSig
	for _, s := range xmlChildSigs {
		sigs = append(sigs, xmlSig{[]byte(s[0]), []byte(s[1])})
	}
	return sigs
}

// xmlByNext lists, by the byte after their '<', the indices of children
// (xmlChildren) with a root element.
func xmlByNext(children []xmlSig) (t [256][]int) {
	for i, s := range children {
		if len(s.localName) > 1 {
			t[s.localName[1]] = append(t[s.localName[1]], i)
		}
	}
	return t
}

// xmlChildSigs are the root elements and namespaces of xmlChildren.
var xmlChildSigs = [...][2]string{
	{"<rss", ""},
	{"<feed", `xmlns="http://www.w3.org/2005/Atom"`},
	{"<X3D", `xmlns:xsd="http://www.w3.org/2001/XMLSchema-instance"`},
	{"<kml", `xmlns="http://www.opengis.net/kml/2.2"`},
	{"<kml", `xmlns="http://earth.google.com/kml/2.0"`},
	{"<kml", `xmlns="http://earth.google.com/kml/2.1"`},
	{"<kml", `xmlns="http://earth.google.com/kml/2.2"`},
	{"<xliff", `xmlns="urn:oasis:names:tc:xliff:document:1.2"`},
	{"<COLLADA", `xmlns="http://www.collada.org/2005/11/COLLADASchema"`},
	{"", `xmlns:gml="http://www.opengis.net/gml"`},
	{"", `xmlns:gml="http://www.opengis.net/gml/3.2"`},
	{"", `xmlns:gml="http://www.opengis.net/gml/3.3/exr"`},
	{"<gpx", `xmlns="http://www.topografix.com/GPX/1/1"`},
	{"<TrainingCenterDatabase", `xmlns="http://www.garmin.com/xmlschemas/TrainingCenterDatabase/v2"`},
	{"<amf", ""},
	{"<model", `xmlns="http://schemas.microsoft.com/3dmanufacturing/core/2015/02"`},
	{"<xfdf", `xmlns="http://ns.adobe.com/xfdf/"`},
	{"<Ontology", `xmlns="http://www.w3.org/2002/07/owl#"`},
	{"<bom", `xmlns="http://cyclonedx.org/schema/bom/`},
}

// xmlLeaf resolves text/xml: "text/plain" if one of its children matches
// (magic.xml for the signatures, magic.XHTML), else "text/xml".
func xmlLeaf(raw []byte) (string, bool) {
	if b := trimLWS(raw); len(b) > 0 && xmlChildMatch(b[:min(len(b), 512)]) {
		return mimeText, true
	}
	if isXHTML(raw) {
		return mimeText, true
	}
	return "text/xml", true
}

// xmlChildMatch is magic.xmlCheck for each of xmlChildren on b, a head
// already trimmed of whitespace and to 512 bytes. It finds the first
// occurrence of every root element in one pass over the '<' of b.
func xmlChildMatch(b []byte) bool {
	t := tables()
	var first [len(xmlChildSigs)]int // first index of t.xmlChildren[i].localName, or -1
	for i := range t.xmlChildren {
		first[i] = -1
	}
	for at := 0; at < len(b); at++ {
		j := bytes.IndexByte(b[at:], '<')
		if j < 0 {
			break
		}
		at += j
		if at+1 >= len(b) {
			break
		}
		for _, i := range t.xmlByNext[b[at+1]] {
			if first[i] < 0 && bytes.HasPrefix(b[at:], t.xmlChildren[i].localName) {
				first[i] = at
			}
		}
	}
	gml := bytes.Contains(b, []byte("xmlns:gml="))
	for i, s := range t.xmlChildren {
		switch {
		case len(s.localName) == 0:
			if gml && bytes.Index(b, s.xmlns) > 0 {
				return true
			}
		case first[i] < 0:
		case len(s.xmlns) == 0:
			if first[i] > 0 {
				return true
			}
		default:
			if first[i] < bytes.Index(b, s.xmlns) {
				return true
			}
		}
	}
	return false
}

// isXHTML is magic.XHTML. Both its patterns start with '<' and a letter
// or '!', which a cheap scan looks for first.
func isXHTML(raw []byte) bool {
	raw = raw[:min(len(raw), 1024)]
	candidate := false
	for i := 0; i+1 < len(raw) && !candidate; {
		j := bytes.IndexByte(raw[i:], '<')
		if j < 0 || i+j+1 >= len(raw) {
			break
		}
		i += j + 1
		switch raw[i] {
		case '!', 'h', 'H':
			candidate = true
		}
	}
	if !candidate {
		return false
	}
	return search(raw, []byte("<!DOCTYPE HTML"), compactWS|ignoreCase) ||
		search(raw, []byte("<HTML XMLNS="), compactWS|ignoreCase)
}

// A textHead is the head the text detectors examine.
type textHead struct {
	raw []byte
	// interpreter is what follows "#!" and whitespace on the first line,
	// if that line is a shebang line.
	interpreter []byte
	shebang     bool
}

// newTextHead returns raw as a textHead.
func newTextHead(raw []byte) textHead {
	h := textHead{raw: raw}
	if line, _ := firstLine(raw); len(line) >= 2 && line[0] == '#' && line[1] == '!' {
		h.interpreter, h.shebang = trimLWS(line[2:]), true
	}
	return h
}

// isPHP is magic.Php.
func isPHP(h textHead) verdict {
	if ciPrefix(h.raw, "<?PHP", "<?\n", "<?\r", "<? ") {
		return yes
	}
	return shebang(h, phpShebangs)
}

// A shebangSig is an interpreter a shebang line names (magic.shebangSig).
type shebangSig struct {
	sig   string
	flags int
}

const cwsfw = compactWS | fullWord

var (
	phpShebangs = []shebangSig{
		{"/usr/local/bin/php", 0}, {"/usr/bin/php", 0},
		{"/usr/bin/env php", compactWS}, {"/usr/bin/env -S php", compactWS},
	}
	jsShebangs = []shebangSig{
		{"/bin/node", 0}, {"/usr/bin/node", 0}, {"/bin/nodejs", 0}, {"/usr/bin/nodejs", 0},
		{"/usr/bin/env node", compactWS}, {"/usr/bin/env -S node", compactWS},
		{"/usr/bin/env nodejs", compactWS}, {"/usr/bin/env -S nodejs", compactWS},
	}
	luaShebangs = []shebangSig{
		{"/usr/bin/lua", fullWord}, {"/usr/local/bin/lua", fullWord},
		{"/usr/bin/env lua", cwsfw}, {"/usr/bin/env -S lua", cwsfw},
	}
	perlShebangs = []shebangSig{
		{"/usr/bin/perl", fullWord},
		{"/usr/bin/env perl", cwsfw}, {"/usr/bin/env -S perl", cwsfw},
	}
	pythonShebangs = []shebangSig{
		{"/usr/bin/python", 0}, {"/usr/local/bin/python", 0},
		{"/usr/bin/env python", compactWS}, {"/usr/bin/env -S python", compactWS},
		{"/usr/bin/python2", 0}, {"/usr/local/bin/python2", 0},
		{"/usr/bin/env python2", compactWS}, {"/usr/bin/env -S python2", compactWS},
		{"/usr/bin/python3", 0}, {"/usr/local/bin/python3", 0},
		{"/usr/bin/env python3", compactWS}, {"/usr/bin/env -S python3", compactWS},
	}
	rubyShebangs = []shebangSig{
		{"/usr/bin/ruby", 0}, {"/usr/local/bin/ruby", 0},
		{"/usr/bin/env ruby", compactWS}, {"/usr/bin/env -S ruby", compactWS},
	}
	tclShebangs = []shebangSig{
		{"/usr/bin/tcl", 0}, {"/usr/local/bin/tcl", 0},
		{"/usr/bin/env tcl", compactWS}, {"/usr/bin/env -S tcl", compactWS},
		{"/usr/bin/tclsh", 0}, {"/usr/local/bin/tclsh", 0},
		{"/usr/bin/env tclsh", compactWS}, {"/usr/bin/env -S tclsh", compactWS},
		{"/usr/bin/wish", 0}, {"/usr/local/bin/wish", 0},
		{"/usr/bin/env wish", compactWS}, {"/usr/bin/env -S wish", compactWS},
	}
	shellShebangs = []shebangSig{
		{"/bin/sh", fullWord}, {"/bin/bash", fullWord}, {"/usr/local/bin/bash", fullWord},
		{"/usr/bin/env bash", cwsfw}, {"/usr/bin/env -S bash", cwsfw},
		{"/bin/csh", fullWord}, {"/usr/local/bin/csh", fullWord},
		{"/usr/bin/env csh", cwsfw}, {"/usr/bin/env -S csh", cwsfw},
		{"/bin/dash", fullWord}, {"/usr/local/bin/dash", fullWord},
		{"/usr/bin/env dash", cwsfw}, {"/usr/bin/env -S dash", cwsfw},
		{"/bin/ksh", fullWord}, {"/usr/local/bin/ksh", fullWord},
		{"/usr/bin/env ksh", cwsfw}, {"/usr/bin/env -S ksh", cwsfw},
		{"/bin/tcsh", fullWord}, {"/usr/local/bin/tcsh", fullWord},
		{"/usr/bin/env tcsh", cwsfw}, {"/usr/bin/env -S tcsh", cwsfw},
		{"/bin/zsh", fullWord}, {"/usr/local/bin/zsh", fullWord},
		{"/usr/bin/env zsh", cwsfw}, {"/usr/bin/env -S zsh", cwsfw},
	}
)

// shebang tells whether the head's first line is a shebang naming one of
// sigs (magic.shebang).
func shebang(h textHead, sigs []shebangSig) verdict {
	if !h.shebang {
		return no
	}
	for _, s := range sigs {
		// A compactWS pattern's first word must match as it is.
		if j := strings.IndexByte(s.sig, ' '); j > 0 && !bytes.HasPrefix(h.interpreter, []byte(s.sig[:j])) {
			continue
		}
		if matchLen(h.interpreter, []byte(s.sig), s.flags) != -1 {
			return yes
		}
	}
	return no
}

// shebangTest turns a shebang table into a test.
func shebangTest(sigs []shebangSig) func(textHead) verdict {
	return func(h textHead) verdict { return shebang(h, sigs) }
}

// jsonMay bounds magic.JSON and its children: they need an object or an
// array, so '{' or '[' first.
func jsonMay(raw []byte) verdict {
	for _, c := range raw {
		if !isWS(c) {
			if c == '{' || c == '[' {
				return maybe
			}
			return no
		}
	}
	return no
}

// ndjsonMay bounds magic.NdJSON. Every line before the last must parse as
// JSON and one line must hold an object or an array, so the first byte
// that is not JSON whitespace must be able to start a JSON value (the
// line holding it fails otherwise, and if it is the last line no line
// holds an object or array).
func ndjsonMay(raw []byte) verdict {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case '{', '[', '"', '-', '.', 't', 'f', 'n', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			return maybe
		}
		return no
	}
	return no
}

// srtMay bounds magic.Srt, whose first line must be "1".
func srtMay(raw []byte) verdict {
	if len(raw) > 0 && raw[0] == '1' && (len(raw) == 1 || raw[1] == '\n' || raw[1] == '\r') {
		return maybe
	}
	return no
}

// isVTT is magic.Vtt.
func isVTT(raw []byte) bool {
	for _, bom := range []string{"\xef\xbb\xbf", ""} {
		b, ok := bytes.CutPrefix(raw, []byte(bom))
		if !ok {
			continue
		}
		for _, p := range []string{"WEBVTT\n", "WEBVTT\r", "WEBVTT ", "WEBVTT\t"} {
			if bytes.HasPrefix(b, []byte(p)) {
				return true
			}
		}
		if string(b) == "WEBVTT" {
			return true
		}
	}
	return false
}

// netpbmMay bounds magic.NetPBM, NetPGM, NetPPM and NetPAM: "P1\n" to
// "P7\n" first.
func netpbmMay(raw []byte) verdict {
	if len(raw) >= 3 && raw[0] == 'P' && raw[1] >= '1' && raw[1] <= '7' && raw[2] == '\n' {
		return maybe
	}
	return no
}

// rfc822Hints are the header names magic.RFC822 looks for.
var rfc822Hints = []shebangSig{
	{"Message-ID: ", ignoreCase}, {"From: ", 0}, {"To: ", 0}, {"CC: ", ignoreCase},
	{"Date: ", 0}, {"Subject: ", 0}, {"Received: ", 0}, {"Relay-Version: ", 0},
	{"#! rnews", 0}, {"N#! rnews", 0}, {"Forward to", 0}, {"Pipe to", 0},
	{"DELIVERED-TO: ", ignoreCase}, {"RETURN-PATH: ", ignoreCase},
	{"Content-Type: ", 0}, {"Content-Transfer-Encoding: ", 0},
}

// rfc822May bounds magic.RFC822, whose first line must start with a
// header it knows.
func rfc822May(raw []byte) verdict {
	line, _ := firstLine(raw)
	for _, h := range rfc822Hints {
		if matchLen(line, []byte(h.sig), h.flags) > -1 {
			return maybe
		}
	}
	return no
}

// gedcomMay bounds magic.GEDCOM, whose first line, after a byte-order mark
// and whitespace, must be "0 HEAD".
func gedcomMay(raw []byte) verdict {
	for _, bom := range []string{"\xef\xbb\xbf", "\xfe\xff", "\xff\xfe"} {
		if b, ok := bytes.CutPrefix(raw, []byte(bom)); ok {
			raw = b
			break
		}
	}
	if bytes.HasPrefix(trimLWS(raw), []byte("0 HEAD")) {
		return maybe
	}
	return no
}

// separatedValues is magic.CSV (comma ',') and magic.TSV (comma '\t') for
// mimetype's read limit.
func separatedValues(in []byte, comma byte) bool {
	r := svParser{comma: comma, s: in}
	headerFields, hasMore := r.countFields()
	if headerFields < 2 || !hasMore {
		return false
	}
	lines := 1
	for {
		fields, hasMore := r.countFields()
		if !hasMore && fields == 0 {
			break
		}
		if fields != headerFields {
			// The input may have been cut at the read limit: the last
			// line may then have fewer fields.
			if len(in) >= mimeLimit && fields < headerFields && len(r.s) == 0 {
				break
			}
			return false
		}
		lines++
		if lines >= 10 {
			return true
		}
	}
	return lines >= 2
}

// svParser counts the fields of CSV records with '#' comments (csv.Parser).
type svParser struct {
	comma byte
	s     []byte
}

// readLine returns the next line with its line feed (csv.Parser.readLine).
func (r *svParser) readLine() (line []byte, cutShort bool) {
	i := bytes.IndexByte(r.s, '\n')
	if i < 0 {
		i = len(r.s)
	} else {
		i++
	}
	line, r.s = r.s[:i], r.s[i:]
	n := len(line)
	if n > 0 && line[n-1] == '\r' {
		return line[:n-1], false
	}
	if n >= 2 && line[n-2] == '\r' && line[n-1] == '\n' {
		return line[:n-2], true
	}
	return line, false
}

// countFields reads one record and counts its fields; hasMore reports
// whether there was one (csv.Parser.CountFields).
func (r *svParser) countFields() (fields int, hasMore bool) {
	finished := false
	var line []byte
	cutShort := false
	for {
		line, cutShort = r.readLine()
		if finished {
			return 0, false
		}
		finished = len(r.s) == 0 && len(line) == 0
		if len(line) == lengthNL(line) {
			continue // empty line
		}
		if line[0] == '#' {
			continue // comment
		}
		break
	}
parseField:
	for {
		if len(line) == 0 || line[0] != '"' {
			fields++
			i := bytes.IndexByte(line, r.comma)
			if i >= 0 {
				line = line[i+1:]
				continue parseField
			}
			break parseField
		}
		line = line[1:]
		for {
			i := bytes.IndexByte(line, '"')
			if i >= 0 {
				line = line[i+1:]
				switch {
				case len(line) > 0 && line[0] == '"':
					line = line[1:]
				case len(line) > 0 && line[0] == r.comma:
					line = line[1:]
					fields++
					continue parseField
				case lengthNL(line) == len(line):
					fields++
					break parseField
				}
			} else if len(line) > 0 || cutShort {
				line, cutShort = r.readLine()
			} else {
				fields++
				break parseField
			}
		}
	}
	return fields, fields != 0
}

// lengthNL returns 1 if b ends with a line feed, else 0.
func lengthNL(b []byte) int {
	if len(b) > 0 && b[len(b)-1] == '\n' {
		return 1
	}
	return 0
}
