package tool

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAppendQuotedMatchesEncodingJSON(t *testing.T) {
	cases := []string{
		"", "plain", "quote \" and \\ backslash", "tab\tnl\ncr\r", "\x00\x01\x1f\x7f",
		"héllo wörld ✓ 😀", "bad \xff\xfe utf8 \xc3", "line sep \u2028 para \u2029",
		"<html>&amp;</html>", strings.Repeat("A", 100000) + "\n",
	}
	for _, s := range cases {
		got := AppendQuoted(nil, s)
		require.True(t, json.Valid(got), "invalid JSON for %q: %s", s, got)
		var back string
		require.NoError(t, json.Unmarshal(got, &back))
		want, _ := json.Marshal(s)
		var wantBack string
		require.NoError(t, json.Unmarshal(want, &wantBack))
		assert.Equal(t, wantBack, back, "round trip of %q", s)
	}
}

func TestBashOutputJSONMatchesEncodingJSON(t *testing.T) {
	for _, o := range []BashOutput{
		{ExitCode: 0, Stdout: "x\n", DurationMS: 3},
		{ExitCode: 137, Stderr: "killed\xff", Signal: "SIGKILL", StdoutTruncated: true, StderrTruncated: true, DurationMS: 10},
		{ExitCode: -1, Stderr: "timeout"},
		{ExitCode: 7, NetworkRefusals: []NetworkRefusal{{Host: "a.example", Port: 443, Reason: "not in the allowlist", Allow: "--allow-domain a.example"}, {Host: "\"x\"", Port: 80, Reason: "not a valid host name", Count: 2}}},
	} {
		got := o.AppendJSON(nil)
		want, err := json.Marshal(o)
		require.NoError(t, err)
		assert.JSONEq(t, string(want), string(got))
	}
}

func TestEncodeStructured(t *testing.T) {
	sc := BashOutput{ExitCode: 2, Stdout: "a\"b", Stderr: "e"}.AppendJSON(nil)
	b := EncodeStructured(sc, true)
	var r struct {
		Content []struct {
			Type, Text string
		}
		StructuredContent BashOutput
		IsError           bool
	}
	require.NoError(t, json.Unmarshal(b, &r))
	assert.True(t, r.IsError)
	require.Len(t, r.Content, 1)
	assert.Equal(t, "text", r.Content[0].Type)
	assert.JSONEq(t, string(sc), r.Content[0].Text)
	assert.Equal(t, "a\"b", r.StructuredContent.Stdout)

	b = EncodeStructured(sc, false)
	assert.NotContains(t, string(b), "isError")
}

func BenchmarkEncodeBash8MB(b *testing.B) {
	o := BashOutput{Stdout: strings.Repeat("A", 8<<20)}
	b.SetBytes(8 << 20)
	for i := 0; i < b.N; i++ {
		_ = EncodeStructured(o.AppendJSON(nil), false)
	}
}

func BenchmarkEncodingJSONBash8MB(b *testing.B) {
	o := BashOutput{Stdout: strings.Repeat("A", 8<<20)}
	b.SetBytes(8 << 20)
	for i := 0; i < b.N; i++ {
		r := StructuredResult(o)
		if _, err := json.Marshal(r); err != nil {
			b.Fatal(err)
		}
	}
}
