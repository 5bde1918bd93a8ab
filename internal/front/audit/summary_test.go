package audit

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/initproto"
	"github.com/boxsh/boxsh/internal/tool"
)

// summary is Summarize's result as JSON.
func summary(t *testing.T, args string) string {
	t.Helper()
	require.True(t, json.Valid([]byte(args)), args)
	b, err := json.Marshal(Summarize(json.RawMessage(args)))
	require.NoError(t, err)
	return string(b)
}

func TestSummarizeKeepsNoContents(t *testing.T) {
	for args, want := range map[string]string{
		`{"command":"make test","cwd":"/src","timeout":30,"background":true,"env":{"TOKEN":"s3cret","A":"x"},"stdin":"password\n"}`: `{"background":true,"command":"make test","cwd":"/src","env":["A","TOKEN"],"sizes":{"stdin":12},"timeout":30}`,
		`{"args":["git","commit","-m","msg"]}`:                                  `{"args":["git","commit","-m","msg"]}`,
		`{"path":"/etc/passwd","content":"secret file body","encoding":"utf8"}`: `{"encoding":"utf8","path":"/etc/passwd","sizes":{"content":18}}`,
		`{"path":"a.go","edits":[{"oldText":"private","newText":"public"}]}`:    `{"path":"a.go","sizes":{"edits":42}}`,
		`{"id":"t1","command":"ls\n"}`:                                          `{"command":"ls\n","id":"t1"}`,
		`{"command":"bash","explanation":"why","goal":"what","cols":80}`:        `{"cols":80,"command":"bash","sizes":{"explanation":5,"goal":6}}`,
		`{"port":8000,"host_port":0}`:                                           `{"host_port":0,"port":8000}`,
		`{}`:                                                                    `{}`,
	} {
		got := summary(t, args)
		assert.JSONEq(t, want, got, args)
		for _, secret := range []string{"s3cret", "password", "secret file body", "private"} {
			assert.NotContains(t, got, secret)
		}
	}
}

func TestSummarizeCutsLongStrings(t *testing.T) {
	long := strings.Repeat("é", 3000) // 6000 bytes
	var s map[string]any
	require.NoError(t, json.Unmarshal([]byte(summary(t, `{"command":"`+long+`"}`)), &s))
	cmd := s["command"].(string)
	assert.LessOrEqual(t, len(cmd), maxString)
	assert.True(t, strings.HasPrefix(long, cmd), "a prefix, cut between characters")
	assert.EqualValues(t, 6000, s["command_bytes"])

	argv := make([]string, 100)
	for i := range argv {
		argv[i] = strings.Repeat("a", 2000)
	}
	b, _ := json.Marshal(map[string]any{"args": argv})
	require.NoError(t, json.Unmarshal([]byte(summary(t, string(b))), &s))
	assert.Len(t, s["args"], maxArgv)
	assert.Len(t, s["args"].([]any)[0], maxArgString)
	assert.EqualValues(t, 100, s["args_count"])
}

func TestOutcome(t *testing.T) {
	enc := func(o tool.BashOutput) []byte {
		return tool.EncodeStructured(o.AppendJSON(nil), o.ExitCode != 0)
	}
	var e Entry
	Outcome(&e, tool.Bash, enc(tool.BashOutput{ExitCode: 3, Stdout: `{"exit_code":0}`}))
	require.NotNil(t, e.ExitCode)
	assert.Equal(t, 3, *e.ExitCode)
	assert.True(t, e.IsError)
	assert.False(t, e.TimedOut)

	e = Entry{}
	Outcome(&e, tool.Bash, enc(tool.BashOutput{ExitCode: -1, Stderr: "timeout"}))
	assert.Equal(t, -1, *e.ExitCode)
	assert.True(t, e.TimedOut)

	e = Entry{}
	res, _ := json.Marshal(tool.Errorf("read: no such file"))
	Outcome(&e, tool.Read, res)
	assert.Nil(t, e.ExitCode)
	assert.True(t, e.IsError)
	assert.EqualValues(t, len(res), e.OutputBytes)
}

// starterFunc is a Starter.
type starterFunc func(ctx context.Context, name string, args json.RawMessage, done func(json.RawMessage, error)) error

func (f starterFunc) Start(ctx context.Context, name string, args json.RawMessage, done func(json.RawMessage, error)) error {
	return f(ctx, name, args, done)
}

type clientKey struct{}

func TestBackendRecordsCalls(t *testing.T) {
	l, err := Open(filepath.Join(t.TempDir(), "audit.jsonl"))
	require.NoError(t, err)
	defer l.Close()
	next := starterFunc(func(ctx context.Context, name string, args json.RawMessage, done func(json.RawMessage, error)) error {
		switch name {
		case "fails":
			return errors.New("boxsh-init is gone")
		case "invalid":
			go done(nil, &initproto.Error{Code: initproto.CodeInvalidParams, Message: "bad path"})
		case "slow":
			go func() { <-ctx.Done(); done(nil, ctx.Err()) }()
		default:
			b, _ := json.Marshal(tool.TextResult("ok"))
			go done(b, nil)
		}
		return nil
	})
	b := &Backend{Next: next, Log: l, Sandbox: "web", Client: func(ctx context.Context) string { s, _ := ctx.Value(clientKey{}).(string); return s }}
	call := func(ctx context.Context, name, args string) (json.RawMessage, error) {
		type reply struct {
			res json.RawMessage
			err error
		}
		ch := make(chan reply, 1)
		if err := b.Start(ctx, name, json.RawMessage(args), func(r json.RawMessage, err error) { ch <- reply{r, err} }); err != nil {
			return nil, err
		}
		r := <-ch
		return r.res, r.err
	}
	ctx := context.WithValue(context.Background(), clientKey{}, "stdio")
	_, err = call(ctx, tool.Read, `{"path":"/x"}`)
	require.NoError(t, err)
	_, err = call(ctx, "fails", `{}`)
	require.Error(t, err)
	_, err = call(ctx, "invalid", `{}`)
	require.Error(t, err)
	cctx, cancel := context.WithCancel(ctx)
	go cancel()
	_, err = call(cctx, "slow", `{}`)
	require.Error(t, err)

	res, err := call(ctx, tool.Audit, `{"last":10}`)
	require.NoError(t, err)
	var r struct {
		StructuredContent tool.AuditOutput `json:"structuredContent"`
	}
	require.NoError(t, json.Unmarshal(res, &r))
	out := r.StructuredContent
	assert.Equal(t, l.Path(), out.Path)
	require.Len(t, out.Entries, 4, "the audit call itself is recorded once answered")
	for _, e := range out.Entries {
		assert.Equal(t, "stdio", e.Client)
		assert.Equal(t, "web", e.Sandbox)
		assert.Equal(t, tool.AuditCall, e.Kind)
	}
	assert.Equal(t, tool.Read, out.Entries[0].Tool)
	assert.Equal(t, "/x", out.Entries[0].Args["path"])
	assert.Positive(t, out.Entries[0].OutputBytes)
	assert.Equal(t, "boxsh-init is gone", out.Entries[1].Error)
	assert.Equal(t, "bad path", out.Entries[2].Error)
	assert.True(t, out.Entries[3].Cancelled)

	_, err = call(ctx, tool.Audit, `{"last":1001}`)
	require.NoError(t, err)
	noLog := &Backend{Next: next}
	b = noLog
	res, err = call(ctx, tool.Audit, `{}`)
	require.NoError(t, err)
	assert.Contains(t, string(res), "keeps no audit log (start it with --audit FILE)")
	assert.Contains(t, string(res), `"isError":true`)
}

// TestBackendAuditIsolation puts two sandboxes' backends on one log. Each
// audit call must answer its own sandbox's entries only, and only those
// since its start.
func TestBackendAuditIsolation(t *testing.T) {
	l, err := Open(filepath.Join(t.TempDir(), "audit.jsonl"))
	require.NoError(t, err)
	defer l.Close()
	ok := starterFunc(func(_ context.Context, _ string, _ json.RawMessage, done func(json.RawMessage, error)) error {
		b, _ := json.Marshal(tool.TextResult("ok"))
		go done(b, nil)
		return nil
	})
	call := func(b *Backend, name, args string) json.RawMessage {
		ch := make(chan json.RawMessage, 1)
		require.NoError(t, b.Start(context.Background(), name, json.RawMessage(args), func(r json.RawMessage, err error) {
			assert.NoError(t, err)
			ch <- r
		}))
		return <-ch
	}
	old := &Backend{Next: ok, Log: l, Sandbox: "a", Since: time.Now()}
	call(old, tool.Bash, `{"command":"echo earlier a"}`)
	time.Sleep(time.Millisecond)
	a := &Backend{Next: ok, Log: l, Sandbox: "a", Since: time.Now()}
	b := &Backend{Next: ok, Log: l, Sandbox: "b", Since: time.Now()}
	call(a, tool.Bash, `{"command":"echo a"}`)
	call(b, tool.Bash, `{"command":"echo b"}`)
	require.NoError(t, l.Record(Entry{Kind: tool.AuditNetwork, Sandbox: "b", Host: "example.com", Port: 443}))
	var r struct {
		StructuredContent tool.AuditOutput `json:"structuredContent"`
	}
	require.NoError(t, json.Unmarshal(call(a, tool.Audit, `{}`), &r))
	require.Len(t, r.StructuredContent.Entries, 1, "a's, not b's, nor those of the a before it")
	assert.Equal(t, "echo a", r.StructuredContent.Entries[0].Args["command"])
	require.NoError(t, json.Unmarshal(call(b, tool.Audit, `{}`), &r))
	require.Len(t, r.StructuredContent.Entries, 2)
	assert.Equal(t, "echo b", r.StructuredContent.Entries[0].Args["command"])
	assert.Equal(t, "example.com", r.StructuredContent.Entries[1].Host)
	all, _, err := l.Tail(10)
	require.NoError(t, err)
	assert.Len(t, all, 6, "the file holds every sandbox's, the audit calls too")
}
