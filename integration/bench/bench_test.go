package main

import (
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	var s sample
	for i := 100; i >= 1; i-- {
		s = append(s, time.Duration(i))
	}
	for p, want := range map[float64]time.Duration{50: 50, 90: 90, 99: 99, 100: 100, 0.1: 1} {
		if got := s.percentile(p); got != want {
			t.Errorf("percentile(%v) = %v, want %v", p, got, want)
		}
	}
	if got := (sample{}).median(); got != 0 {
		t.Errorf("median of empty sample = %v, want 0", got)
	}
}

func TestParseStat(t *testing.T) {
	st, ok := parseStat([]byte("42 (a) b (c)) S 7 9 9 0 -1"))
	if !ok || st.Comm != "a) b (c)" || st.State != 'S' || st.PPID != 7 || st.PGRP != 9 {
		t.Errorf("parseStat = %+v, %v", st, ok)
	}
	if _, ok := parseStat([]byte("garbage")); ok {
		t.Error("parseStat accepted garbage")
	}
}

func TestProcessTreeOfSelf(t *testing.T) {
	tree, err := processTree(os.Getpid())
	if err != nil || len(tree) == 0 || tree[0] != os.Getpid() {
		t.Fatalf("processTree = %v, %v", tree, err)
	}
	m, err := measureTree(os.Getpid())
	if err != nil || m.RSSKiB <= 0 {
		t.Fatalf("measureTree = %+v, %v", m, err)
	}
}

func TestSmallText(t *testing.T) {
	text := smallText(smallFileBytes)
	if len(text) != smallFileBytes || strings.Count(text, "\n") != smallFileBytes/64 {
		t.Errorf("smallText: %d bytes, %d lines", len(text), strings.Count(text, "\n"))
	}
}

func TestAnswerID(t *testing.T) {
	for line, want := range map[string]int{`{"jsonrpc":"2.0","id":7,"result":{}}`: 7, `{"id":"7"}`: -1, `{"method":"x"}`: -1} {
		id, ok := answerID([]byte(line))
		if (want >= 0) != ok || (ok && id != want) {
			t.Errorf("answerID(%s) = %d, %v", line, id, ok)
		}
	}
}

func TestCheckBatch(t *testing.T) {
	ok := func(id string) []byte {
		return []byte(`{"id":` + id + `,"result":{"structuredContent":{"exit_code":0,"stdout":"","stderr":""}}}`)
	}
	var ty tally
	if n := checkBatch([][]byte{ok("3"), ok("2")}, 2, &ty); n != 2 || ty.failed != 0 {
		t.Errorf("good batch: %d distinct, %d failed (%v)", n, ty.failed, ty.first)
	}
	ty = tally{}
	if n := checkBatch([][]byte{ok("2"), ok("2")}, 2, &ty); n != 1 || ty.failed != 1 {
		t.Errorf("duplicate id: %d distinct, %d failed", n, ty.failed)
	}
}

func TestLineReader(t *testing.T) {
	long := strings.Repeat("A", 3*initialLineBuffer+17)
	lr := newLineReader(strings.NewReader("a\r\n" + long + "\n\nlast"))
	for _, want := range []string{"a", long, "", "last"} {
		got, err := lr.next()
		if err != nil || string(got) != want {
			t.Fatalf("next = %.20q (%d bytes), %v; want %.20q (%d bytes)", got, len(got), err, want, len(want))
		}
	}
	if _, err := lr.next(); !errors.Is(err, io.EOF) {
		t.Errorf("after the last line: %v, want io.EOF", err)
	}
}
