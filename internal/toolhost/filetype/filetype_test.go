package filetype

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"math/rand/v2"
	"strings"
	"testing"
)

// cat concatenates byte slices and strings.
func cat(parts ...any) []byte {
	var b []byte
	for _, p := range parts {
		switch p := p.(type) {
		case string:
			b = append(b, p...)
		case []byte:
			b = append(b, p...)
		case byte:
			b = append(b, p)
		default:
			panic("cat: unsupported part")
		}
	}
	return b
}

// zeros returns n NUL bytes.
func zeros(n int) []byte { return make([]byte, n) }

// isoBox returns an ftyp box with the given major brand, followed by an
// mdat box header.
func isoBox(brand string) []byte {
	box := cat("\x00\x00\x00\x18ftyp", brand, "\x00\x00\x00\x00", brand)
	return cat(box, "\x00\x00\x00\x08mdat", zeros(16))
}

// tarArchive returns a tar archive holding one small file.
func tarArchive(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := tar.NewWriter(&buf)
	body := "hello, world\n"
	if err := w.WriteHeader(&tar.Header{Name: "hello.txt", Mode: 0o644, Size: int64(len(body)), Format: tar.FormatUSTAR}); err != nil {
		t.Fatalf("write tar header: %v", err)
	}
	if _, err := w.Write([]byte(body)); err != nil {
		t.Fatalf("write tar body: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("close tar: %v", err)
	}
	return buf.Bytes()
}

// v7Tar turns a ustar archive into a pre-POSIX (V7) one: no magic, and a
// recomputed checksum.
func v7Tar(ustar []byte) []byte {
	b := bytes.Clone(ustar)
	clear(b[257:512]) // magic, version and the ustar-only fields
	copy(b[148:156], "        ")
	sum := 0
	for _, c := range b[:512] {
		sum += int(c)
	}
	copy(b[148:156], []byte(strings.Repeat("0", 6-len(octal(sum)))+octal(sum)+"\x00 "))
	return b
}

// octal formats n in base 8.
func octal(n int) string {
	var s []byte
	for ; n > 0; n /= 8 {
		s = append([]byte{byte('0' + n%8)}, s...)
	}
	return string(s)
}

// zipArchive returns a ZIP archive holding one small file.
func zipArchive(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	f, err := w.Create("hello.txt")
	if err != nil {
		t.Fatalf("create zip entry: %v", err)
	}
	if _, err := f.Write([]byte("hello, world\n")); err != nil {
		t.Fatalf("write zip entry: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("close zip: %v", err)
	}
	return buf.Bytes()
}

// gzipData returns a gzip stream.
func gzipData(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	if _, err := w.Write([]byte("hello, world\n")); err != nil {
		t.Fatalf("write gzip: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("close gzip: %v", err)
	}
	return buf.Bytes()
}

// packets returns n transport-stream packets of the given size whose sync
// byte is at offset sync.
func packets(n, size, sync int) []byte {
	b := make([]byte, n*size)
	for i := 0; i < n; i++ {
		b[i*size+sync] = 0x47
		b[i*size+sync+1] = 0x40
	}
	return b
}

// mp1Frames returns two MPEG-1 layer I frames (32 kbit/s, 32 kHz: 48 bytes).
func mp1Frames() []byte {
	frame := cat("\xff\xff\x18\xc4", bytes.Repeat([]byte{0x55}, 44))
	return cat(frame, frame)
}

func TestDetect(t *testing.T) {
	ustar := tarArchive(t)
	tests := []struct {
		name   string
		head   []byte
		size   int64 // -1: len(head)
		mime   string
		binary bool
	}{
		// Empty and text.
		{"empty", nil, 0, "inode/x-empty", false},
		{"empty head of non-empty file", nil, 10, "inode/x-empty", false},
		{"plain text", []byte("x\ny\nz\n"), -1, "text/plain", false},
		{"proc file with size 0", []byte("processor\t: 0\n"), 0, "text/plain", false},
		{"JSON", []byte(`{"key": "value"}` + "\n"), -1, "text/plain", false},
		{"UTF-8", []byte("héllo wörld ✓ — 日本語\n"), -1, "text/plain", false},
		{"UTF-8 BOM", []byte("\xef\xbb\xbfhello world\n"), -1, "text/plain", false},
		{"Latin-1", []byte("caf\xe9 cr\xe8me br\xfbl\xe9e\n"), -1, "text/plain", false},
		{"ANSI escapes", []byte("\x1b[1mbold\x1b[0m\tand\f\vmore\r\n"), -1, "text/plain", false},
		{"HTML", []byte("<!DOCTYPE html>\n<html><body>hi</body></html>\n"), -1, "text/html", false},
		{"shell script", []byte("#!/bin/sh\necho hi\n"), -1, "text/x-shellscript", false},
		{"SVG is text", []byte(`<svg xmlns="http://www.w3.org/2000/svg"></svg>`), -1, "text/plain", false},
		{"few control chars", cat(strings.Repeat("a", 99), "\x01"), -1, "text/plain", false},
		{"many control chars", cat(strings.Repeat("a", 40), "\x01\x02"), -1, "application/octet-stream", true},
		{"NUL", []byte("hello\x00world"), -1, "application/octet-stream", true},
		{"UTF-16LE", []byte("\xff\xfeh\x00i\x00\n\x00"), -1, "application/octet-stream", true},
		{"UTF-16BE", []byte("\xfe\xff\x00h\x00i\x00\n"), -1, "application/octet-stream", true},
		{"NUL beyond HeadSize", cat(strings.Repeat("a", HeadSize), "\x00"), -1, "text/plain", false},

		// Text that starts like a binary signature stays text.
		{"text starting MZ", []byte("MZ is a text file\n"), -1, "text/plain", false},
		{"text starting ID3", []byte("ID3 tags are metadata\n"), -1, "text/plain", false},
		{"text with free at 4", []byte("Get free stuff\n"), -1, "text/plain", false},
		{"text starting BM", []byte("BMW and more text here\n"), -1, "text/plain", false},
		{"text starting %!", []byte("%! not postscript\n"), -1, "text/plain", false},
		{"text starting G", cat("G", strings.Repeat("a", 187), "G", strings.Repeat("b", 200)), -1, "text/plain", false},

		// Reference tests of boxsh v3 (tools.test.mjs).
		{"PNG signature", []byte("\x89PNG\r\n\x1a\n"), -1, "image/png", true},
		{"truncated PNG", []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR"), -1, "image/png", true},
		{"GIF header", cat("GIF89a", zeros(58)), -1, "image/gif", true},
		{"ELF header", []byte("\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00"), -1, "application/x-executable", true},

		// Images.
		{"JPEG", []byte("\xff\xd8\xff\xe0\x00\x10JFIF\x00"), -1, "image/jpeg", true},
		{"GIF87a", cat("GIF87a", zeros(10)), -1, "image/gif", true},
		{"WebP", cat("RIFF\x24\x00\x00\x00WEBPVP8 ", zeros(16)), -1, "image/webp", true},
		{"ICO", cat("\x00\x00\x01\x00\x01\x00", zeros(16)), -1, "image/x-icon", true},
		{"CUR", cat("\x00\x00\x02\x00\x01\x00", zeros(16)), -1, "image/x-icon", true},
		{"TIFF LE", cat("II\x2a\x00\x08\x00\x00\x00", zeros(8)), -1, "image/tiff", true},
		{"TIFF BE", cat("MM\x00\x2a\x00\x00\x00\x08", zeros(8)), -1, "image/tiff", true},
		{"JPEG XL codestream", cat("\xff\x0a", zeros(14)), -1, "image/jxl", true},
		{"JPEG 2000 codestream", cat("\xff\x4f\xff\x51", zeros(12)), -1, "image/jp2", true},
		{"JPEG XR", cat("II\xbc\x01", zeros(12)), -1, "image/vnd.ms-photo", true},
		{"PSD", cat("8BPS\x00\x01", zeros(20)), -1, "image/vnd.adobe.photoshop", true},
		{"OpenEXR", cat("\x76\x2f\x31\x01\x02\x00\x00\x00", zeros(8)), -1, "image/x-exr", true},
		{"Fujifilm RAF", cat("FUJIFILMCCD-RAW 0201", zeros(12)), -1, "image/x-fujifilm-raf", true},
		{"AVIF", isoBox("avif"), -1, "image/avif", true},
		{"AVIF sequence", isoBox("avis"), -1, "image/avif", true},
		{"HEIF", isoBox("mif1"), -1, "image/heif", true},
		{"HEIF sequence", isoBox("msf1"), -1, "image/heif-sequence", true},
		{"HEIC", isoBox("heic"), -1, "image/heic", true},
		{"HEIC sequence", isoBox("hevc"), -1, "image/heic-sequence", true},

		// Audio.
		{"ID3 then FLAC", cat("ID3\x04\x00\x00\x00\x00\x00\x0a", zeros(10), "fLaC"), -1, "audio/mpeg", true},
		{"MPEG-1 layer I", mp1Frames(), -1, "audio/mpeg", true},
		{"MPEG-1 layer III", cat("\xff\xfb\x90\x00", zeros(413), "\xff\xfb\x90\x00", zeros(413)), -1, "audio/mpeg", true},
		{"ADTS AAC", cat("\xff\xf1\x50\x80\x02\x1f\xfc", zeros(9), "\xff\xf1\x50\x80\x02\x1f\xfc", zeros(9)), -1, "audio/aac", true},
		{"Ogg", cat("OggS\x00\x02", zeros(22), "\x01vorbis", zeros(16)), -1, "audio/ogg", true},
		{"FLAC", cat("fLaC\x00\x00\x00\x22", zeros(34)), -1, "audio/flac", true},
		{"MIDI", cat("MThd\x00\x00\x00\x06\x00\x01\x00\x02\x00\x60"), -1, "audio/midi", true},
		{"WAV", cat("RIFF\x24\x00\x00\x00WAVEfmt ", zeros(16)), -1, "audio/wav", true},
		{"AIFF", cat("FORM\x00\x00\x00\x20AIFFCOMM", zeros(16)), -1, "audio/aiff", true},
		{"AIFF-C", cat("FORM\x00\x00\x00\x20AIFCFVER", zeros(16)), -1, "audio/aiff", true},
		{"Musepack SV7", cat("MP+\x07\x0b\x00\x00\x00", zeros(8)), -1, "audio/x-musepack", true},
		{"Musepack SV8", cat("MPCKSH\x10", zeros(8)), -1, "audio/x-musepack", true},
		{"WavPack", cat("wvpk\xa4\x8d\x00\x00", zeros(8)), -1, "audio/wavpack", true},
		{"AMR", cat("#!AMR\n\x3c", zeros(16)), -1, "audio/amr", true},
		{"AC-3", cat("\x0b\x77\xcc\x04\x40\x40\x2f\x84", zeros(8)), -1, "audio/vnd.dolby.dd-raw", true},
		{"Creative Voice", cat("Creative Voice File\x1a\x1a\x00\x0a\x01\x29\x11"), -1, "audio/x-voc", true},

		// Video.
		{"MP4", isoBox("isom"), -1, "video/mp4", true},
		{"QuickTime ftyp", isoBox("qt  "), -1, "video/quicktime", true},
		{"QuickTime mdat atom", cat("\x00\x0b\x2a\x00mdat\x78\xf9\x08\x54", zeros(16)), 0x0b2a10, "video/quicktime", true},
		{"mdat atom larger than file", cat("\x00\x0b\x2a\x00mdat\x78\xf9\x08\x54", zeros(16)), -1, "application/octet-stream", true},
		{"Matroska", cat("\x1a\x45\xdf\xa3\x01\x00\x00\x00\x00\x00\x00\x23\x42\x86\x81\x01\x42\x82\x88matroska"), -1, "video/x-matroska", true},
		{"WebM", cat("\x1a\x45\xdf\xa3\x01\x00\x00\x00\x00\x00\x00\x1f\x42\x86\x81\x01\x42\x82\x84webm"), -1, "video/x-matroska", true},
		{"EBML without doctype", cat("\x1a\x45\xdf\xa3", zeros(16)), -1, "video/x-matroska", true},
		{"FLV", cat("FLV\x01\x05\x00\x00\x00\x09", zeros(8)), -1, "video/x-flv", true},
		{"AVI", cat("RIFF\x24\x00\x00\x00AVI LIST", zeros(16)), -1, "video/x-msvideo", true},
		{"MPEG-PS", cat("\x00\x00\x01\xba\x44\x00\x04\x00", zeros(8)), -1, "video/mpeg", true},
		{"MPEG-ES", cat("\x00\x00\x01\xb3\x16\x00\xf0\x15", zeros(8)), -1, "video/mpeg", true},
		{"MPEG-TS", packets(4, 188, 0), -1, "video/mp2t", true},
		{"BDAV MPEG-TS", packets(4, 192, 4), -1, "video/mp2t", true},
		{"broken MPEG-TS", cat(packets(2, 188, 0), "\x01", zeros(187)), -1, "application/octet-stream", true},
		{"ASF", cat("\x30\x26\xb2\x75\x8e\x66\xcf\x11\xa6\xd9\x00\xaa\x00\x62\xce\x6c", zeros(8)), -1, "video/x-ms-asf", true},

		// Archives and compressed data.
		{"ZIP", zipArchive(t), -1, "application/zip", true},
		{"empty ZIP", cat("PK\x05\x06", zeros(18)), -1, "application/zip", true},
		{"gzip", gzipData(t), -1, "application/gzip", true},
		{"bzip2", cat("BZh91AY&SY\x00\x01", zeros(8)), -1, "application/x-bzip2", true},
		{"xz", cat("\xfd7zXZ\x00\x00\x04", zeros(8)), -1, "application/x-xz", true},
		{"zstd", cat("\x28\xb5\x2f\xfd\x04\x58", zeros(8)), -1, "application/zstd", true},
		{"7z", cat("7z\xbc\xaf\x27\x1c\x00\x04", zeros(8)), -1, "application/x-7z-compressed", true},
		{"RAR", cat("Rar!\x1a\x07\x00\xcf\x90\x73", zeros(8)), -1, "application/x-rar-compressed", true},
		{"RAR5", cat("Rar!\x1a\x07\x01\x00", zeros(8)), -1, "application/x-rar-compressed", true},
		{"LZ4", cat("\x04\x22\x4d\x18\x64\x40\xa7", zeros(8)), -1, "application/x-lz4", true},
		{"lzip", cat("LZIP\x01\x0c", zeros(8)), -1, "application/x-lzip", true},
		{"compress", cat("\x1f\x9d\x90\x37", zeros(8)), -1, "application/x-compress", true},
		{"RPM", cat("\xed\xab\xee\xdb\x03\x00", zeros(8)), -1, "application/x-rpm", true},
		{"Debian", cat("!<arch>\ndebian-binary   1342943816  0     0     100644  4         `\n2.0\n", zeros(4)), -1, "application/x-deb", true},
		{"ar", cat("!<arch>\nfoo.o/          0           0     0     644     4         `\n\x7fELF", zeros(8)), -1, "application/x-archive", true},
		{"cpio binary", cat("\xc7\x71\x27\x00", zeros(22)), -1, "application/x-cpio", true},
		{"cpio ASCII", cat("070701", strings.Repeat("0", 104), "hello\x00"), -1, "application/x-cpio", true},
		{"tar", ustar, -1, "application/x-tar", true},
		{"V7 tar", v7Tar(ustar), -1, "application/x-tar", true},
		{"pcap LE", cat("\xd4\xc3\xb2\xa1\x02\x00\x04\x00", zeros(16)), -1, "application/vnd.tcpdump.pcap", true},
		{"pcap BE", cat("\xa1\xb2\xc3\xd4\x00\x02\x00\x04", zeros(16)), -1, "application/vnd.tcpdump.pcap", true},

		// Documents.
		{"PDF", []byte("%PDF-1.4\n1 0 obj\n<< >>\nendobj\n"), -1, "application/pdf", true},
		{"PostScript", []byte("%!PS\n/Courier findfont\n"), -1, "application/postscript", true},
		{"PostScript Adobe", []byte("%!PS-Adobe-3.0\n%%Title: x\n"), -1, "application/postscript", true},
		{"DOS EPS", cat("\xc5\xd0\xd3\xc6\x20\x00\x00\x00", zeros(24), "%!PS-Adobe-3.1 EPSF"), -1, "application/postscript", true},
		{"OLE compound file", cat("\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", zeros(504)), -1, "application/x-cfb", true},
		{"Arrow", cat("ARROW1\x00\x00\xff\xff\xff\xff", zeros(8)), -1, "application/x-arrow", true},
		{"Parquet", cat("PAR1\x15\x04\x15", zeros(8)), -1, "application/x-parquet", true},
		{"SQLite", cat("SQLite format 3\x00\x10\x00", zeros(16)), -1, "application/x-sqlite3", true},

		// Executables.
		{"ELF shared object", cat("\x7fELF\x02\x01\x01\x00", zeros(8), "\x03\x00\x3e\x00", zeros(8)), -1, "application/x-executable", true},
		{"Mach-O 64", cat("\xcf\xfa\xed\xfe\x0c\x00\x00\x01", zeros(8)), -1, "application/x-mach-binary", true},
		{"Mach-O 32 BE", cat("\xfe\xed\xfa\xce\x00\x00\x00\x12", zeros(8)), -1, "application/x-mach-binary", true},
		{"Mach-O fat", cat("\xca\xfe\xba\xbe\x00\x00\x00\x02\x01\x00\x00\x07", zeros(8)), -1, "application/x-mach-binary", true},
		{"Java class", cat("\xca\xfe\xba\xbe\x00\x00\x00\x34\x00\x0e", zeros(8)), -1, "application/java-vm", true},
		{"DOS executable", cat("MZ\x90\x00\x03\x00", zeros(58)), -1, "application/x-dosexec", true},
		{"Dalvik", cat("dex\n035\x00", zeros(16)), -1, "application/vnd.android.dex", true},
		{"LLVM bitcode", cat("BC\xc0\xde\x35\x14", zeros(8)), -1, "application/x-llvm", true},

		// Fonts.
		{"TrueType", cat("\x00\x01\x00\x00\x00\x0e\x00\x80", zeros(8)), -1, "font/ttf", true},
		{"OpenType", cat("OTTO\x00\x0b\x00\x80", zeros(8)), -1, "font/otf", true},
		{"WOFF", cat("wOFF\x00\x01\x00\x00", zeros(36)), -1, "font/woff", true},
		{"WOFF2", cat("wOF2\x00\x01\x00\x00", zeros(40)), -1, "font/woff2", true},

		// Other binary formats.
		{"WebAssembly", cat("\x00asm\x01\x00\x00\x00"), -1, "application/wasm", true},
		{"glTF binary", cat("glTF\x02\x00\x00\x00\x40\x00\x00\x00", zeros(8)), -1, "model/gltf-binary", true},
		{"SWF", cat("FWS\x0a\x20\x00\x00\x00", zeros(8)), -1, "application/x-shockwave-flash", true},
		{"compressed SWF", cat("CWS\x0a\x20\x00\x00\x00\x78\x9c", zeros(8)), -1, "application/x-shockwave-flash", true},
		{"NES ROM", cat("NES\x1a\x01\x00", zeros(10)), -1, "application/x-nes-rom", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			size := tt.size
			if size < 0 {
				size = int64(len(tt.head))
			}
			got := Detect(tt.head, size)
			want := Type{MIME: tt.mime, Binary: tt.binary}
			if got != want {
				t.Errorf("Detect(%q) = %+v, want %+v", truncate(tt.head), got, want)
			}
			checkInvariant(t, got)
		})
	}
}

// checkInvariant checks that text is reported with a text/* type (or as
// empty) and binary content never is.
func checkInvariant(t *testing.T, got Type) {
	t.Helper()
	isText := strings.HasPrefix(got.MIME, "text/") || got.MIME == "inode/x-empty"
	if got.Binary == isText {
		t.Errorf("Detect = %+v: Binary disagrees with the MIME type", got)
	}
	if strings.Contains(got.MIME, ";") {
		t.Errorf("Detect = %+v: MIME type has parameters", got)
	}
}

// truncate shortens b for error messages.
func truncate(b []byte) []byte {
	if len(b) > 32 {
		return b[:32]
	}
	return b
}

// TestDetectBeyondReference checks formats boxsh v3 reports as
// application/octet-stream or by their container only, which mimetype
// names.
func TestDetectBeyondReference(t *testing.T) {
	tests := []struct {
		name string
		head []byte
		mime string
	}{
		{"3GPP", isoBox("3gp5"), "video/3gpp"},
		{"M4A", isoBox("M4A "), "audio/x-m4a"},
		{"Ogg Theora", cat("OggS\x00\x02", zeros(22), "\x80theora", zeros(16)), "video/ogg"},
		{"Motion JPEG 2000", cat("\x00\x00\x00\x0cjP  \x0d\x0a\x87\x0a\x00\x00\x00\x14ftypmjp2", zeros(8)), "video/mj2"},
		{"ICNS", cat("icns\x00\x00\x01\x00", zeros(8)), "image/x-icns"},
		{"Windows shortcut", cat("\x4c\x00\x00\x00\x01\x14\x02\x00\x00\x00\x00\x00\xc0\x00\x00\x00\x00\x00\x00\x46", zeros(8)), "application/x-ms-shortcut"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Detect(tt.head, int64(len(tt.head)))
			if want := (Type{MIME: tt.mime, Binary: true}); got != want {
				t.Errorf("Detect(%q) = %+v, want %+v", truncate(tt.head), got, want)
			}
		})
	}
}

// TestDetectMPEGAudioFrames checks the validation of bare MPEG audio frames.
func TestDetectMPEGAudioFrames(t *testing.T) {
	frame := mp1Frames()
	broken := bytes.Clone(frame)
	broken[48] = 0x00 // the second frame does not start where it should
	tests := []struct {
		name string
		head []byte
		mime string
	}{
		{"two frames", frame, "audio/mpeg"},
		{"single truncated frame", frame[:20], "audio/mpeg"},
		{"no second frame", broken, "application/octet-stream"},
		{"free format", cat("\xff\xff\x00\x00", zeros(60)), "application/octet-stream"},
		{"reserved sample rate", cat("\xff\xff\x1c\x00", zeros(60)), "application/octet-stream"},
		{"reserved version", cat("\xff\xeb\x90\x00", zeros(60)), "application/octet-stream"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Detect(tt.head, int64(len(tt.head)))
			if want := (Type{MIME: tt.mime, Binary: true}); got != want {
				t.Errorf("Detect(%q) = %+v, want %+v", truncate(tt.head), got, want)
			}
		})
	}
}

// TestDetectTarChecksum checks that a tar header with a wrong checksum is
// not taken for a tar archive.
func TestDetectTarChecksum(t *testing.T) {
	b := v7Tar(tarArchive(t))
	b[0]++ // the name no longer matches the checksum
	if got := Detect(b, int64(len(b))); got.MIME == "application/x-tar" {
		t.Errorf("Detect(corrupt V7 tar) = %+v, want not a tar archive", got)
	}
}

// TestDetectDoesNotModifyHead checks that Detect leaves its input alone.
func TestDetectDoesNotModifyHead(t *testing.T) {
	head := isoBox("heic")
	orig := bytes.Clone(head)
	Detect(head, int64(len(head)))
	if !bytes.Equal(head, orig) {
		t.Error("Detect modified head")
	}
}

// FuzzDetect checks Detect's invariants and compares it with the full tree
// walk. It is seeded with the text seeds, the benchmark heads and a sample
// of the repository's files and GOROOT's (and $BOXSH_FIXTURES').
func FuzzDetect(f *testing.F) {
	f.Add([]byte("hello\n"), int64(6))
	f.Add(mp1Frames(), int64(96))
	f.Add(packets(3, 188, 0), int64(564))
	f.Add(isoBox("mif1"), int64(40))
	for _, s := range textSeeds {
		f.Add([]byte(s), int64(len(s)))
	}
	for _, b := range benchHeads {
		f.Add([]byte(b.head), int64(len(b.head)))
	}
	files := readCorpus(f, corpusDirs(f)...)
	for i := 0; i < len(files); i += max(1, len(files)/200) {
		f.Add(files[i].head, files[i].size)
	}
	f.Fuzz(func(t *testing.T, head []byte, size int64) {
		got := Detect(head, size)
		checkInvariant(t, got)
		if len(head) > 0 && got.MIME == "inode/x-empty" {
			t.Errorf("Detect(%q) = %+v for a non-empty head", truncate(head), got)
		}
		if want := slowDetect(head, size); got != want {
			t.Errorf("Detect(%q, %d) = %+v, full walk = %+v", truncate(head), size, got, want)
		}
		// The same head made clean, for the fast path to answer.
		clean := bytes.Clone(head)
		for i, c := range clean {
			if byteKind[c] == nulByte || byteKind[c] == suspiciousByte {
				clean[i] = c + '@'
			}
		}
		if got, want := Detect(clean, size), slowDetect(clean, size); got != want {
			t.Errorf("Detect(%q, %d) = %+v, full walk = %+v", truncate(clean), size, got, want)
		}
	})
}

// TestControlsMatchesByteLoop checks the word-at-a-time scan of controls
// against a plain loop over each byte, on random heads of every alignment.
func TestControlsMatchesByteLoop(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	alphabet := []byte("ab \t\n\r\x1b\x00\x01\x07\x08\x0b\x0e\x1f\x7f\x80\xc3\xa9\xff ")
	for range 5000 {
		head := make([]byte, r.IntN(40))
		for i := range head {
			if r.IntN(4) == 0 {
				head[i] = alphabet[r.IntN(len(alphabet))]
			} else {
				head[i] = 'x'
			}
		}
		if r.IntN(10) == 0 {
			// Long, with a few control characters around mimeLimit.
			head = bytes.Repeat([]byte("x"), mimeLimit-20+r.IntN(40))
			for range 3 {
				head[len(head)-1-r.IntN(40)] = alphabet[r.IntN(len(alphabet))]
			}
		}
		wantNUL, wantSuspicious, wantBSVT := false, 0, false
		for i, c := range head {
			if c == 0 {
				wantNUL = true
				break
			}
			if isSuspicious(c) {
				wantSuspicious++
			}
			if (c == '\b' || c == '\v') && i < mimeLimit {
				wantBSVT = true
			}
		}
		nul, suspicious, bsvt := controls(head)
		if nul != wantNUL || (!nul && (suspicious != wantSuspicious || bsvt != wantBSVT)) {
			t.Fatalf("controls(%q) = %v, %d, %v; want %v, %d, %v", head, nul, suspicious, bsvt, wantNUL, wantSuspicious, wantBSVT)
		}
	}
}
