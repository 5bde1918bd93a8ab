package filetype

import (
	"bytes"
	"errors"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// slowDetect is Detect without the fast path: always mimetype's tree walk.
func slowDetect(head []byte, size int64) Type {
	t, _ := detectFast(head, size, false)
	return t
}

// fastTaken reports whether Detect answers head by its fast path.
func fastTaken(head []byte) bool {
	_, byFast := detectFast(head, int64(len(head)), true)
	return byFast
}

// textSeeds are heads that reach each of mimetype's text detectors, and
// clean heads that start like a binary format.
var textSeeds = []string{
	"hello\n",
	"\ufeffhello\n",
	"<svg xmlns=\"http://www.w3.org/2000/svg\"></svg>",
	"<!-- c --><svg width=\"1\" xmlns=\"http://www.w3.org/2000/svg\"/>",
	"<?xml version=\"1.0\"?>\n<svg></svg>\n",
	"<!DOCTYPE html>\n<html><body>hi</body></html>\n",
	"  <p>para</p>\n",
	"\ufeff<html>\n",
	"<b>bold</b> and <svg>\n",
	"<?xml version=\"1.0\"?>\n<project><modelVersion>4</modelVersion></project>\n",
	"<?xml version=\"1.0\"?>\n<rss version=\"2.0\"></rss>\n",
	"<?xml version=\"1.0\"?>\n<feed xmlns=\"http://www.w3.org/2005/Atom\"></feed>\n",
	"<?xml version=\"1.0\"?>\n<x xmlns:gml=\"http://www.opengis.net/gml\"/>\n",
	"<?xml version=\"1.0\"?>\n<!DOCTYPE  html>\n<html/>\n",
	"<?xml version=\"1.0\"?>\n<html   xmlns=\"http://www.w3.org/1999/xhtml\"/>\n",
	"<?xml version=\"1.0\"?>\n<!-- a comment -->\n<a/>\n",
	"<?php echo 1; ?>\n",
	"<? echo 1; ?>\n",
	"#!/usr/bin/php\n<?php\n",
	"#!/usr/bin/env  node\nconsole.log(1)\n",
	"#!/usr/bin/lua\nprint(1)\n",
	"#!/usr/bin/lua5.1\nprint(1)\n",
	"#! /usr/bin/perl -w\nprint 1;\n",
	"#!/usr/bin/env python3\nprint(1)\n",
	"#!/usr/local/bin/ruby\nputs 1\n",
	"#!/usr/bin/tclsh\nputs 1\n",
	"#!/bin/sh\necho hi\n",
	"#!/bin/bash -e\r\necho hi\r\n",
	"#!/bin/shx\necho hi\n",
	"#!/bin/sh\na,b\nc,d\ne,f\n",
	"{\"a\": 1}\n",
	"[1, 2, 3]\n",
	"{\"a\": 1,\n\"b\": 2,\n\"c\": 3}\n",
	"{\"type\": \"Feature\"}",
	"{\"a\":1}\n{\"a\":2}\n",
	"1\n2\n[3]\n",
	"\n\n{\"a\":1}\n[]\n",
	"{\\rtf1\\ansi hi}\n",
	"1\n00:00:01,000 --> 00:00:02,000\nHello\n",
	"a,b,c\n1,2,3\n4,5,6\n",
	"\"a\",\"b\"\n\"1\",\"2\"\n",
	"\"multi\nline\",b\n1,2\n",
	"# comment\na,b\n1,2\n",
	"a\tb\tc\n1\t2\t3\n",
	"a,b\r\n1,2\r\n",
	"BEGIN:VCARD\nVERSION:3.0\nEND:VCARD\n",
	"begin:vcalendar\r\nEND:VCALENDAR\r\n",
	"WARC/1.0\r\nWARC-Type: warcinfo\r\n",
	"WEBVTT\n\n00:01.000 --> 00:02.000\nhi\n",
	"\ufeffWEBVTT",
	"P1\n2 2\n0 1\n1 0\n",
	"P7\nWIDTH 1\nHEIGHT 1\nDEPTH 1\nMAXVAL 1\nENDHDR\n",
	"From: a@b\nTo: c@d\nSubject: x\n\nbody\n",
	"message-id: <x>\ndate: y\n",
	"0 HEAD\n1 GEDC\n2 VERS 5.5\n",
	"\ufeff  0 HEAD\n1 GEDC\n",
	"%PDF-1.4\n",
	"see %PDF-1.4 inside\n",
	"/* XPM */ then %PDF-1.4\n",
	"%!PS-Adobe-3.0\n",
	"% a LaTeX comment\n",
	"MZ is text\n",
	"ID3 tags\n",
	"x^ compressed\b\n",
	"xml\vvertical tab\n",
	"\ufeffBOM and\bbackspace\n",
	"BM and 0123456789012345 more\n",
	"II*",
	"#!AMR\n",
	"#EXTM3U\n#EXTINF:1,x\n",
	"  0\nSECTION\n",
	"ab\r\ncd\r\n",
	"caf\xe9 cr\xe8me\n",
	"\xff\xfbLatin-1 y-umlaut first\n",
	"x\xb5\x2f\xfd zstd-like\n",
	"    jP  \r\n",
}

// corpusFile is one file of the differential corpus.
type corpusFile struct {
	path string
	head []byte
	size int64
}

// readCorpus returns the head and size of every regular file under the
// given directories.
func readCorpus(t testing.TB, dirs ...string) []corpusFile {
	t.Helper()
	var files []corpusFile
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrPermission) {
					return nil
				}
				return err
			}
			if d.IsDir() && d.Name() == ".git" {
				return filepath.SkipDir
			}
			if !d.Type().IsRegular() {
				return nil
			}
			f, err := os.Open(path)
			if err != nil {
				if errors.Is(err, fs.ErrPermission) {
					return nil
				}
				return err
			}
			defer f.Close()
			info, err := f.Stat()
			if err != nil {
				return err
			}
			head := make([]byte, HeadSize)
			n, err := io.ReadFull(f, head)
			if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
				return err
			}
			files = append(files, corpusFile{path, head[:n], info.Size()})
			return nil
		})
		if err != nil {
			t.Fatalf("walk %s: %v", dir, err)
		}
	}
	return files
}

// corpusDirs returns the repository, GOROOT and, if set, the fixture
// directory.
func corpusDirs(t testing.TB) []string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatalf("go env GOROOT: %v", err)
	}
	dirs := []string{filepath.Join("..", "..", ".."), strings.TrimSpace(string(out))}
	if dir := os.Getenv(fixtureEnv); dir != "" {
		dirs = append(dirs, dir)
	}
	return dirs
}

// cutLengths are the lengths heads are cut at: around the offsets and
// windows the detectors use (tar's 512-byte header, the 1 KiB PDF and
// XHTML windows, the 2 KiB MP3 search, mimetype's 4 KiB limit, HeadSize).
var cutLengths = func() []int {
	var l []int
	for n := 1; n <= 24; n++ {
		l = append(l, n)
	}
	for _, at := range []int{64, 132, 156, 512, 1024, 2052, mimeLimit, HeadSize} {
		for n := at - 8; n <= at+8 && n <= HeadSize; n++ {
			l = append(l, n)
		}
	}
	return l
}()

// checkSame compares Detect with the full walk on head for a file of the
// given size.
func checkSame(t *testing.T, what string, head []byte, size int64) {
	t.Helper()
	got, want := Detect(head, size), slowDetect(head, size)
	if got != want {
		t.Errorf("%s (%d bytes, size %d, head %q): Detect = %+v, full walk = %+v", what, len(head), size, truncate(head), got, want)
	}
}

// TestFastPathMatchesWalk compares Detect with the full tree walk on every
// file of the repository, GOROOT and $BOXSH_FIXTURES: the whole head with
// the file's size, with an unknown size, and cut at lengths around the
// detectors' offsets with the file's size larger than the cut head.
func TestFastPathMatchesWalk(t *testing.T) {
	files := readCorpus(t, corpusDirs(t)...)
	fast, goFiles, goFast := 0, 0, 0
	for _, f := range files {
		checkSame(t, f.path, f.head, f.size)
		checkSame(t, f.path, f.head, 0)
		taken := fastTaken(f.head)
		if taken {
			fast++
		}
		if strings.HasSuffix(f.path, ".go") {
			goFiles++
			if taken {
				goFast++
			}
		}
		// Each file is cut at a few of the lengths, chosen by its path
		// so that every length is covered across the corpus.
		h := fnv.New32a()
		h.Write([]byte(f.path))
		seed := int(h.Sum32())
		for i := range 6 {
			n := cutLengths[(seed+i*97)%len(cutLengths)]
			if n < len(f.head) {
				checkSame(t, f.path, f.head[:n], f.size)
			}
		}
	}
	t.Logf("%d files, %d answered by the fast path; %d of %d Go sources", len(files), fast, goFast, goFiles)
	if len(files) < 1000 {
		t.Errorf("corpus of %d files, want the repository and GOROOT", len(files))
	}
	// The fast path must serve the common case it is for.
	if goFast*10 < goFiles*9 {
		t.Errorf("fast path answered %d of %d Go sources, want 90%%", goFast, goFiles)
	}
}

// TestFastPathCuts compares Detect with the full walk on the text seeds
// and some repository files cut at every length up to HeadSize near the
// detectors' offsets, and on the seeds behind each prefix the fast path
// checks.
func TestFastPathCuts(t *testing.T) {
	var heads [][]byte
	for _, s := range textSeeds {
		heads = append(heads, []byte(s))
	}
	for _, b := range benchHeads {
		heads = append(heads, []byte(b.head))
	}
	for _, h := range heads {
		for n := 0; n <= len(h); n++ {
			checkSame(t, "seed", h[:n], int64(len(h)))
		}
		// Padded to reach every offset and window.
		long := bytes.Repeat(h, HeadSize/max(len(h), 1)+1)
		for _, n := range cutLengths {
			if n <= len(long) {
				checkSame(t, "repeated seed", long[:n], int64(len(long)))
			}
		}
	}
	// Every prefix the fast path knows, followed by text.
	for _, ps := range tables().rootPrefixes {
		for _, p := range ps {
			for _, tail := range []string{"", " text\n", "\n#!/bin/sh\n", ",a\n1,2\n3,4\n"} {
				checkSame(t, "prefix", []byte(p+tail), int64(len(p+tail)))
			}
		}
	}
}

// TestFastPathTaken checks that the fast path answers the common kinds of
// small text files.
func TestFastPathTaken(t *testing.T) {
	for _, b := range benchHeads {
		if b.head == "" {
			continue
		}
		if !fastTaken([]byte(b.head)) {
			t.Errorf("%s: fast path not taken", b.name)
		}
	}
}

// TestMimetypeVersion pins the mimetype release whose detectors fast.go and
// fasttext.go copy and bound. On an upgrade, compare them with its tree.go
// and internal/magic before changing this version: a new or changed
// detector can make the fast path wrong on heads no test holds.
func TestMimetypeVersion(t *testing.T) {
	mod, err := os.ReadFile(filepath.Join("..", "..", "..", "go.mod"))
	if err != nil {
		t.Fatalf("read go.mod: %v", err)
	}
	for _, line := range strings.Split(string(mod), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "github.com/gabriel-vasile/mimetype" {
			if f[1] != "v1.4.16" {
				t.Errorf("go.mod requires mimetype %s, the fast path is written for v1.4.16", f[1])
			}
			return
		}
	}
	t.Error("go.mod does not require mimetype")
}
