package toolhost

import (
	"context"

	"github.com/boxsh/boxsh/internal/tool"
	"github.com/boxsh/boxsh/internal/toolhost/files"
)

// init registers the handlers of the file tools but stat (see stat.go).
// The sandbox's policy rules explain their failures.
func init() {
	tool.Handle(tools, tool.ReadDef, func(ctx context.Context, a *Host, args tool.ReadArgs) (tool.Result, error) {
		return a.explain(files.Read(ctx, args), args.Path, false), nil
	})
	tool.Handle(tools, tool.WriteDef, func(ctx context.Context, a *Host, args tool.WriteArgs) (tool.Result, error) {
		return a.explain(files.Write(ctx, args), args.Path, true), nil
	})
	tool.Handle(tools, tool.EditDef, func(ctx context.Context, a *Host, args tool.EditArgs) (tool.Result, error) {
		return a.explain(files.Edit(ctx, args), args.Path, true), nil
	})
	tool.Handle(tools, tool.ListDef, func(ctx context.Context, a *Host, args tool.ListArgs) (tool.Result, error) {
		return a.explain(files.List(ctx, args, a.DeniedBy), args.Path, false), nil
	})
}
