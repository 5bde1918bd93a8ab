package initproto

import (
	"encoding/json"
	"strings"
	"testing"
)

// bashResult is an encoded bash result around n bytes of output: text
// with the escapes a shell's output has, twice (text block and
// structured content).
func bashResult(n int) []byte {
	return bashResultOf(n, strings.Repeat(`abcdefghij "q" \ tab`+"\t", 4)+"\n")
}

// bashResultOf is bashResult with line repeated as the output.
func bashResultOf(n int, line string) []byte {
	out := strings.Repeat(line, n/len(line)+1)[:n]
	sc, _ := json.Marshal(map[string]any{"exit_code": 0, "stdout": out, "stderr": ""})
	b, _ := json.Marshal(map[string]any{
		"content":           []any{map[string]any{"type": "text", "text": string(sc)}},
		"structuredContent": json.RawMessage(sc),
	})
	return b
}

func benchmarkDecodeReply(b *testing.B, result []byte) {
	payload := EncodeReply(7, result)
	b.SetBytes(int64(len(payload)))
	b.ResetTimer()
	for range b.N {
		r, err := DecodeReply(payload)
		if err != nil || r.ID != 7 {
			b.Fatal(r.ID, err)
		}
	}
}

func BenchmarkDecodeReplySmall(b *testing.B) { benchmarkDecodeReply(b, bashResult(100)) }

// Output with escapes every few bytes, twice escaped in the text block.
func BenchmarkDecodeReply10MiB(b *testing.B) { benchmarkDecodeReply(b, bashResult(10<<20)) }

// Output of plain text, such as a log.
func BenchmarkDecodeReply10MiBText(b *testing.B) {
	benchmarkDecodeReply(b, bashResultOf(10<<20, "2026-11-24 00:46:32 INFO the quick brown fox jumps over the lazy dog\n"))
}
