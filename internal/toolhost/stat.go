package toolhost

import (
	"context"

	"github.com/boxsh/boxsh/internal/tool"
	"github.com/boxsh/boxsh/internal/toolhost/files"
)

// The stat tool: files.Stat, which shares the file tools' resolution of
// paths, with the rule that refuses reading the object named, and a
// refusal explained.
func init() {
	tool.Handle(tools, tool.StatDef, func(ctx context.Context, a *Host, args tool.StatArgs) (tool.Result, error) {
		return a.explain(files.Stat(ctx, args, a.deniedBy), args.Path, false), nil
	})
}
