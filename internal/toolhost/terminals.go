package toolhost

import (
	"context"
	"encoding/json"

	"github.com/boxsh/boxsh/internal/tool"
)

// init registers the handlers of the terminal tools.
func init() {
	tool.Handle(tools, tool.RunInTerminalDef, func(ctx context.Context, a *Host, args tool.RunInTerminalArgs) (tool.Result, error) {
		return snapshot(a.terms.Run(ctx, args.Command, args.Cols, args.Rows))
	})
	tool.Handle(tools, tool.SendToTerminalDef, func(ctx context.Context, a *Host, args tool.SendToTerminalArgs) (tool.Result, error) {
		return snapshot(a.terms.Send(ctx, args.ID, args.Command))
	})
	tool.Handle(tools, tool.GetTerminalOutputDef, func(ctx context.Context, a *Host, args tool.TerminalIDArgs) (tool.Result, error) {
		return snapshot(a.terms.Output(ctx, args.ID))
	})
	tool.Handle(tools, tool.KillTerminalDef, func(ctx context.Context, a *Host, args tool.TerminalIDArgs) (tool.Result, error) {
		snap, err := a.terms.Kill(ctx, args.ID)
		if err != nil {
			return tool.Errorf("%v", err), nil
		}
		return tool.StructuredResult(map[string]string{"output": snap.Output}), nil
	})
	tool.Handle(tools, tool.ListTerminalsDef, func(_ context.Context, a *Host, _ tool.NoArgs) (tool.Result, error) {
		list := a.terms.List()
		b, err := json.Marshal(list)
		if err != nil {
			return tool.Result{}, err
		}
		r := tool.TextResult(string(b))
		r.StructuredContent = map[string]any{"sessions": list}
		return r, nil
	})
}
