package idle

import (
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// rssFileKiB is this process's resident file-backed memory.
func rssFileKiB(t *testing.T) int {
	t.Helper()
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`RssFile:\s+(\d+) kB`).FindSubmatch(status)
	if m == nil {
		t.Fatalf("no RssFile in /proc/self/status:\n%s", status)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

// The test binary's own pages leave its resident set, and it runs on: the
// kernel maps them again as they are used.
func TestReleaseExecutable(t *testing.T) {
	before := rssFileKiB(t)
	released, err := ReleaseExecutable()
	if err != nil {
		t.Fatal(err)
	}
	after := rssFileKiB(t)
	if released.Bytes() == 0 || after >= before {
		t.Fatalf("released %d bytes; RssFile %d kB before, %d kB after: want it lower", released.Bytes(), before, after)
	}
	// Code and read-only data the release dropped are mapped again.
	if got := regexp.MustCompile(`^a+b$`).MatchString("aaab"); !got {
		t.Fatal("regexp after the release: no match")
	}
	mapped := rssFileKiB(t)
	again, err := ReleaseExecutable()
	if err != nil || again.Bytes() == 0 {
		t.Fatalf("second release: %d bytes, %v", again.Bytes(), err)
	}
	dropped := rssFileKiB(t)
	again.Populate()
	if populated := rssFileKiB(t); populated <= dropped || populated < mapped {
		t.Errorf("RssFile %d kB after Populate, %d kB after the release, %d kB before it: want all mapped again", populated, dropped, mapped)
	}
}

// Only the file's private, read-only mappings without a copied page are
// released: a relocated RELRO page, a writable or shared mapping, another
// file's, keep theirs.
func TestCleanMappings(t *testing.T) {
	dev := unix.Mkdev(0xfd, 0x1)
	smaps := `00400000-00403000 r--p 00000000 fd:01 77 /usr/bin/boxsh
Size:                 12 kB
Rss:                  12 kB
Anonymous:             0 kB
VmFlags: rd mr mw me sd
00403000-008ab000 r-xp 00003000 fd:01 77 /usr/bin/boxsh
Size:               4768 kB
Anonymous:             0 kB
00db0000-00db1000 r--p 009af000 fd:01 77 /usr/bin/boxsh
Anonymous:             4 kB
00db1000-00e22000 rw-p 009b0000 fd:01 77 /usr/bin/boxsh
Anonymous:           100 kB
7f0000000000-7f0000001000 r--s 00000000 fd:01 77 /usr/bin/boxsh
Anonymous:             0 kB
7f0000100000-7f0000200000 r-xp 00000000 fd:01 78 /usr/lib/libc.so.6
Anonymous:             0 kB
7f0000300000-7f0000400000 r-xp 00000000 fd:02 77 /other/fs/same-inode
Anonymous:             0 kB
7f0000500000-7f0000600000 rw-p 00000000 00:00 0 
Anonymous:          1024 kB
`
	got, err := cleanMappings(strings.NewReader(smaps), dev, 77)
	if err != nil {
		t.Fatal(err)
	}
	want := []mapping{{0x400000, 0x403000}, {0x403000, 0x8ab000}}
	if !slices.Equal(got, want) {
		t.Errorf("cleanMappings = %x, want %x", got, want)
	}
}
