package toolhost

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/boxsh/boxsh/internal/tool"
	"github.com/boxsh/boxsh/internal/toolhost/files"
)

// init registers the handler of the glob tool.
func init() {
	tool.Handle(tools, tool.GlobDef, func(ctx context.Context, a *Host, args tool.GlobArgs) (tool.Result, error) {
		return glob(ctx, args, a.deniedBy), nil
	})
}

// errGlobFull stops a walk that has found or looked at enough.
var errGlobFull = errors.New("glob limit reached")

// glob runs the glob tool: the paths under args.Path that match
// args.Pattern, walked in lexical order without following links.
func glob(ctx context.Context, args tool.GlobArgs, deniedBy files.DeniedBy) tool.Result {
	segs, err := globSegments(args.Pattern)
	if err != nil {
		return tool.Errorf("glob: %s", err)
	}
	if args.Limit < 0 {
		return tool.Errorf("glob: limit must be at least 0 (got %d)", args.Limit)
	}
	limit := min(args.Limit, tool.MaxGlobLimit)
	if limit == 0 {
		limit = tool.DefaultGlobLimit
	}
	root := args.Path
	if root == "" {
		root = "."
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return tool.Errorf("glob: %s: %s", root, tool.ErrorText(err))
	}
	if fi, err := os.Stat(abs); err != nil {
		return tool.Errorf("glob: cannot open directory: %s: %s", root, tool.ErrorText(err))
	} else if !fi.IsDir() {
		return tool.Errorf("glob: cannot open directory: %s: not a directory", root)
	}
	// Rules name real paths: match them against the directory's.
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		real = abs
	}
	out := tool.GlobOutput{Path: abs, Matches: []tool.GlobMatch{}}
	visits := 0
	err = filepath.WalkDir(real, func(p string, d fs.DirEntry, err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if p == real {
			return err // an unreadable root fails the call
		}
		if visits++; visits > tool.MaxGlobVisits {
			out.Truncated = true
			return errGlobFull
		}
		rel, _ := filepath.Rel(real, p)
		rel = filepath.ToSlash(rel)
		parts := strings.Split(rel, "/")
		denied := deniedBy(p)
		if globMatch(segs, parts) {
			if len(out.Matches) == limit {
				out.Truncated = true
				return errGlobFull
			}
			out.Matches = append(out.Matches, tool.GlobMatch{Path: rel, Type: files.FileType(d.Type()), DeniedBy: denied})
		}
		if d.IsDir() && (err != nil || denied != "" || !globMayMatchBelow(segs, parts)) {
			return fs.SkipDir // unreadable, a placeholder, or nothing below can match
		}
		return nil
	})
	if err != nil && !errors.Is(err, errGlobFull) {
		return tool.Errorf("glob: %s: %s", root, tool.ErrorText(err))
	}
	return tool.StructuredResult(out)
}

// globSegments splits and checks a pattern.
func globSegments(pattern string) ([]string, error) {
	if pattern == "" {
		return nil, errors.New("pattern is empty")
	}
	if strings.HasPrefix(pattern, "/") {
		return nil, errors.New("pattern " + pattern + " is absolute: give the directory as path and the pattern relative to it")
	}
	var segs []string
	for _, s := range strings.Split(pattern, "/") {
		switch s {
		case "", ".":
			continue
		case "..":
			return nil, errors.New("pattern " + pattern + " has a .. segment: give the directory as path")
		}
		if s != "**" {
			if _, err := path.Match(s, ""); err != nil {
				return nil, errors.New("pattern " + pattern + ": segment " + s + ": " + err.Error())
			}
		}
		segs = append(segs, s)
	}
	if len(segs) == 0 {
		return nil, errors.New("pattern " + pattern + " names no path")
	}
	return segs, nil
}

// globMatch reports whether the path parts match the pattern's segments.
func globMatch(segs, parts []string) bool {
	for len(segs) > 0 {
		if segs[0] == "**" {
			// ** takes any number of parts, none included.
			for i := 0; i <= len(parts); i++ {
				if globMatch(segs[1:], parts[i:]) {
					return true
				}
			}
			return false
		}
		if len(parts) == 0 {
			return false
		}
		if ok, _ := path.Match(segs[0], parts[0]); !ok {
			return false
		}
		segs, parts = segs[1:], parts[1:]
	}
	return len(parts) == 0
}

// globMayMatchBelow reports whether a path below the directory dir (its
// parts) could match the pattern's segments.
func globMayMatchBelow(segs, dir []string) bool {
	for i, p := range dir {
		if i >= len(segs) {
			return false
		}
		if segs[i] == "**" {
			return true
		}
		if ok, _ := path.Match(segs[i], p); !ok {
			return false
		}
	}
	return len(segs) > len(dir)
}
