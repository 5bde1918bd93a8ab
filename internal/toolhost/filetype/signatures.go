package filetype

import (
	"bytes"
	"encoding/binary"
)

// A signature recognises one binary format by its leading bytes.
type signature struct {
	// mime is the format's MIME type, or empty if name computes it.
	mime string
	// name, if set, names the format from head.
	name func(head []byte) string
	// textual marks formats reported as binary even when the head is
	// plain text (see alwaysBinary).
	textual bool
	// match reports whether head (of a file of size bytes, or -1 if
	// unknown) starts like the format.
	match func(head []byte, size int64) bool
}

// leadingSignatures are boxsh v3 signatures checked before mimetype.
//
// They are formats that mimetype does not know, so that its looser detectors
// (such as the MP3 frame search) cannot claim them first, and the ID3 rule,
// which boxsh v3 applies whatever follows the tag.
var leadingSignatures = []signature{
	{mime: "application/pdf", textual: true, match: prefix("%PDF")},
	{mime: "application/postscript", textual: true, match: prefix("%!PS")},
	{mime: "application/postscript", match: prefix("\xc5\xd0\xd3\xc6")}, // DOS EPS binary header
	{mime: "audio/mpeg", match: prefix("ID3")},
	{mime: "video/mp2t", match: mpegTS},
	{mime: "audio/vnd.dolby.dd-raw", match: ac3},
	{mime: "audio/aiff", match: iff("FORM", "AIFF", "AIFC")},
	{mime: "audio/x-musepack", match: prefix("MPCK", "MP+")},
	{mime: "audio/wavpack", match: prefix("wvpk")},
	{mime: "image/jp2", match: prefix("\xff\x4f\xff\x51")}, // JPEG 2000 codestream
	{mime: "image/x-exr", match: prefix("\x76\x2f\x31\x01")},
	{mime: "image/x-fujifilm-raf", match: prefix("FUJIFILMCCD-RAW")},
	{mime: "application/x-lz4", match: prefix("\x04\x22\x4d\x18")},
	{mime: "application/x-compress", match: prefix("\x1f\x9d", "\x1f\xa0")},
	{mime: "application/x-arrow", match: prefix("ARROW1\x00\x00")},
	{mime: "application/vnd.android.dex", match: prefix("dex\n")},
	{mime: "application/x-llvm", match: prefix("BC\xc0\xde")},
	{mime: "font/ttf", match: prefix("\x00\x01\x00\x00\x00")},
}

// fallbackSignatures are the remaining boxsh v3 signatures, checked when
// mimetype found no binary format.
//
// So every format boxsh v3 recognises is still recognised when mimetype's
// stricter checks reject the input. Deliberately absent: the bare "BM" bitmap
// check (mimetype validates the DIB header instead) and the FF E0 MPEG sync
// without a valid frame header.
var fallbackSignatures = []signature{
	// Images.
	{mime: "image/png", match: prefix("\x89PNG\r\n\x1a\n")},
	{mime: "image/jpeg", match: prefix("\xff\xd8\xff")},
	{mime: "image/gif", match: prefix("GIF87a", "GIF89a")},
	{mime: "image/webp", match: riff("WEBP")},
	{mime: "image/x-icon", match: prefix("\x00\x00\x01\x00", "\x00\x00\x02\x00")},
	{mime: "image/tiff", match: prefix("II\x2a\x00", "MM\x00\x2a")},
	{mime: "image/jxl", match: prefix("\xff\x0a", "\x00\x00\x00\x0cJXL \x0d\x0a\x87\x0a")},
	{mime: "video/mj2", match: motionJPEG2000},
	{mime: "image/jp2", match: prefix("\x00\x00\x00\x0cjP  \x0d\x0a\x87\x0a")},
	{mime: "image/vnd.ms-photo", match: prefix("II\xbc")},
	{mime: "image/vnd.adobe.photoshop", match: prefix("8BPS")},

	// Audio.
	{mime: "audio/aac", match: adts},
	{mime: "audio/mpeg", match: mpegAudio},
	{mime: "audio/ogg", match: prefix("OggS")},
	{mime: "audio/flac", match: prefix("fLaC")},
	{mime: "audio/midi", match: prefix("MThd")},
	{mime: "audio/wav", match: riff("WAVE")},
	{mime: "audio/amr", match: prefix("#!AMR")},
	{mime: "audio/x-voc", match: prefix("Creative Voice File")},

	// Video.
	{mime: "video/quicktime", match: quickTimeAtom},
	{name: isoBrand, match: ftyp},
	{mime: "video/x-matroska", match: prefix("\x1a\x45\xdf\xa3")},
	{mime: "video/x-flv", match: prefix("FLV\x01")},
	{mime: "video/x-msvideo", match: riff("AVI")},
	{mime: "video/mpeg", match: prefix("\x00\x00\x01\xba", "\x00\x00\x01\xb3")},
	{mime: "video/x-ms-asf", match: prefix("\x30\x26\xb2\x75\x8e\x66\xcf\x11\xa6\xd9")},

	// Archives and compressed data.
	{mime: "application/zip", match: prefix("PK\x03\x04", "PK\x05\x06", "PK\x07\x08")},
	{mime: "application/gzip", match: prefix("\x1f\x8b")},
	{mime: "application/x-bzip2", match: prefix("BZh")},
	{mime: "application/x-xz", match: prefix("\xfd7zXZ\x00")},
	{mime: "application/zstd", match: prefix("\x28\xb5\x2f\xfd")},
	{mime: "application/x-7z-compressed", match: prefix("7z\xbc\xaf\x27\x1c")},
	{mime: "application/x-rar-compressed", match: prefix("Rar!\x1a\x07")},
	{mime: "application/x-lzip", match: prefix("LZIP")},
	{mime: "application/x-rpm", match: prefix("\xed\xab\xee\xdb")},
	{mime: "application/x-deb", match: prefix("!<arch>\ndebian")},
	{mime: "application/x-archive", match: prefix("!<arch>\n")},
	{mime: "application/x-cpio", match: prefix("070707", "070701", "070702", "\xc7\x71")},
	{mime: "application/x-tar", match: tarHeader},
	{mime: "application/vnd.tcpdump.pcap", match: prefix("\xd4\xc3\xb2\xa1", "\xa1\xb2\xc3\xd4")},

	// Documents and data.
	{mime: "application/x-cfb", match: prefix("\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1")},
	{mime: "application/postscript", match: prefix("%!")},
	{mime: "application/x-parquet", match: prefix("PAR1")},
	{mime: "application/x-sqlite3", match: prefix("SQLite format 3\x00")},

	// Executables.
	{mime: "application/x-executable", match: prefix("\x7fELF")},
	{mime: "application/x-mach-binary", match: prefix(
		"\xfe\xed\xfa\xce", "\xfe\xed\xfa\xcf", "\xce\xfa\xed\xfe", "\xcf\xfa\xed\xfe")},
	{mime: "application/x-mach-binary", match: machOFat},
	{mime: "application/x-dosexec", match: prefix("MZ")},
	{mime: "application/java-vm", match: prefix("\xca\xfe\xba\xbe")},

	// Fonts.
	{mime: "font/otf", match: prefix("OTTO")},
	{mime: "font/woff", match: prefix("wOFF")},
	{mime: "font/woff2", match: prefix("wOF2")},

	// Other binary formats.
	{mime: "application/wasm", match: prefix("\x00asm")},
	{mime: "model/gltf-binary", match: prefix("glTF\x02\x00\x00\x00")},
	{mime: "application/x-shockwave-flash", match: prefix("FWS", "CWS", "ZWS")},
	{mime: "application/x-nes-rom", match: prefix("NES\x1a")},
}

// match returns the MIME type of the first signature of sigs that head
// matches and whether that signature is textual; ok is false if none does.
func match(sigs []signature, head []byte, size int64) (mime string, textual, ok bool) {
	for _, s := range sigs {
		if !s.match(head, size) {
			continue
		}
		if s.name != nil {
			return s.name(head), s.textual, true
		}
		return s.mime, s.textual, true
	}
	return "", false, false
}

// prefix matches heads starting with any of magics.
func prefix(magics ...string) func([]byte, int64) bool {
	return func(head []byte, _ int64) bool {
		for _, m := range magics {
			if len(head) >= len(m) && string(head[:len(m)]) == m {
				return true
			}
		}
		return false
	}
}

// riff matches a RIFF container whose form type starts with form.
func riff(form string) func([]byte, int64) bool {
	return iff("RIFF", form)
}

// iff matches an IFF-style container: a 4-byte chunk tag, a 4-byte size
// and a form type starting with one of forms.
func iff(tag string, forms ...string) func([]byte, int64) bool {
	return func(head []byte, _ int64) bool {
		if len(head) < 8 || string(head[:4]) != tag {
			return false
		}
		for _, f := range forms {
			if bytes.HasPrefix(head[8:], []byte(f)) {
				return true
			}
		}
		return false
	}
}

// mpegTS matches an MPEG transport stream.
//
// That is 188-byte packets starting with the sync byte 0x47, or Blu-ray BDAV
// streams of 192-byte packets whose sync byte follows a 4-byte header. Every
// packet start in head must hold a sync byte, and at least two packets are
// required.
func mpegTS(head []byte, _ int64) bool {
	packets := func(start, stride int) bool {
		if len(head) <= start+stride {
			return false
		}
		for i := start; i < len(head); i += stride {
			if head[i] != 0x47 {
				return false
			}
		}
		return true
	}
	return packets(0, 188) || packets(4, 192)
}

// ac3 matches a Dolby Digital (AC-3 or E-AC-3) sync frame.
func ac3(head []byte, _ int64) bool {
	if len(head) < 6 || head[0] != 0x0b || head[1] != 0x77 {
		return false
	}
	bsid := head[5] >> 3
	switch {
	case bsid <= 10: // AC-3: sample rate code and frame size code
		return head[4]>>6 != 3 && head[4]&0x3f < 38
	case bsid <= 16: // E-AC-3: stream type
		return head[2]>>6 != 3
	}
	return false
}

// adts matches an AAC frame with an ADTS header.
func adts(head []byte, _ int64) bool {
	isHeader := func(h []byte) bool {
		return len(h) >= 2 && h[0] == 0xff && h[1]&0xf6 == 0xf0
	}
	if len(head) < 7 || !isHeader(head) || (head[2]>>2)&0x0f >= 13 {
		return false
	}
	n := int(head[3]&0x03)<<11 | int(head[4])<<3 | int(head[5])>>5
	if n < 7 {
		return false
	}
	return len(head) < n+2 || isHeader(head[n:])
}

// MPEG audio bit rates in kbit/s, indexed by the bit-rate field, for MPEG-1
// layers I, II and III and MPEG-2/2.5 layers I and II/III.
var (
	bitRatesV1 = [3][15]int{
		{0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448},
		{0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384},
		{0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320},
	}
	bitRatesV2 = [2][15]int{
		{0, 32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256},
		{0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160},
	}
	sampleRatesV1 = [3]int{44100, 48000, 32000}
)

// mpegFrameLen returns the length of the MPEG audio frame whose header
// starts h, 0 for a free-format frame, or -1 if h is not a frame header.
func mpegFrameLen(h []byte) int {
	if len(h) < 4 || h[0] != 0xff || h[1]&0xe0 != 0xe0 {
		return -1
	}
	version := (h[1] >> 3) & 3 // 0: MPEG-2.5, 2: MPEG-2, 3: MPEG-1
	layer := 4 - int((h[1]>>1)&3)
	rateIdx := int(h[2] >> 4)
	srIdx := int((h[2] >> 2) & 3)
	if version == 1 || layer == 4 || rateIdx == 15 || srIdx == 3 {
		return -1
	}
	sampleRate := sampleRatesV1[srIdx]
	var kbps int
	if version == 3 {
		kbps = bitRatesV1[layer-1][rateIdx]
	} else {
		sampleRate /= 2
		if version == 0 {
			sampleRate /= 2
		}
		kbps = bitRatesV2[min(layer-1, 1)][rateIdx]
	}
	if kbps == 0 {
		return 0
	}
	padding := int(h[2]>>1) & 1
	bitRate := kbps * 1000
	switch {
	case layer == 1:
		return (12*bitRate/sampleRate + padding) * 4
	case layer == 3 && version != 3:
		return 72*bitRate/sampleRate + padding
	default:
		return 144*bitRate/sampleRate + padding
	}
}

// mpegAudio matches an MPEG-1/2/2.5 audio frame (layer I, II or III) of a
// known bit rate.
//
// Free-format frames cannot be told from other data that starts with FF FF.
// When head reaches the next frame, that frame must start there too. A shorter
// head that looks like UTF-16LE text after a byte-order mark is rejected.
func mpegAudio(head []byte, _ int64) bool {
	n := mpegFrameLen(head)
	switch {
	case n <= 0:
		return false
	case len(head) < n+4:
		utf16 := head[1] == 0xfe && head[3] == 0 && head[2] >= 0x09 && head[2] < 0x7f
		return !utf16
	}
	next := head[n:]
	return next[0] == 0xff && next[1]&0xfe == head[1]&0xfe
}

// quickTimeAtom matches a QuickTime movie that starts with a free, mdat,
// moov or wide atom instead of an ftyp box.
func quickTimeAtom(head []byte, size int64) bool {
	if len(head) < 8 {
		return false
	}
	switch string(head[4:8]) {
	case "free", "mdat", "moov", "wide":
	default:
		return false
	}
	n := int64(binary.BigEndian.Uint32(head))
	return n == 0 || n == 1 || n >= 8 && (size < 0 || n <= size)
}

// ftyp matches an ISO base media file (MP4, QuickTime, HEIF, AVIF, ...).
func ftyp(head []byte, _ int64) bool {
	return len(head) >= 12 && string(head[4:8]) == "ftyp" && head[8]&0x60 != 0
}

// isoBrand names an ISO base media file by its major brand, as boxsh v3
// does.
func isoBrand(head []byte) string {
	switch string(bytes.TrimRight(head[8:12], " \x00")) {
	case "avif", "avis":
		return "image/avif"
	case "mif1":
		return "image/heif"
	case "msf1":
		return "image/heif-sequence"
	case "heic", "heix":
		return "image/heic"
	case "hevc", "hevx":
		return "image/heic-sequence"
	case "qt":
		return "video/quicktime"
	}
	return "video/mp4"
}

// motionJPEG2000 matches a JPEG 2000 signature box followed by a Motion
// JPEG 2000 file type box.
func motionJPEG2000(head []byte, _ int64) bool {
	const sig = "\x00\x00\x00\x0cjP  \x0d\x0a\x87\x0a"
	if len(head) < 24 || string(head[:12]) != sig || string(head[16:20]) != "ftyp" {
		return false
	}
	brand := string(head[20:24])
	return brand == "mjp2" || brand == "mj2s"
}

// machOFat matches a universal Mach-O binary, which shares its magic with
// Java class files but has a small architecture count where a class file
// has its version.
func machOFat(head []byte, _ int64) bool {
	return len(head) >= 8 && string(head[:4]) == "\xca\xfe\xba\xbe" &&
		head[4] == 0 && head[5] == 0 && head[6] == 0 && head[7] < 20
}

// tarHeader matches a POSIX (ustar) or V7 tar header with a valid checksum.
func tarHeader(head []byte, _ int64) bool {
	const block = 512
	if len(head) < block {
		return false
	}
	magic := head[257:263]
	if !bytes.HasPrefix(magic, []byte("ustar")) && !bytes.Equal(magic, make([]byte, 6)) {
		return false
	}
	// The stored checksum is an octal number in bytes 148..154, possibly
	// padded with spaces or NULs.
	field := bytes.TrimLeft(head[148:155], " ")
	stored, digits := 0, 0
	for _, c := range field {
		if c < '0' || c > '7' {
			break
		}
		stored = stored*8 + int(c-'0')
		digits++
	}
	if digits == 0 {
		return false
	}
	// The checksum is the sum of the header bytes with the checksum field
	// itself counted as spaces.
	sum := 8 * int(' ')
	for i, c := range head[:block] {
		if i < 148 || i >= 156 {
			sum += int(c)
		}
	}
	return stored == sum
}
