package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/boxsh/boxsh/internal/initproto"
	"github.com/boxsh/boxsh/internal/largecall"
	"github.com/boxsh/boxsh/internal/tool"
)

// writeFramer takes each call as the front and boxsh-init take it, up to
// the tool:
//   - the front frames it (largecall.WriteCall, as its initproto.Client
//     does);
//   - boxsh-init decodes the frame and the write's arguments.
//
// The file is not written.
type writeFramer struct{}

func (writeFramer) Start(ctx context.Context, name string, args json.RawMessage, done func(json.RawMessage, error)) error {
	var buf bytes.Buffer
	if err := largecall.WriteCall(initproto.NewWriter(&buf), initproto.Call{ID: 1, Tool: name, Args: args}); err != nil {
		return err
	}
	payload, err := initproto.NewReader(&buf).Read()
	if err != nil {
		return err
	}
	c, err := largecall.DecodeCall(payload)
	if err != nil {
		return err
	}
	var w tool.WriteArgs
	if err := largecall.UnmarshalArgs(c.Args, &w); err != nil {
		return err
	}
	done(json.RawMessage(fmt.Sprintf(`{"content":[{"type":"text","text":"written %d bytes"}]}`, len(w.Content))), nil)
	return nil
}

// BenchmarkLegacyWrite20MB measures the large-call paths of both sides. It
// sends one 2024-11-05 tools/call of write with the content of
// integration/bench's "20 MB write" through Serve on pipes. The call is
// framed and decoded as on its way to the tool (see writeFramer).
func BenchmarkLegacyWrite20MB(b *testing.B) {
	call := pipedServer(b, writeFramer{})
	var text strings.Builder
	for i := 0; text.Len() < 20_000_000; i++ {
		fmt.Fprintf(&text, "%-63s\n", fmt.Sprintf("line %d: the quick brown fox jumps over the lazy dog", i))
	}
	content, err := json.Marshal(text.String()[:20_000_000])
	if err != nil {
		b.Fatal(err)
	}
	line := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"write","arguments":{"path":"/x","content":` + string(content) + `}}}` + "\n"
	b.SetBytes(int64(len(line)))
	b.ResetTimer()
	for range b.N {
		answer := call(line)
		if !bytes.Contains(answer, []byte("written 20000000 bytes")) {
			b.Fatalf("answer: %s", answer)
		}
	}
}
