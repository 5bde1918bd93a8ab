package files

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/boxsh/boxsh/internal/tool"
)

const utf8BOM = "\xef\xbb\xbf"

// Edit runs the edit tool. Either all edits apply or none.
//
// Every oldText must match exactly one place of the original file: exactly, or
// else ignoring trailing blanks on each line. The places must not overlap. A
// UTF-8 BOM and CRLF line endings are kept.
func Edit(ctx context.Context, args tool.EditArgs) tool.Result {
	path, fi, err := resolve(args.Path)
	if err != nil {
		return tool.Errorf("edit: cannot open file: %s: %s", args.Path, tool.ErrorText(err))
	}
	if fi.IsDir() {
		return tool.Errorf("edit: cannot open file: %s: is a directory", args.Path)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return tool.Errorf("edit: cannot open file: %s: %s", args.Path, tool.ErrorText(err))
	}
	content := string(raw)
	hasBOM := strings.HasPrefix(content, utf8BOM)
	content = strings.TrimPrefix(content, utf8BOM)
	hasCRLF := strings.Contains(content, "\r\n")
	if hasCRLF {
		content = strings.ReplaceAll(content, "\r\n", "\n")
	}
	original := content

	updated, err := applyEdits(content, args.Edits, hasCRLF)
	if err != nil {
		return tool.Errorf("edit: %v", err)
	}
	if err := ctx.Err(); err != nil {
		return tool.Errorf("edit: %s: %v", args.Path, err)
	}
	out := updated
	if hasCRLF {
		out = strings.ReplaceAll(out, "\n", "\r\n")
	}
	if hasBOM {
		out = utf8BOM + out
	}
	if err := replaceFile(ctx, path, []byte(out), false); err != nil {
		return tool.Errorf("edit: cannot write file: %s: %s", args.Path, tool.ErrorText(err))
	}
	return editResult(path, original, updated)
}

type match struct {
	pos, end int
	newText  string
}

// applyEdits finds every edit in content (all against the original text)
// and applies them together.
func applyEdits(content string, edits []tool.Edit, crlf bool) (string, error) {
	if len(edits) == 0 {
		return "", fmt.Errorf("no edits given")
	}
	var stripped string
	var posMap []int
	matches := make([]match, 0, len(edits))
	for i, e := range edits {
		old, repl := e.OldText, e.NewText
		if crlf {
			old = strings.ReplaceAll(old, "\r\n", "\n")
			repl = strings.ReplaceAll(repl, "\r\n", "\n")
		}
		if old == "" {
			return "", fmt.Errorf("oldText must not be empty (edit %d)", i+1)
		}
		if pos := strings.Index(content, old); pos >= 0 {
			if strings.Contains(content[pos+1:], old) {
				return "", fmt.Errorf("oldText is not unique in file: %s", preview(e.OldText))
			}
			matches = append(matches, match{pos, pos + len(old), repl})
			continue
		}
		// Fuzzy: ignore trailing blanks at the end of every line.
		if posMap == nil {
			stripped, posMap = stripTrailingBlanks(content)
		}
		sold, _ := stripTrailingBlanks(old)
		spos := strings.Index(stripped, sold)
		if spos < 0 || sold == "" {
			return "", fmt.Errorf("oldText not found in file: %s", preview(e.OldText))
		}
		if strings.Contains(stripped[spos+1:], sold) {
			return "", fmt.Errorf("oldText is not unique in file: %s", preview(e.OldText))
		}
		matches = append(matches, match{posMap[spos], posMap[spos+len(sold)], repl})
	}
	sort.Slice(matches, func(i, j int) bool { return matches[i].pos < matches[j].pos })
	for i := 1; i < len(matches); i++ {
		if matches[i].pos < matches[i-1].end {
			return "", fmt.Errorf("overlapping edits are not allowed")
		}
	}
	var b strings.Builder
	b.Grow(len(content))
	last := 0
	for _, m := range matches {
		b.WriteString(content[last:m.pos])
		b.WriteString(m.newText)
		last = m.end
	}
	b.WriteString(content[last:])
	return b.String(), nil
}

// stripTrailingBlanks removes spaces and tabs before each newline and at the
// end. posMap[i] is the offset in s of byte i of the result, plus one entry
// for the end of the text. A stripped newline maps to the original newline,
// so a match that ends at a line end also covers that line's blanks.
func stripTrailingBlanks(s string) (string, []int) {
	var b strings.Builder
	b.Grow(len(s))
	posMap := make([]int, 0, len(s)+1)
	lineStart := 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) && s[i] != '\n' {
			continue
		}
		end := i
		for end > lineStart && (s[end-1] == ' ' || s[end-1] == '\t') {
			end--
		}
		for k := lineStart; k < end; k++ {
			b.WriteByte(s[k])
			posMap = append(posMap, k)
		}
		if i < len(s) {
			b.WriteByte('\n')
			posMap = append(posMap, i)
		}
		lineStart = i + 1
	}
	// The end of the stripped text maps to the end of the last kept byte's
	// line content.
	if n := len(posMap); n > 0 {
		posMap = append(posMap, posMap[n-1]+1)
	} else {
		posMap = append(posMap, 0)
	}
	return b.String(), posMap
}

func preview(s string) string {
	const n = 40
	if len(s) > n {
		return s[:n]
	}
	return s
}

// editResult reports the change as a unified diff.
func editResult(path, before, after string) tool.Result {
	first := 0
	if before != after {
		bl := strings.SplitAfter(before, "\n")
		al := strings.SplitAfter(after, "\n")
		i := 0
		for i < len(bl) && i < len(al) && bl[i] == al[i] {
			i++
		}
		first = i + 1
	}
	diff := udiff.Unified("a/"+strings.TrimPrefix(path, "/"), "b/"+strings.TrimPrefix(path, "/"), before, after)
	if diff == "" {
		diff = fmt.Sprintf("--- a/%s\n+++ b/%s\n", strings.TrimPrefix(path, "/"), strings.TrimPrefix(path, "/"))
	}
	r := tool.TextResult(fmt.Sprintf("Edited %s\n%s", path, diff))
	r.StructuredContent = tool.EditOutput{Diff: diff, FirstChangedLine: first}
	return r
}
