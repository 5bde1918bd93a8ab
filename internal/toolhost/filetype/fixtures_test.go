package filetype

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fixtureEnv names the environment variable pointing at a directory holding
// the fixtures of boxsh v3 (tests/fixture, flattened).
const fixtureEnv = "BOXSH_FIXTURES"

// fixtureTypes is the extension → MIME table of boxsh v3's
// tests/file-type.test.mjs: the formats boxsh v3 detects.
var fixtureTypes = map[string]string{
	// Images.
	"jpg":  "image/jpeg",
	"png":  "image/png",
	"gif":  "image/gif",
	"webp": "image/webp",
	"bmp":  "image/bmp",
	"ico":  "image/x-icon",
	"cur":  "image/x-icon",
	"tif":  "image/tiff",
	"jxl":  "image/jxl",
	"jp2":  "image/jp2",
	"jxr":  "image/vnd.ms-photo",
	"psd":  "image/vnd.adobe.photoshop",
	"avif": "image/avif",
	"heic": "image/heic",
	"raf":  "image/x-fujifilm-raf",

	// Audio.
	"mp3":  "audio/mpeg",
	"mp2":  "audio/mpeg",
	"mp1":  "audio/mpeg",
	"ogg":  "audio/ogg",
	"flac": "audio/flac",
	"mid":  "audio/midi",
	"wav":  "audio/wav",
	"aif":  "audio/aiff",
	"aac":  "audio/aac",
	"amr":  "audio/amr",
	"ac3":  "audio/vnd.dolby.dd-raw",
	"voc":  "audio/x-voc",
	"mpc":  "audio/x-musepack",
	"wv":   "audio/wavpack",

	// Video.
	"mp4":  "video/mp4",
	"mov":  "video/quicktime",
	"mkv":  "video/x-matroska",
	"webm": "video/x-matroska",
	"flv":  "video/x-flv",
	"avi":  "video/x-msvideo",
	"mpg":  "video/mpeg",
	"asf":  "video/x-ms-asf",
	"mts":  "video/mp2t",

	// Archives and compressed data.
	"zip":  "application/zip",
	"gz":   "application/gzip",
	"bz2":  "application/x-bzip2",
	"xz":   "application/x-xz",
	"zst":  "application/zstd",
	"7z":   "application/x-7z-compressed",
	"rar":  "application/x-rar-compressed",
	"lz4":  "application/x-lz4",
	"lz":   "application/x-lzip",
	"Z":    "application/x-compress",
	"tar":  "application/x-tar",
	"rpm":  "application/x-rpm",
	"deb":  "application/x-deb",
	"ar":   "application/x-archive",
	"cpio": "application/x-cpio",

	// Documents.
	"pdf":     "application/pdf",
	"cfb":     "application/x-cfb",
	"ps":      "application/postscript",
	"arrow":   "application/x-arrow",
	"parquet": "application/x-parquet",
	"sqlite":  "application/x-sqlite3",

	// Executables.
	"elf":   "application/x-executable",
	"macho": "application/x-mach-binary",
	"exe":   "application/x-dosexec",
	"class": "application/java-vm",

	// Fonts.
	"ttf":   "font/ttf",
	"otf":   "font/otf",
	"woff":  "font/woff",
	"woff2": "font/woff2",

	// Other.
	"wasm": "application/wasm",
	"glb":  "model/gltf-binary",
	"swf":  "application/x-shockwave-flash",
	"nes":  "application/x-nes-rom",
	"pcap": "application/vnd.tcpdump.pcap",
}

// fixtureNames lists the fixtures with non-default base names, per
// extension; other extensions have a single "fixture.<ext>".
var fixtureNames = map[string][]string{
	"aac":   {"fixture-adts-mpeg2", "fixture-adts-mpeg4", "fixture-adts-mpeg4-2", "fixture-id3v2"},
	"mp3":   {"fixture", "fixture-mp2l3", "fixture-ffe3"},
	"mp2":   {"fixture", "fixture-mpa"},
	"mp4":   {"fixture-imovie", "fixture-isom", "fixture-isomv2", "fixture-mp4v2", "fixture-dash"},
	"mov":   {"fixture", "fixture-mjpeg", "fixture-moov"},
	"mkv":   {"fixture", "fixture2"},
	"mpg":   {"fixture", "fixture2", "fixture.ps", "fixture.sub"},
	"tif":   {"fixture-big-endian", "fixture-little-endian", "fixture-bali"},
	"png":   {"fixture", "fixture-itxt"},
	"jxl":   {"fixture", "fixture2"},
	"avif":  {"fixture-yuv420-8bit", "fixture-sequence"},
	"heic":  {"fixture-mif1", "fixture-msf1", "fixture-heic"},
	"pdf":   {"fixture", "fixture-adobe-illustrator", "fixture-smallest", "fixture-fast-web", "fixture-printed", "fixture-minimal"},
	"cfb":   {"fixture.msi", "fixture.xls", "fixture.doc", "fixture.ppt", "fixture-2.doc"},
	"asf":   {"fixture", "fixture.wma", "fixture.wmv"},
	"tar":   {"fixture", "fixture-v7", "fixture-spaces", "fixture-pax"},
	"mpc":   {"fixture-sv7", "fixture-sv8"},
	"pcap":  {"fixture-big-endian", "fixture-little-endian"},
	"woff":  {"fixture", "fixture-otto"},
	"woff2": {"fixture", "fixture-otto"},
	"zip":   {"fixture", "fixture2"},
	"macho": {"fixture-arm64", "fixture-x86_64", "fixture-i386", "fixture-ppc7400", "fixture-fat-binary"},
	"mts":   {"fixture-raw", "fixture-bdav"},
	"webm":  {"fixture-null"},
	"gz":    {"fixture"},
	"xz":    {"fixture.tar"},
	"lz":    {"fixture.tar"},
	"Z":     {"fixture.tar"},
	"zst":   {"fixture.tar"},
	"lz4":   {"fixture"},
	"cpio":  {"fixture-bin", "fixture-ascii"},
}

// fixtureOverrides are the fixtures whose expected MIME type differs from
// their extension's.
var fixtureOverrides = map[string]string{
	"fixture-id3v2.aac":     "audio/mpeg",
	"fixture-id3v2.flac":    "audio/mpeg",
	"fixture-raw.mts":       "video/mp2t",
	"fixture-bdav.mts":      "video/mp2t",
	"fixture-null.webm":     "video/x-matroska",
	"fixture.eps":           "application/postscript",
	"fixture2.eps":          "application/postscript",
	"fixture.ps.mpg":        "video/mpeg",
	"fixture.sub.mpg":       "video/mpeg",
	"fixture.tar.xz":        "application/x-xz",
	"fixture.tar.lz":        "application/x-lzip",
	"fixture.tar.Z":         "application/x-compress",
	"fixture.tar.zst":       "application/zstd",
	"fixture-sequence.avif": "image/avif",
	"fixture-mif1.heic":     "image/heif",
	"fixture-msf1.heic":     "image/heif-sequence",
	"fixture-heic.heic":     "image/heic",
}

// unsupportedFixtures are the fixtures boxsh v3 reports as
// application/octet-stream. We only require them to be binary: naming their
// real format is an improvement.
var unsupportedFixtures = []string{
	"fixture.blend", "fixture.bpg", "fixture.cab", "fixture.chm", "fixture.dcm",
	"fixture.dmg", "fixture.dsf", "fixture.fbx", "fixture.icc", "fixture.icns",
	"fixture.indd", "fixture.it", "fixture.ktx", "fixture.lnk", "fixture.lzh",
	"fixture.mobi", "fixture.mxf", "fixture.s3m", "fixture.sav", "fixture.xcf",
	"fixture.xm",
}

// readHead returns the first HeadSize bytes of the file at path and its size.
func readHead(t *testing.T, path string) ([]byte, int64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("open fixture: %v", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		t.Fatalf("stat fixture: %v", err)
	}
	head := make([]byte, HeadSize)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		t.Fatalf("read fixture: %v", err)
	}
	return head[:n], info.Size()
}

// fixtureDir returns the fixture directory, or skips the test.
func fixtureDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv(fixtureEnv)
	if dir == "" {
		t.Skip("set " + fixtureEnv + " to run the v3 fixture comparison")
	}
	return dir
}

// TestFixtures compares Detect with the MIME types boxsh v3's
// file-type.test.mjs expects, for the fixtures present in $BOXSH_FIXTURES.
func TestFixtures(t *testing.T) {
	dir := fixtureDir(t)
	present, missing := 0, []string{}
	for ext, mime := range fixtureTypes {
		names, ok := fixtureNames[ext]
		if !ok {
			names = []string{"fixture"}
		}
		for _, name := range names {
			file := name + "." + ext
			want := mime
			if o, ok := fixtureOverrides[file]; ok {
				want = o
			}
			path := filepath.Join(dir, file)
			if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
				missing = append(missing, file)
				continue
			}
			present++
			t.Run(file, func(t *testing.T) {
				got := Detect(readHead(t, path))
				if got.MIME != want || !got.Binary {
					t.Errorf("Detect(%s) = %+v, want {MIME:%s Binary:true}", file, got, want)
				}
			})
		}
	}
	t.Logf("%d fixtures present, %d missing: %s", present, len(missing), strings.Join(missing, " "))
}

// TestFixturesUnsupported checks that the formats boxsh v3 does not name are
// still binary, and logs the names we report for them.
func TestFixturesUnsupported(t *testing.T) {
	dir := fixtureDir(t)
	for _, file := range unsupportedFixtures {
		path := filepath.Join(dir, file)
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		t.Run(file, func(t *testing.T) {
			got := Detect(readHead(t, path))
			if !got.Binary || strings.HasPrefix(got.MIME, "text/") {
				t.Errorf("Detect(%s) = %+v, want a binary type", file, got)
			}
			t.Logf("%s: %s", file, got.MIME)
		})
	}
}

// TestFixturesText checks the text fixtures boxsh v3 ships.
func TestFixturesText(t *testing.T) {
	dir := fixtureDir(t)
	for _, file := range []string{"sample.txt", "other.txt", "fixture.xml", "fixture.vcf", "fixture.ics", "fixture-vtt-eof.vtt", "fixture.rtf"} {
		path := filepath.Join(dir, file)
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		t.Run(file, func(t *testing.T) {
			got := Detect(readHead(t, path))
			if got.Binary || !strings.HasPrefix(got.MIME, "text/") {
				t.Errorf("Detect(%s) = %+v, want a non-binary text/* type", file, got)
			}
		})
	}
}
