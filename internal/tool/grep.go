package tool

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"unicode/utf8"
)

// Grep is the name of the grep tool.
const Grep = "grep"

// Bounds of the grep tool.
const (
	// DefaultGrepLimit is how many matching lines grep answers by default.
	DefaultGrepLimit = 200
	// MaxGrepLimit bounds grep's limit.
	MaxGrepLimit = 5000
	// MaxGrepVisits bounds the entries one grep call looks at.
	MaxGrepVisits = 200000
	// MaxGrepBytes bounds the bytes one grep call reads.
	MaxGrepBytes = 256 << 20
	// MaxGrepLine is the longest line grep matches; a file with a longer
	// one is skipped.
	MaxGrepLine = 1 << 20
	// MaxGrepText bounds the text of a line in the answer.
	MaxGrepText = 512
)

// GrepDef defines the grep tool.
var GrepDef = Define[GrepArgs, GrepOutput](Info{Name: Grep, Order: 205, BeyondV3: true,
	Description: "Search the contents of files for a regular expression (RE2 syntax, as Go's regexp: no backreferences), line by line. path is a file or a directory searched recursively, optionally only the files whose path relative to it matches glob (\"**/*.go\"). Answers the matching lines in lexical order of path, then line number, at most limit of them (truncated tells when more were left out). Binary files, special files and files with a line over 1 MiB are skipped and counted; symbolic links are not followed; files the sandbox's policy refuses to read are listed in denied with the rule, never read.",
	Annotations: Annotations{"Search File Contents", true, false}}).Runs(grep)

// GrepArgs are the arguments of the grep tool.
type GrepArgs struct {
	Pattern    string `json:"pattern" doc:"Regular expression to find in each line (RE2 syntax)"`
	Path       string `json:"path,omitempty" doc:"File or directory to search (default: the working directory)"`
	Glob       string `json:"glob,omitempty" doc:"Search only the files whose path relative to path matches this pattern, as the glob tool's (\"**/*.go\")"`
	IgnoreCase bool   `json:"ignore_case,omitempty" doc:"Match letters of either case"`
	Limit      int    `json:"limit,omitempty" minimum:"0" doc:"Most matching lines to return (default 200, at most 5000)"`
}

// GrepMatch is one line grep found.
type GrepMatch struct {
	Path string `json:"path" doc:"Path of the file, relative to path (the file's name when path is a file)"`
	Line int    `json:"line" doc:"Line number, from 1"`
	Text string `json:"text" doc:"The line, without its end, cut to 512 bytes"`
}

// GrepDenied is a file or directory grep did not read for the policy.
type GrepDenied struct {
	Path     string `json:"path" doc:"Path relative to path"`
	DeniedBy string `json:"denied_by" doc:"The sandbox policy rule that refuses reading it"`
}

// GrepOutput is the structured result of the grep tool.
type GrepOutput struct {
	Path      string       `json:"path" doc:"Absolute path searched"`
	Matches   []GrepMatch  `json:"matches" nullable:"false" doc:"Matching lines, by path, then line"`
	Files     int          `json:"files" doc:"Files searched"`
	Skipped   int          `json:"skipped" doc:"Files not searched: binary, special, unreadable, or with a line over 1 MiB"`
	Denied    []GrepDenied `json:"denied,omitempty" required:"false" doc:"Paths the policy refuses to read, at most limit of them"`
	Truncated bool         `json:"truncated" doc:"Whether lines were left out: the limit was reached, or the search looked at its most entries or bytes"`
}

// errGrepFull stops a search that has found or read enough.
var errGrepFull = errors.New("grep limit reached")

// grepRun is the state of one grep call.
type grepRun struct {
	re    *regexp.Regexp
	limit int
	read  int64
	out   GrepOutput
}

// grep runs the grep tool: the lines of the regular files under
// args.Path that match args.Pattern, walked in lexical order without
// following links.
func grep(ctx context.Context, env Env, args GrepArgs) (Result, error) {
	if args.Pattern == "" {
		return Errorf("grep: pattern is empty"), nil
	}
	expr := args.Pattern
	if args.IgnoreCase {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return Errorf("grep: pattern %s: %s", args.Pattern, strings.TrimPrefix(err.Error(), "error parsing regexp: ")), nil
	}
	var segs []string
	if args.Glob != "" {
		if segs, err = globSegments(args.Glob); err != nil {
			return Errorf("grep: glob: %s", err), nil
		}
	}
	if args.Limit < 0 {
		return Errorf("grep: limit must be at least 0 (got %d)", args.Limit), nil
	}
	g := &grepRun{re: re, limit: min(args.Limit, MaxGrepLimit)}
	if g.limit == 0 {
		g.limit = DefaultGrepLimit
	}
	root, abs, real, err := searchRoot(args.Path)
	if err != nil {
		return Errorf("grep: %s: %s", root, ErrorText(err)), nil
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return Errorf("grep: %s: %s", root, ErrorText(err)), nil
	}
	g.out = GrepOutput{Path: abs, Matches: []GrepMatch{}}
	if !fi.IsDir() {
		if denied := env.DeniedBy(real); denied != "" {
			return Errorf("grep: %s: reading it is denied by the sandbox policy (%s)", root, denied), nil
		}
		if err := g.file(ctx, real, filepath.Base(abs)); err != nil && !errors.Is(err, errGrepFull) {
			return Errorf("grep: %s: %s", root, ErrorText(err)), nil
		}
		return StructuredResult(g.out), nil
	}
	visits := 0
	err = filepath.WalkDir(real, func(p string, d fs.DirEntry, err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if p == real {
			return err // an unreadable root fails the call
		}
		if visits++; visits > MaxGrepVisits {
			g.out.Truncated = true
			return errGrepFull
		}
		rel, _ := filepath.Rel(real, p)
		rel = filepath.ToSlash(rel)
		if denied := env.DeniedBy(p); denied != "" {
			if len(g.out.Denied) < g.limit {
				g.out.Denied = append(g.out.Denied, GrepDenied{Path: rel, DeniedBy: denied})
			}
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if err != nil || (segs != nil && !globMayMatchBelow(segs, strings.Split(rel, "/"))) {
				return fs.SkipDir // unreadable, or nothing below can match
			}
			return nil
		}
		if segs != nil && !globMatch(segs, strings.Split(rel, "/")) {
			return nil
		}
		if !d.Type().IsRegular() {
			if d.Type()&fs.ModeSymlink == 0 {
				g.out.Skipped++
			}
			return nil
		}
		return g.file(ctx, p, rel)
	})
	if err != nil && !errors.Is(err, errGrepFull) {
		return Errorf("grep: %s: %s", root, ErrorText(err)), nil
	}
	return StructuredResult(g.out), nil
}

// file searches one file, named rel in the answer. A file that is not
// regular once opened (it was replaced), binary or unreadable is skipped.
func (g *grepRun) file(ctx context.Context, p, rel string) error {
	// O_NONBLOCK: a FIFO put in the file's place must not hold the call.
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		g.out.Skipped++
		return nil
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		g.out.Skipped++
		return nil
	}
	var found []GrepMatch
	br := bufio.NewReaderSize(f, 64<<10)
	head, _ := br.Peek(8 << 10)
	if bytes.IndexByte(head, 0) >= 0 {
		g.out.Skipped++
		return nil
	}
	var long []byte
	for line := 1; ; line++ {
		if line%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		text, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer: gather it, up to the bound.
			long = append(long[:0], text...)
			for errors.Is(err, bufio.ErrBufferFull) && len(long) <= MaxGrepLine {
				text, err = br.ReadSlice('\n')
				long = append(long, text...)
			}
			if len(long) > MaxGrepLine {
				g.out.Skipped++
				return nil
			}
			text = long
		}
		if g.read += int64(len(text)); g.read > MaxGrepBytes {
			g.out.Truncated = true
			g.keep(found)
			return errGrepFull
		}
		if len(text) > 0 {
			text = bytes.TrimSuffix(bytes.TrimSuffix(text, []byte("\n")), []byte("\r"))
			if g.re.Match(text) {
				if len(g.out.Matches)+len(found) == g.limit {
					g.out.Truncated = true
					g.keep(found)
					return errGrepFull
				}
				found = append(found, GrepMatch{Path: rel, Line: line, Text: grepText(text)})
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			g.out.Skipped++
			return nil
		}
	}
	g.keep(found)
	return nil
}

// keep adds a searched file's matches to the answer.
func (g *grepRun) keep(found []GrepMatch) {
	g.out.Files++
	g.out.Matches = append(g.out.Matches, found...)
}

// grepText is a line as the answer shows it: cut to MaxGrepText bytes on
// a rune boundary, with invalid UTF-8 replaced.
func grepText(b []byte) string {
	if len(b) > MaxGrepText {
		cut := MaxGrepText
		for cut > 0 && !utf8.RuneStart(b[cut]) {
			cut--
		}
		b = b[:cut]
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}
