package toolhost

import (
	"bytes"
	"context"
	"encoding/json"
	"time"

	"github.com/boxsh/boxsh/internal/tool"
)

// init registers the handlers of the tools of background processes. The
// bash handler here runs a call in the background (see isBackground); the
// pool runs the other bash calls.
func init() {
	tool.Handle(tools, tool.BashDef, func(_ context.Context, a *Host, args tool.BashArgs) (tool.Result, error) {
		return a.startBackground(args)
	})
	tool.Handle(tools, tool.ProcessOutputDef, func(ctx context.Context, a *Host, args tool.ProcessOutputArgs) (tool.Result, error) {
		wait := time.Duration(min(args.WaitMS, tool.MaxProcessWaitMS)) * time.Millisecond
		return structured(a.procs.Output(ctx, args.ID, args.Offset, wait))
	})
	tool.Handle(tools, tool.ProcessKillDef, func(ctx context.Context, a *Host, args tool.ProcessKillArgs) (tool.Result, error) {
		return structured(a.procs.Kill(ctx, args.ID, args.Signal))
	})
	tool.Handle(tools, tool.ProcessListDef, func(_ context.Context, a *Host, _ tool.NoArgs) (tool.Result, error) {
		return tool.StructuredResult(tool.ProcessListOutput{Processes: a.procs.List()}), nil
	})
}

// isBackground tells whether bash arguments ask for the background: such a
// call takes no worker of the pool, and runs as the other tools do. The
// arguments of most calls do not name the member, and are not decoded.
func isBackground(args json.RawMessage) bool {
	if !bytes.Contains(args, []byte(`"background"`)) {
		return false
	}
	var v struct {
		Background bool `json:"background"`
	}
	return json.Unmarshal(args, &v) == nil && v.Background
}

// startBackground starts a bash call's command in the background and
// answers its id and pid (see background.Manager.Start). Arguments that
// cannot run (args that checkArgv refuses) are refused as invalid.
func (a *Host) startBackground(args tool.BashArgs) (tool.Result, error) {
	if args.Args != nil {
		if err := checkArgv(args); err != nil {
			return tool.Result{}, err
		}
	}
	out, err := a.procs.Start(args)
	if err != nil {
		return tool.Errorf("bash: %v", err), nil
	}
	return tool.StructuredResult(out), nil
}

// structured is the result of a tool whose answer is v, or a tool error.
func structured[T any](v T, err error) (tool.Result, error) {
	if err != nil {
		return tool.Errorf("%v", err), nil
	}
	return tool.StructuredResult(v), nil
}
