package fleet

import (
	"fmt"
	"net/http"

	"github.com/boxsh/boxsh/client/apitype"
	"github.com/boxsh/boxsh/internal/bytesize"
	"github.com/boxsh/boxsh/policy"
	"github.com/boxsh/boxsh/rpc"
	"github.com/boxsh/boxsh/runtime/host"
)

// diskLimit is the disk limit of a create: its own (SandboxRequest.Disk)
// or the server's, which bounds it. A refusal names the limit.
func (m *Manager) diskLimit(req apitype.SandboxRequest) (int64, error) {
	if req.Disk == "" {
		return m.cfg.Disk, nil
	}
	n, err := policy.ParseSize(req.Disk)
	if err != nil {
		return 0, &rpc.SandboxError{Status: http.StatusBadRequest, Msg: fmt.Sprintf("sandbox %s: disk: %v", req.Name, err)}
	}
	if m.cfg.Disk > 0 && n > m.cfg.Disk {
		return 0, &rpc.SandboxError{Status: http.StatusBadRequest, Msg: fmt.Sprintf("sandbox %s: disk %s is above the server's limit, %s (--sandbox-disk)", req.Name, req.Disk, bytesize.Format(m.cfg.Disk))}
	}
	return n, nil
}

// startDisk starts the accounting of the sandbox's writable layer (its
// session's DST) against its limit, before its boxsh-init starts.
func (sb *Sandbox) startDisk(m *Manager) error {
	if sb.diskMax <= 0 {
		return nil
	}
	d, err := host.NewDiskLimit(sb.sess.Dst(), sb.diskMax, m.cfg.Log.With("sandbox", sb.name))
	if err != nil {
		return err
	}
	sb.disk = d
	return nil
}

// diskInfo is the sandbox's disk use, nil without a limit.
func (sb *Sandbox) diskInfo() *apitype.SandboxDisk {
	if sb.disk == nil {
		return nil
	}
	used, full := sb.disk.Used()
	return &apitype.SandboxDisk{Used: used, Limit: sb.disk.Limit(), Full: full}
}

// diskError adds to a failed call's error that the sandbox is past its
// disk limit, if it is (its boxsh-init is killed past the slack).
func (sb *Sandbox) diskError(err error) error {
	if err == nil || sb.disk == nil {
		return err
	}
	if used, full := sb.disk.Used(); full {
		return fmt.Errorf("%w (sandbox %s is past its disk limit: its writable layer holds %s, its limit is %s)", err, sb.name, bytesize.Format(used), bytesize.Format(sb.disk.Limit()))
	}
	return err
}
