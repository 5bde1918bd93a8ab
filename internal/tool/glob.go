package tool

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Glob is the name of the glob tool.
const Glob = "glob"

// Bounds of the glob tool.
const (
	// DefaultGlobLimit is how many matches glob answers by default.
	DefaultGlobLimit = 1000
	// MaxGlobLimit bounds glob's limit.
	MaxGlobLimit = 10000
	// MaxGlobVisits bounds the entries one glob call looks at.
	MaxGlobVisits = 200000
)

// GlobDef defines the glob tool.
var GlobDef = Define[GlobArgs, GlobOutput](Info{Name: Glob, Order: 200, BeyondV3: true,
	Description: "Find files by name pattern under a directory: * and ? match within a path segment, [abc] a character class, ** any number of segments (\"**/*.go\", \"src/**/test_*.py\"). Answers the matching paths, relative to path, in lexical order, at most limit of them (truncated tells when more were left out). Symbolic links are matched but not followed; paths the sandbox's policy refuses to read are marked with denied_by and not descended into.",
	Annotations: Annotations{"Find Files", true, false}}).Runs(glob)

// GlobArgs are the arguments of the glob tool.
type GlobArgs struct {
	Pattern string `json:"pattern" doc:"Pattern of paths relative to path, segments separated by /: * and ? within a segment, [abc] a class, ** any number of segments"`
	Path    string `json:"path,omitempty" doc:"Directory to search under (default: the working directory)"`
	Limit   int    `json:"limit,omitempty" minimum:"0" doc:"Most matches to return (default 1000, at most 10000)"`
}

// GlobMatch is one path glob found.
type GlobMatch struct {
	Path     string `json:"path" doc:"Path relative to the directory searched"`
	Type     string `json:"type" enum:"file,dir,symlink,fifo,socket,char_device,block_device" doc:"Object type (symbolic links are not followed)"`
	DeniedBy string `json:"denied_by,omitempty" required:"false" doc:"The sandbox policy rule that refuses reading it"`
}

// GlobOutput is the structured result of the glob tool.
type GlobOutput struct {
	Path      string      `json:"path" doc:"Absolute path of the directory searched"`
	Matches   []GlobMatch `json:"matches" nullable:"false" doc:"Matching paths, in lexical order"`
	Truncated bool        `json:"truncated" doc:"Whether matches were left out: the limit was reached, or the search looked at its most entries"`
}

// errGlobFull stops a walk that has found or looked at enough.
var errGlobFull = errors.New("glob limit reached")

// glob runs the glob tool: the paths under args.Path that match
// args.Pattern, walked in lexical order without following links.
func glob(ctx context.Context, env Env, args GlobArgs) (Result, error) {
	segs, err := globSegments(args.Pattern)
	if err != nil {
		return Errorf("glob: %s", err), nil
	}
	if args.Limit < 0 {
		return Errorf("glob: limit must be at least 0 (got %d)", args.Limit), nil
	}
	limit := min(args.Limit, MaxGlobLimit)
	if limit == 0 {
		limit = DefaultGlobLimit
	}
	root, abs, real, err := searchRoot(args.Path)
	if err != nil {
		return Errorf("glob: %s: %s", root, ErrorText(err)), nil
	}
	if fi, err := os.Stat(abs); err != nil {
		return Errorf("glob: cannot open directory: %s: %s", root, ErrorText(err)), nil
	} else if !fi.IsDir() {
		return Errorf("glob: cannot open directory: %s: not a directory", root), nil
	}
	out := GlobOutput{Path: abs, Matches: []GlobMatch{}}
	visits := 0
	err = filepath.WalkDir(real, func(p string, d fs.DirEntry, err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if p == real {
			return err // an unreadable root fails the call
		}
		if visits++; visits > MaxGlobVisits {
			out.Truncated = true
			return errGlobFull
		}
		rel, _ := filepath.Rel(real, p)
		rel = filepath.ToSlash(rel)
		parts := strings.Split(rel, "/")
		denied := env.DeniedBy(p)
		if globMatch(segs, parts) {
			if len(out.Matches) == limit {
				out.Truncated = true
				return errGlobFull
			}
			out.Matches = append(out.Matches, GlobMatch{Path: rel, Type: FileType(d.Type()), DeniedBy: denied})
		}
		if d.IsDir() && (err != nil || denied != "" || !globMayMatchBelow(segs, parts)) {
			return fs.SkipDir // unreadable, a placeholder, or nothing below can match
		}
		return nil
	})
	if err != nil && !errors.Is(err, errGlobFull) {
		return Errorf("glob: %s: %s", root, ErrorText(err)), nil
	}
	return StructuredResult(out), nil
}

// searchRoot is the directory or file a search tool looks under: path
// (the working directory when ""), its absolute form, and its real one,
// symbolic links resolved, which the sandbox's rules name.
func searchRoot(path string) (root, abs, real string, err error) {
	root = path
	if root == "" {
		root = "."
	}
	if abs, err = filepath.Abs(root); err != nil {
		return root, "", "", err
	}
	if real, err = filepath.EvalSymlinks(abs); err != nil {
		real = abs
	}
	return root, abs, real, nil
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
