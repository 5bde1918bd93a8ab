package filetype

import (
	"bytes"
	"sync"
)

// The fast path for clean heads.
//
// For a head free of NUL and of suspicious control characters, Detect's
// answer depends on mimetype only through the leaf its tree walk ends in:
// "application/pdf" and "application/postscript" make the head binary, a
// text/* leaf under text/plain names it, and every other leaf, binary or not,
// gives "text/plain" (see detect). fastText decides that leaf without the
// walk for the common heads and says so only when it is sure.
//
// It first rules out every child of mimetype's root but text/plain
// (rootMayMatch), then walks text/plain's children in mimetype's order. Each
// child is either decided exactly by a copy of its detector (HTML, XML and its
// children, the shebang scripts, CSV, TSV, ...) or only bounded by a necessary
// condition: a child whose condition fails cannot match, and one whose
// condition holds may. Children whose leaf is not a text/* type (SVG, JSON,
// NDJSON, SubRip, WARC, Netpbm, RFC 822) give "text/plain" whether they match
// or not, so a "may" for them only matters if a later text/* child may match
// too; then, as for any "may" of a text/* child, fastText gives up and Detect
// walks the tree.
//
// The detectors copied or bounded are those of mimetype v1.4.16; the
// differential tests compare the fast path with the walk.

// mimeLimit is the number of leading bytes mimetype examines (its default
// read limit).
const mimeLimit = 4096

// fastText returns the MIME type Detect gives a clean head (no NUL, no
// suspicious control character), or ok false if only mimetype's tree walk
// can tell. bsvt reports a backspace or vertical tab among the first
// mimeLimit bytes.
func fastText(head []byte, bsvt bool) (mime string, ok bool) {
	raw := head[:min(len(head), mimeLimit)]
	if rootMayMatch(raw) {
		return "", false
	}
	// mimetype's text/plain detector refuses a backspace or vertical tab
	// unless there is a byte-order mark. The walk then ends at the root,
	// which (like every binary leaf but PDF and PostScript, ruled out
	// above) makes a clean head "text/plain".
	if bsvt && !hasBOM(raw) {
		return mimeText, true
	}
	return textLeaf(raw)
}

// verdict is what fastText knows of one detector on one head.
type verdict int

const (
	no    verdict = iota // the detector cannot match
	yes                  // the detector matches
	maybe                // the detector may match
)

// textLeaf returns the name of the leaf mimetype's walk reaches under
// text/plain, folded as Detect folds it (text/* names kept, others
// "text/plain"), or ok false if it cannot be told without the walk.
func textLeaf(raw []byte) (mime string, ok bool) {
	// unsure is set once a child with a non-text/* leaf may have matched:
	// the answer is then "text/plain" unless no such child matched and a
	// later text/* child does.
	unsure := false
	h := newTextHead(raw)
	for _, c := range tables().textChildren {
		v := c.test(h)
		switch {
		case v == no:
			continue
		case c.mime == "":
			if v == yes {
				return mimeText, true
			}
			unsure = true
			continue
		case unsure || v == maybe:
			return "", false
		}
		if c.leaf == nil {
			return c.mime, true
		}
		return c.leaf(raw)
	}
	return mimeText, true
}

// A textChild is one child of mimetype's text/plain node.
type textChild struct {
	// mime is the leaf's name as Detect reports it, or empty for a leaf
	// Detect reports as "text/plain".
	mime string
	// test tells whether the child's detector matches the head.
	test func(h textHead) verdict
	// leaf, if set, resolves the child's own children once it matched.
	leaf func(raw []byte) (string, bool)
}

// textChildren returns text/plain's children in mimetype's order (tree.go).
func textChildren() []textChild {
	return []textChild{
		{mime: "", test: bound(svgMay)},
		{mime: "text/html", test: exact(isHTML)},
		{mime: "text/xml", test: exact(isXML), leaf: xmlLeaf},
		{mime: "text/x-php", test: isPHP},
		{mime: "text/javascript", test: shebangTest(jsShebangs)},
		{mime: "text/x-lua", test: shebangTest(luaShebangs)},
		{mime: "text/x-perl", test: shebangTest(perlShebangs)},
		{mime: "text/x-python", test: shebangTest(pythonShebangs)},
		{mime: "text/x-ruby", test: shebangTest(rubyShebangs)},
		{mime: "", test: bound(jsonMay)},
		{mime: "", test: bound(ndjsonMay)},
		{mime: "text/rtf", test: exact(func(raw []byte) bool { return bytes.HasPrefix(raw, []byte("{\\rtf")) })},
		{mime: "", test: bound(srtMay)},
		{mime: "text/x-tcl", test: shebangTest(tclShebangs)},
		{mime: "text/csv", test: exact(func(raw []byte) bool { return separatedValues(raw, ',') })},
		{mime: "text/tab-separated-values", test: exact(func(raw []byte) bool { return separatedValues(raw, '\t') })},
		{mime: "text/vcard", test: exact(func(raw []byte) bool {
			return ciPrefix(raw, "BEGIN:VCARD\n", "BEGIN:VCARD\r\n")
		})},
		{mime: "text/calendar", test: exact(func(raw []byte) bool {
			return ciPrefix(raw, "BEGIN:VCALENDAR\n", "BEGIN:VCALENDAR\r\n")
		})},
		{mime: "", test: exact(func(raw []byte) bool {
			return bytes.HasPrefix(raw, []byte("WARC/1.0")) || bytes.HasPrefix(raw, []byte("WARC/1.1"))
		})},
		{mime: "text/vtt", test: exact(isVTT)},
		{mime: "text/x-shellscript", test: shebangTest(shellShebangs)},
		{mime: "", test: bound(netpbmMay)}, // netpbm, netpgm, netppm and netpam
		{mime: "", test: bound(rfc822May)},
		{mime: "text/vnd.familysearch.gedcom", test: bound(gedcomMay)},
	}
}

// exact turns a copied detector into a test.
func exact(f func([]byte) bool) func(textHead) verdict {
	return func(h textHead) verdict {
		if f(h.raw) {
			return yes
		}
		return no
	}
}

// bound turns a bound into a test.
func bound(f func([]byte) verdict) func(textHead) verdict {
	return func(h textHead) verdict { return f(h.raw) }
}

// rootMayMatch reports whether a child of mimetype's root other than
// text/plain may match the clean head raw, or Detect's own PDF and
// PostScript signatures may.
//
// Each detector is bounded by a prefix it needs or a check at a fixed
// offset. Detectors that need a NUL or a suspicious control character at a
// fixed place (QuickTime atoms, MP4, Lotus 1-2-3, dBase, EOT, OpenType,
// TrueType collections, Windows shortcuts, ESRI shapes, MARC, FrameMaker)
// cannot match a clean head and are bounded by their first byte or not at
// all (FrameMaker needs a NUL anywhere in its first 512 bytes). zlib needs
// the text detector to fail, which only happens where fastText answers
// "text/plain" anyway.
func rootMayMatch(raw []byte) bool {
	if len(raw) == 0 {
		return false
	}
	for _, p := range tables().rootPrefixes[raw[0]] {
		if bytes.HasPrefix(raw, []byte(p)) {
			return true
		}
	}
	at := func(off int, sigs ...string) bool {
		if len(raw) <= off {
			return false
		}
		for _, s := range sigs {
			if bytes.HasPrefix(raw[off:], []byte(s)) {
				return true
			}
		}
		return false
	}
	switch {
	case at(1, "\xb5\x2f\xfd"): // Zstandard frame, magic 0xFD2FB522..28
	case at(2, "\r\n"): // Python bytecode
	case at(4, "jP  ", "jP2 "): // JPEG 2000 (jp2, jpx, jpm)
	case at(4, "Standard ACE DB", "Standard Jet DB"): // Microsoft Access
	case at(20, "GPAT", "GIMP"): // GIMP pattern and brush
	case at(60, "BOOKMOBI"): // Mobipocket
	case at(128, "DICM"): // DICOM
	case tarMay(raw):
	// MP3: an MPEG frame searched for in the first 2 KiB; also JPEG,
	// AAC, JPEG XL and WordPerfect, whose signatures start with 0xFF.
	case bytes.IndexByte(raw[:min(len(raw), 2048+4)], 0xff) >= 0:
	// PDF: "%PDF-" anywhere in the first KiB.
	case bytes.Contains(raw[:min(len(raw), 1024)], []byte("%PDF-")):
	default:
		return false
	}
	return true
}

// tarMay is magic.Tar: a 512-byte header whose checksum field holds the
// sum of its bytes, counted unsigned or signed.
func tarMay(raw []byte) bool {
	const block = 512
	if len(raw) < block {
		return false
	}
	raw = raw[:block]
	if bytes.Contains(raw[:100], []byte("/gpkg-1\x00")) {
		return false
	}
	f := bytes.Trim(raw[148:156], " \x00")
	if len(f) == 0 {
		return false
	}
	stored := int64(0)
	for _, c := range f {
		if c == 0 {
			break
		}
		if c < '0' || c > '7' {
			return false
		}
		stored = stored<<3 | int64(c-'0')
	}
	var unsigned, signed int64
	for i, c := range raw {
		if i >= 148 && i < 156 {
			c = ' '
		}
		unsigned += int64(c)
		signed += int64(int8(c))
	}
	return stored == unsigned || stored == signed
}

// rootPrefixes returns, by first byte, the prefixes of which the children of
// mimetype's root (tree.go) need one to match, and Detect's textual
// signatures ("%PDF", "%!PS"). A prefix may be shorter than the detector's
// signature.
func rootPrefixes() (t [256][]string) {
	for _, p := range []string{
		"/* XPM */",          // xpm
		"7z\xbc\xaf\x27\x1c", // 7z
		"PK",                 // zip and its children
		"%PDF", "%!PS",       // Detect's PDF and PostScript
		"%FDF",                                                                         // fdf
		"\xd0\xcf\x11\xe0",                                                             // ole and its children
		"8BPS",                                                                         // psd
		"-----BEGIN PKCS7", "\x30\x80", "\x30\x81", "\x30\x82", "\x30\x83", "\x30\x84", // p7s
		"OggS",               // ogg
		"\x89PNG",            // png, apng
		"\xff",               // jpg, jxl, aac, wpd, mp3
		"\x00",               // jxl, jxs, lotus, ico, mpeg, quickTime, mp4, ttf, wasm, shx
		"GIF8",               // gif
		"RIFF",               // webp, wav, avi, qcp
		"MZ",                 // exe
		"\x7fELF",            // elf
		"!<arch>",            // ar, deb
		"xar!",               // xar
		"BZh",                // bz2
		"SIMPLE  =",          // fits
		"II*\x00", "MM\x00*", // tiff
		"BM",                  // bmp
		"fLaC",                // flac
		"MThd",                // midi
		"MAC ",                // ape
		"MPCK",                // musepack
		"#!AMR",               // amr
		"FORM",                // aiff
		".snd",                // au
		"\x1a\x45\xdf\xa3",    // webm, mkv
		"FLV\x01",             // flv
		"\x30\x26\xb2\x75",    // asf
		"Creative Voice File", // voc
		"#EXTM3U",             // m3u
		".RMF",                // rmvb
		"\x1f\x8b",            // gzip
		"\xca\xfe\xba\xbe",    // class, macho
		"CWS", "FWS", "ZWS",   // swf
		"Cr24",         // crx
		"wOFF", "wOF2", // woff, woff2
		"OTTO",                                                 // otf
		"ttcf",                                                 // ttc
		"Rar!",                                                 // rar
		"AT&TFORM",                                             // djvu
		"ITOLITLS",                                             // lit
		"BPG\xfb",                                              // bpg
		"\xd9\xd9\xf7",                                         // cbor
		"SQLite format 3",                                      // sqlite3
		"AC",                                                   // dwg
		"NES\x1a",                                              // nes
		"L\x00",                                                // lnk
		"\xfe\xed\xfa", "\xce\xfa\xed\xfe", "\xcf\xfa\xed\xfe", // macho
		"icns",                     // icns
		"#?RADIANCE",               // hdr
		"MSCF",                     // cab
		"\xed\xab\xee\xdb", "drpm", // rpm
		"\xfd7zXZ",          // xz
		"LZIP",              // lzip
		"d8:announce",       // torrent
		"\xc7\x71", "07070", // cpio
		"TZif",              // tzif
		"gimp xcf",          // xcf
		"glTF",              // glb
		"ISc(",              // cabIS
		"II\xbc\x01",        // jxr
		"PAR1",              // parquet
		"\xe4\x52\x5c\x7b",  // oneNote
		"ITSF",              // chm
		"  0", "0\n", "0\r", // dxf
		"GRIB",                                                                         // grib
		"HSP",                                                                          // inf, hlp
		"BUFR",                                                                         // bufr
		"\xa1\xb2\xc3\xd4", "\xa1\xb2\x3c\x4d", "\xd4\xc3\xb2\xa1", "\x4d\x3c\xb2\xa1", // pcap
		"ID3", // mp3
	} {
		t[p[0]] = append(t[p[0]], p)
	}
	return t
}

// hasBOM reports whether raw starts with a byte-order mark mimetype knows.
func hasBOM(raw []byte) bool {
	for _, b := range []string{"\xef\xbb\xbf", "\x00\x00\xfe\xff", "\xff\xfe\x00\x00", "\xfe\xff", "\xff\xfe"} {
		if bytes.HasPrefix(raw, []byte(b)) {
			return true
		}
	}
	return false
}

// fastTables are the fast path's tables.
type fastTables struct {
	textChildren []textChild
	rootPrefixes [256][]string
	xmlChildren  []xmlSig
	xmlByNext    [256][]int
}

// tables returns the fast path's tables, made at the first detection, not at
// the start of every program that links the package.
func tables() *fastTables {
	tablesOnce.Do(func() {
		t := &fastTables{textChildren: textChildren(), rootPrefixes: rootPrefixes(), xmlChildren: xmlChildren()}
		t.xmlByNext = xmlByNext(t.xmlChildren)
		tablesMade = t
	})
	return tablesMade
}

var (
	tablesOnce sync.Once
	tablesMade *fastTables
)
