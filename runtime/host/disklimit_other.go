//go:build !linux

package host

import (
	"errors"

	"github.com/hashicorp/go-hclog"
)

// DiskLimit bounds a sandbox's writable layer (Linux only).
type DiskLimit struct{ limit int64 }

// DiskSlack is how far past its limit a sandbox's layer may grow before
// the sandbox is killed.
func DiskSlack(limit int64) int64 { return min(max(limit/8, 8<<20), 256<<20) }

// NewDiskLimit refuses: disk limits need Linux.
func NewDiskLimit(string, int64, hclog.Logger) (*DiskLimit, error) {
	return nil, errors.New("disk limits need Linux")
}

// Limit is the limit in bytes.
func (d *DiskLimit) Limit() int64 { return d.limit }

// Slack is DiskSlack of the limit.
func (d *DiskLimit) Slack() int64 { return DiskSlack(d.limit) }

// Used is the space the layer took at the last walk.
func (d *DiskLimit) Used() (int64, bool) { return 0, false }

// Killed counts the sandbox's kills.
func (d *DiskLimit) Killed() int { return 0 }

// Started hands the limit a new boxsh-init.
func (d *DiskLimit) Started(int) error { return nil }

// Stale is "": nothing to renew.
func (d *DiskLimit) Stale(int) string { return "" }

// Close stops the accounting.
func (d *DiskLimit) Close() {}

// FileSize is the limit.
func (d *DiskLimit) FileSize() uint64 { return uint64(d.limit) }
