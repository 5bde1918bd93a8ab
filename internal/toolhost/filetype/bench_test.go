package filetype

import (
	"strings"
	"testing"
)

// benchHeads are typical small files the read tool is asked for, about
// 1 KiB each.
var benchHeads = []struct {
	name string
	head string
}{
	{"empty", ""},
	{"go", strings.Repeat("// Package x does things.\npackage x\n\nimport \"fmt\"\n\nfunc F(a, b int) int {\n\tif a > b {\n\t\treturn a - b\n\t}\n\tfmt.Println(\"hello, world\")\n\treturn b\n}\n\n", 8)},
	{"json", `{"name": "boxsh", "version": "3.0.0", "dependencies": {"a": "^1.0.0", "b": "~2.1"}, "list": [1, 2, 3, true, null, "x"],` + strings.Repeat(` "key": {"nested": [1.5e3, -2, "value with spaces"]},`, 16) + ` "end": 0}` + "\n"},
	{"markdown", "# Title\n\nSome *text* with `code` and a [link](https://example.com).\n\n" + strings.Repeat("- an item of a list, with words\n", 12) + "\n```sh\njust build\n```\n\n" + strings.Repeat("A paragraph of prose that goes on for a while, as prose does.\n", 8)},
	{"yaml", strings.Repeat("service:\n  name: web\n  image: nginx:1.25\n  ports:\n    - \"8080:80\"\n  env:\n    LEVEL: debug # comment\n", 8)},
	{"log", strings.Repeat("2026-12-04T01:16:48.123Z INFO  server: accepted connection from 10.0.0.1:5123 id=42\n", 12)},
	{"csv", "id,name,email,score\n" + strings.Repeat("1,Alice,alice@example.com,93.5\n2,Bob,bob@example.com,71\n", 16)},
	{"html", "<!DOCTYPE html>\n<html lang=\"en\">\n<head><meta charset=\"utf-8\"><title>x</title></head>\n<body>\n" + strings.Repeat("<p>Some <b>bold</b> text and <a href=\"/x\">a link</a>.</p>\n", 16) + "</body>\n</html>\n"},
	{"xml", "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<project>\n" + strings.Repeat("  <dependency><groupId>org.example</groupId><version>1.0</version></dependency>\n", 12) + "</project>\n"},
	{"shell", "#!/bin/sh\nset -eu\n" + strings.Repeat("if [ -f \"$x\" ]; then\n\techo \"found $x\" >&2\nfi\n", 20)},
	{"python", "#!/usr/bin/env python3\nimport sys\n\n" + strings.Repeat("def f(x):\n    return x * 2  # double\n\n", 24)},
}

func BenchmarkDetect(b *testing.B) {
	for _, h := range benchHeads {
		head := []byte(h.head)
		b.Run(h.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Detect(head, int64(len(head)))
			}
		})
	}
}

// BenchmarkDetectWalk is BenchmarkDetect without the fast path.
func BenchmarkDetectWalk(b *testing.B) {
	for _, h := range benchHeads {
		head := []byte(h.head)
		b.Run(h.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				slowDetect(head, int64(len(head)))
			}
		})
	}
}
