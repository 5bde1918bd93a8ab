package jsonx

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// corpus holds JSON texts, valid and not, with the corners of the grammar
// and of string decoding.
var corpus = []string{
	``, ` `, `null`, `true`, `false`, `nul`, `truex`, `0`, `-0`, `01`, `-`, `1.`, `1.5`, `1e`, `1e+`, `1E-7`, `-12.5e3`,
	`1e400`, `-1e400`, `123456789012345678901234567890`, `0.000001`,
	`""`, `"a"`, `"\""`, `"\\"`, `"\/"`, `"\b\f\n\r\t"`, `"\x"`, `"\u"`, `"\u12"`, `"\u00e9"`, `"\u00E9"`, `"\ug000"`,
	`"\ud83d\ude00"`, `"\ud83d"`, `"\ud83dx"`, `"\ud83d\u0041"`, `"\ude00"`, `"\ud83d\ud83d\ude00"`,
	"\"tab\tinside\"", "\"nl\ninside\"", "\"\x00\"", "\"\x1f\"", "\"\x7f\"", "\"caf\xe9\"", "\"\xed\xa0\x80\"", "\"\xef\xbf\xbd\"",
	"\"é ✓ 😀\"", `"unterminated`, `"a" "b"`, ` "a" `, "\t\r\n\"a\"\n",
	`{}`, `{ }`, `[]`, `[ ]`, `[1,]`, `[,1]`, `{"a":1,}`, `{"a" 1}`, `{"a":}`, `{a:1}`, `{"a":1 "b":2}`, `{"a":1}x`, `[1] [2]`,
	`{"a":1,"a":2}`, `{"A":1,"a":2}`, `{"path":"/x","content":"a\nb","encoding":"utf8"}`,
	`{"nested":{"x":[1,2,{"y":null}],"z":"w"},"arr":[[],[[]],{}]}`, `[1,"2",true,false,null,{"k":"v"}]`,
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	strings.Repeat("[", 100) + strings.Repeat("]", 100),
	strings.Repeat("[", 100) + strings.Repeat("]", 99),
	`{"k\u00e9y":"v","k\"q":1}`, `{"\ud800":1}`,
}

// random returns a random JSON-ish text: mostly valid, with the characters
// that need escaping, and sometimes corrupted.
func random(r *rand.Rand, depth int) string {
	pieces := []string{"a", "é", "😀", "\\n", "\\\"", "\\\\", "\\u00e9", "\\ud83d\\ude00", "\\ud83d", "\n", "\x01", "\xff", " ", "\"", "<&>", strings.Repeat("x", r.IntN(40))}
	str := func() string {
		var b strings.Builder
		b.WriteByte('"')
		for range r.IntN(12) {
			p := pieces[r.IntN(len(pieces))]
			if (p == "\n" || p == "\x01" || p == "\"") && r.IntN(4) != 0 {
				continue // keep most strings valid
			}
			b.WriteString(p)
		}
		b.WriteByte('"')
		return b.String()
	}
	switch k := r.IntN(8); {
	case depth > 3 || k < 3:
		return str()
	case k == 3:
		return []string{"0", "-1.5", "2e3", "true", "false", "null", "1e999"}[r.IntN(7)]
	case k < 6:
		var parts []string
		for range r.IntN(4) {
			parts = append(parts, str()+":"+random(r, depth+1))
		}
		return "{" + strings.Join(parts, ",") + "}"
	default:
		var parts []string
		for range r.IntN(4) {
			parts = append(parts, random(r, depth+1))
		}
		return "[" + strings.Join(parts, " , ") + "]"
	}
}

func allInputs(t *testing.T) []string {
	t.Helper()
	inputs := append([]string{}, corpus...)
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		s := random(r, 0)
		if r.IntN(10) == 0 && len(s) > 0 {
			i := r.IntN(len(s))
			s = s[:i] + s[i+1:] // corrupt
		}
		inputs = append(inputs, s)
	}
	return inputs
}

// TestMatchesEncodingJSON checks Valid, DecodeAny, Unquote and Members
// against encoding/json on the corpus and on random texts.
func TestMatchesEncodingJSON(t *testing.T) {
	for _, in := range allInputs(t) {
		b := []byte(in)
		valid := json.Valid(b)
		require.Equal(t, valid, Valid(b), "Valid(%q)", in)

		var want any
		wantErr := json.Unmarshal(b, &want)
		got, ok := DecodeAny(b, 0)
		if ok {
			require.NoError(t, wantErr, "DecodeAny accepted %q", in)
			require.Equal(t, want, got, "DecodeAny(%q)", in)
			_, rawOK := DecodeAny(b, 8)
			require.True(t, rawOK, "DecodeAny(%q, 8)", in)
		} else if valid && len(in) < 1000 {
			// Only numbers out of range are left to encoding/json.
			require.Error(t, wantErr, "DecodeAny refused %q", in)
		}

		var ws string
		wsErr := json.Unmarshal(b, &ws)
		s, ok := Unquote(b)
		if ok {
			require.NoError(t, wsErr, "Unquote accepted %q", in)
			require.Equal(t, ws, s, "Unquote(%q)", in)
		} else {
			require.False(t, wsErr == nil && strings.HasPrefix(in, `"`) && strings.HasSuffix(in, `"`), "Unquote refused %q", in)
		}

		members, ok := Members(b)
		var raw map[string]json.RawMessage
		rawErr := json.Unmarshal(b, &raw)
		if ok {
			require.NoError(t, rawErr, "Members accepted %q", in)
			last := map[string]string{}
			for _, m := range members {
				last[m.Key] = string(m.Value)
				var want string
				if err := json.Unmarshal(m.Value, &want); err == nil && m.Value[0] == '"' {
					got, ok := m.String()
					require.True(t, ok, "member %q of %q is a string", m.Key, in)
					require.Equal(t, want, got, "member %q of %q", m.Key, in)
				} else {
					_, ok := m.String()
					require.False(t, ok, "member %q of %q is no string", m.Key, in)
				}
			}
			require.Len(t, last, len(raw), "Members(%q)", in)
			for k, v := range raw {
				require.Equal(t, string(v), last[k], "member %q of %q", k, in)
			}
		} else if valid && rawErr == nil && raw != nil {
			require.Fail(t, "Members refused", "%q", in)
		}

		checkStringMembers(t, b)
		// As the value of a member, where each string of the corpus is
		// tried too.
		checkStringMembers(t, []byte(`{"k":`+in+`}`))
		if valid {
			checkOfValid(t, b)
		}
	}
}

// checkStringMembers checks StringMembers(b) against encoding/json.
func checkStringMembers(t *testing.T, b []byte) {
	t.Helper()
	var raw map[string]any
	rawErr := json.Unmarshal(b, &raw)
	// Every value a string, duplicates included.
	all, allOK := Members(b)
	allStrings := rawErr == nil && raw != nil && allOK
	for _, m := range all {
		if m.Value[0] != '"' {
			allStrings = false
		}
	}
	members, ok := StringMembers(b)
	if !ok {
		require.False(t, allStrings, "StringMembers refused %q", b)
		return
	}
	require.NoError(t, rawErr, "StringMembers accepted %q", b)
	last := map[string]any{}
	for _, m := range members {
		last[m.Key] = m.Value
	}
	require.Equal(t, raw, last, "StringMembers(%q)", b)
	// In order, duplicates included: as Members gives them.
	require.True(t, allOK)
	require.Len(t, members, len(all))
	for i, m := range all {
		require.Equal(t, m.Key, members[i].Key)
	}
}

// checkOfValid checks MembersOfValid and DecodeAnyOfValid against Members
// and DecodeAny on the valid text b.
func checkOfValid(t *testing.T, b []byte) {
	t.Helper()
	want, wantOK := Members(b)
	got, ok := MembersOfValid(b)
	require.Equal(t, wantOK, ok, "MembersOfValid(%q)", b)
	require.Len(t, got, len(want))
	for i, m := range want {
		require.Equal(t, m.Key, got[i].Key, "MembersOfValid(%q)", b)
		require.Equal(t, string(m.Value), string(got[i].Value), "MembersOfValid(%q)", b)
		ws, wok := m.String()
		gs, gok := got[i].String()
		require.Equal(t, wok, gok, "member %q of %q", m.Key, b)
		require.Equal(t, ws, gs, "member %q of %q", m.Key, b)
	}
	for _, keep := range []int{0, 1, 4, 8} {
		wv, wok := DecodeAny(b, keep)
		gv, gok := DecodeAnyOfValid(b, keep)
		require.Equal(t, wok, gok, "DecodeAnyOfValid(%q, %d)", b, keep)
		require.Equal(t, wv, gv, "DecodeAnyOfValid(%q, %d)", b, keep)
	}
}

// FuzzStringMembers checks StringMembers, and MembersOfValid and
// DecodeAnyOfValid on valid texts, against encoding/json.
func FuzzStringMembers(f *testing.F) {
	for _, in := range corpus {
		f.Add(in)
	}
	f.Add(`{"path":"/x","content":"a\nb\u00e9\ud83d\ude00\ud800\"\\","encoding":"utf8"}`)
	f.Fuzz(func(t *testing.T, in string) {
		b := []byte(in)
		checkStringMembers(t, b)
		checkStringMembers(t, []byte(`{"k":`+in+`}`))
		if json.Valid(b) {
			checkOfValid(t, b)
		}
	})
}

func TestDecodeAnyKeepRaw(t *testing.T) {
	v, ok := DecodeAny([]byte(`{"short":"a\nb","long":"0123456789\n","arr":["0123456789ab"]}`), 12)
	require.True(t, ok)
	assert.Equal(t, map[string]any{"short": "a\nb", "long": `"0123456789\n"`, "arr": []any{`"0123456789ab"`}}, v)
	_, ok = DecodeAny([]byte(`{"long":"0123456789`+"\x01"+`"}`), 4)
	assert.False(t, ok, "a kept string is checked")
}

func TestUnquoteLarge(t *testing.T) {
	var b strings.Builder
	for i := 0; b.Len() < 1<<20; i++ {
		b.WriteString("line \"quoted\" \\ é ✓ 😀 \t end\n")
	}
	enc, err := json.Marshal(b.String())
	require.NoError(t, err)
	got, ok := Unquote(enc)
	require.True(t, ok)
	assert.Equal(t, b.String(), got)
}

func bigArgs(b *testing.B) []byte {
	var s strings.Builder
	for i := 0; s.Len() < 20_000_000; i++ {
		s.WriteString("line: the quick brown fox jumps over the lazy dog 0123456789\n")
	}
	args, err := json.Marshal(map[string]string{"path": "/tmp/x", "content": s.String()})
	if err != nil {
		b.Fatal(err)
	}
	return args
}

func BenchmarkMembersUnquote20MB(b *testing.B) {
	args := bigArgs(b)
	b.SetBytes(int64(len(args)))
	for b.Loop() {
		members, ok := Members(args)
		if !ok {
			b.Fatal("not an object")
		}
		for _, m := range members {
			if _, ok := Unquote(m.Value); !ok {
				b.Fatal("not a string")
			}
		}
	}
}

func BenchmarkEncodingJSON20MB(b *testing.B) {
	args := bigArgs(b)
	b.SetBytes(int64(len(args)))
	for b.Loop() {
		var v struct{ Path, Content string }
		if err := json.Unmarshal(args, &v); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStringMembers20MB(b *testing.B) {
	args := bigArgs(b)
	b.SetBytes(int64(len(args)))
	for b.Loop() {
		if _, ok := StringMembers(args); !ok {
			b.Fatal("not an object of strings")
		}
	}
}

func BenchmarkMembersOfValid20MB(b *testing.B) {
	args := bigArgs(b)
	b.SetBytes(int64(len(args)))
	for b.Loop() {
		if _, ok := MembersOfValid(args); !ok {
			b.Fatal("not an object")
		}
	}
}

func BenchmarkMembers20MB(b *testing.B) {
	args := bigArgs(b)
	b.SetBytes(int64(len(args)))
	for b.Loop() {
		if _, ok := Members(args); !ok {
			b.Fatal("not an object")
		}
	}
}

// denseArgs are write arguments of about 24 MB whose content has an
// escape every few bytes, as source code has.
func denseArgs(b *testing.B) []byte {
	args, err := json.Marshal(map[string]string{"path": "/tmp/x", "content": strings.Repeat("\tif s == \"q\" {\n", 1_700_000)})
	if err != nil {
		b.Fatal(err)
	}
	return args
}

func BenchmarkMembersOfValidDense(b *testing.B) {
	args := denseArgs(b)
	b.SetBytes(int64(len(args)))
	for b.Loop() {
		if _, ok := MembersOfValid(args); !ok {
			b.Fatal("not an object")
		}
	}
}

func BenchmarkMembersDense(b *testing.B) {
	args := denseArgs(b)
	b.SetBytes(int64(len(args)))
	for b.Loop() {
		if _, ok := Members(args); !ok {
			b.Fatal("not an object")
		}
	}
}

func BenchmarkStringMembersDense(b *testing.B) {
	args := denseArgs(b)
	b.SetBytes(int64(len(args)))
	for b.Loop() {
		if _, ok := StringMembers(args); !ok {
			b.Fatal("not an object of strings")
		}
	}
}

// TestClosingQuote checks closingQuote, with its blocks of 64 bytes,
// against a byte-by-byte scan, on strings dense and sparse in quotes and
// backslashes, across block boundaries.
func TestClosingQuote(t *testing.T) {
	simple := func(b []byte, i int) int {
		for ; i < len(b); i++ {
			switch b[i] {
			case '\\':
				i++
			case '"':
				return i
			}
		}
		return -1
	}
	r := rand.New(rand.NewPCG(3, 4))
	for n := range 20000 {
		size := r.IntN(600)
		b := make([]byte, size)
		quoteRate, slashRate := 1+r.IntN(40), 1+r.IntN(20)
		for k := range b {
			switch {
			case r.IntN(quoteRate) == 0:
				b[k] = '"'
			case r.IntN(slashRate) == 0:
				b[k] = '\\'
			default:
				b[k] = 'a'
			}
		}
		if n%3 == 0 && size > 0 {
			// A long quiet stretch, then dense.
			for k := range min(size, 300) {
				b[k] = 'x'
			}
		}
		i := 0
		if size > 0 {
			i = r.IntN(size)
		}
		require.Equal(t, simple(b, i), closingQuote(b, i), "%q from %d", b, i)
	}
}

// FuzzClosingQuote checks closingQuote, from any start, against a byte by
// byte scan, on texts long enough for its blocks of 64 bytes (the fuzzed
// text is repeated).
func FuzzClosingQuote(f *testing.F) {
	f.Add(`a\"b\\"`, uint8(3), uint16(0))
	f.Add(`\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\"`, uint8(1), uint16(2))
	f.Add("x\\\"", uint8(60), uint16(1))
	f.Fuzz(func(t *testing.T, s string, times uint8, start uint16) {
		b := []byte(strings.Repeat(s, int(times)))
		if len(b) == 0 {
			return
		}
		i := int(start) % len(b)
		want := -1
		for k := i; k < len(b); k++ {
			if b[k] == '\\' {
				k++
			} else if b[k] == '"' {
				want = k
				break
			}
		}
		require.Equal(t, want, closingQuote(b, i), "%q from %d", b, i)
	})
}
