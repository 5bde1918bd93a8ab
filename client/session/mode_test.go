package session

import (
	"io/fs"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestApplyModeRule(t *testing.T) {
	for _, c := range []struct {
		want, allowed, got uint32
	}{
		{0o777, 0o755, 0o755},    // chmod 777 on a 0755 directory
		{0o666, 0o644, 0o644},    // chmod 666 on a 0644 file
		{0o1777, 0o755, 0o755},   // the sticky bit is not added
		{0o4755, 0o755, 0o755},   // nor setuid
		{0o2775, 0o755, 0o755},   // nor setgid, nor group write
		{0o600, 0o644, 0o600},    // taking bits away is applied
		{0o755, 0o644, 0o755},    // execute bits are not guarded
		{0o666, 0o664, 0o664},    // SRC had group write: kept
		{0o666, 0o666, 0o666},    // and other write
		{0o1777, 0o1777, 0o1777}, // and the sticky bit
		{0o2775, 0o2775, 0o2775}, // and setgid
		{0o4755, 0o2775, 0o755},  // setgid does not allow setuid
		{0o777, 0o002, 0o757},    // other write without group write
		{0o7777, 0o7777, 0o7777}, // everything SRC had
		{0o7777, 0, 0o755},       // nothing it had not
		{0o644, 0o7777, 0o644},   // allowed bits are not added
		{0o7000 | 0o22, 0, 0},    // only guarded bits: none left
		{0o4777, sISVTX, 0o755},  // sticky allowed, nothing else
		{0o1777, sIWOTH, 0o757},  // other write allowed, not sticky
		{0o2777, sISGID, 0o2755}, // setgid allowed only
		{0o777, newAllowed(0o775, false), 0o775},
	} {
		assert.Equal(t, c.got, applyMode(c.want, c.allowed), "applyMode(%04o, %04o)", c.want, c.allowed)
	}
}

func TestNewEntryAllowed(t *testing.T) {
	for _, c := range []struct {
		parent uint32
		dir    bool
		want   uint32
	}{
		{0o755, false, 0},
		{0o755, true, 0},
		{0o775, false, sIWGRP},          // a group's shared directory
		{0o777, false, sIWGRP | sIWOTH}, // open to all already
		{0o1777, false, 0},              // sticky (like /tmp): others cannot replace it, so no write for them
		{0o2775, true, sIWGRP | sISGID}, // setgid is inherited by directories, as the kernel does
		{0o2775, false, sIWGRP},         // not by files
		{0o4777, true, sIWGRP | sIWOTH}, // setuid never
	} {
		assert.Equal(t, c.want, newAllowed(c.parent, c.dir), "newAllowed(%04o, %v)", c.parent, c.dir)
	}
}

func TestModeString(t *testing.T) {
	assert.Equal(t, "0755", modeString(0o755))
	assert.Equal(t, "0644", modeString(0o644))
	assert.Equal(t, "01777", modeString(fs.ModeSticky|0o777))
	assert.Equal(t, "04755", modeString(fs.ModeSetuid|0o755))
	assert.Equal(t, "02775", modeString(fs.ModeSetgid|0o775))
	assert.Equal(t, "0000", modeString(0))
	for p := uint32(0); p <= 0o7777; p++ {
		assert.Equal(t, p, unixPerm(fileMode(p)))
	}
}

func TestChangeStringModes(t *testing.T) {
	for _, c := range []struct {
		c    Change
		want string
	}{
		{Change{Path: "n.txt", Kind: Added, Type: TypeFile, Mode: 0o644}, "A n.txt (0644)"},
		{Change{Path: "pub", Kind: Added, Type: TypeDir, Mode: 0o777}, "A pub/ (0777, group-writable, world-writable)"},
		{Change{Path: "g", Kind: Added, Type: TypeFile, Mode: 0o664}, "A g (0664, group-writable)"},
		{Change{Path: "s", Kind: Added, Type: TypeFile, Mode: fs.ModeSetuid | 0o755}, "A s (04755, setuid)"},
		{Change{Path: "t", Kind: Added, Type: TypeDir, Mode: fs.ModeSticky | fs.ModeSetgid | 0o777}, "A t/ (03777, group-writable, world-writable, setgid)"},
		{Change{Path: "l", Kind: Added, Type: TypeSymlink, Mode: 0o777, Target: "x"}, "A l -> x"},
		{Change{Path: "sub", Kind: ModeChanged, Type: TypeDir, OldType: TypeDir, Mode: fs.ModeSticky | 0o777, OldMode: 0o755}, "P sub/ (0755 -> 01777, group-writable, world-writable)"},
		{Change{Path: "run.sh", Kind: ModeChanged, Type: TypeFile, OldType: TypeFile, Mode: 0o755, OldMode: 0o644}, "P run.sh (0644 -> 0755)"},
		{Change{Path: "a", Kind: Modified, Type: TypeFile, OldType: TypeFile, Mode: 0o666, OldMode: 0o664}, "M a (0664 -> 0666, world-writable)"},
		{Change{Path: "a", Kind: Modified, Type: TypeFile, OldType: TypeFile, Mode: 0o644, OldMode: 0o644}, "M a"},
		{Change{Path: "x", Kind: TypeChanged, Type: TypeDir, OldType: TypeFile, Mode: 0o777, OldMode: 0o644}, "T x/ (file -> dir, 0777, group-writable, world-writable)"},
		{Change{Path: "d", Kind: Deleted, Type: TypeFile, OldType: TypeFile, OldMode: 0o644}, "D d"},
	} {
		assert.Equal(t, c.want, c.c.String())
	}
}
