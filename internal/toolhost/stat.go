package toolhost

import (
	"context"

	"github.com/boxsh/boxsh/internal/tool"
	"github.com/boxsh/boxsh/internal/toolhost/files"
)

// init registers the handler of the stat tool. It is files.Stat, which
// shares the file tools' resolution of paths. It names the rule that
// refuses reading the object, and explains a refusal.
func init() {
	tool.Handle(tools, tool.StatDef, func(ctx context.Context, a *Host, args tool.StatArgs) (tool.Result, error) {
		return a.explain(files.Stat(ctx, args, a.DeniedBy), args.Path, false), nil
	})
}
