package rpc

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/initproto"
	"github.com/boxsh/boxsh/internal/jsontest"
	"github.com/boxsh/boxsh/internal/tool"
)

type progressMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		ProgressToken json.RawMessage `json:"progressToken"`
		Progress      float64         `json:"progress"`
		Message       string          `json:"message"`
	} `json:"params"`
	Result json.RawMessage `json:"result"`
}

// checkProgress checks msgs: progress notifications for token, growing,
// then the answer last.
func checkProgress(t *testing.T, msgs []progressMsg, token string) {
	t.Helper()
	require.GreaterOrEqual(t, len(msgs), 3, "%+v", msgs)
	last := -1.0
	for _, m := range msgs[:len(msgs)-1] {
		assert.Equal(t, "notifications/progress", m.Method)
		assert.Equal(t, token, string(m.Params.ProgressToken))
		assert.Greater(t, m.Params.Progress, last)
		last = m.Params.Progress
	}
	answer := msgs[len(msgs)-1]
	assert.Empty(t, answer.Method)
	assert.Contains(t, string(answer.Result), "sleep:400")
}

func TestProgressStdio(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		old := progressEvery
		progressEvery = 60 * time.Millisecond
		defer func() { progressEvery = old }()
		l := startLive(t)
		_, err := fmt.Fprintln(l.in, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":"p-1"},"name":"bash","arguments":{"command":"sleep:400"}}}`)
		require.NoError(t, err)
		var msgs []progressMsg
		for {
			line, err := l.out.ReadBytes('\n')
			require.NoError(t, err)
			var m progressMsg
			require.NoError(t, json.Unmarshal(line, &m))
			msgs = append(msgs, m)
			if len(m.ID) > 0 {
				break
			}
		}
		checkProgress(t, msgs, `"p-1"`)
		// Nothing follows the answer.
		r := l.rt("tools/list", "{}")
		assert.Nil(t, r.Error)
	})
}

func TestProgressHTTPStream(t *testing.T) {
	old := progressEvery
	progressEvery = 60 * time.Millisecond
	defer func() { progressEvery = old }()
	url, _ := httpServer(t, HTTPOptions{Token: testToken})
	body := modernReq("1", "tools/call", `"name":"bash","arguments":{"command":"sleep:400"}`)
	body = strings.Replace(body, `"_meta":{`, `"_meta":{"progressToken":7,`, 1)
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range modernHeaders("tools/call", "bash") {
		req.Header.Set(k, v)
	}
	res, err := jsontest.NewClient().Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	assert.Equal(t, "text/event-stream", res.Header.Get("Content-Type"))
	var msgs []progressMsg
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var m progressMsg
			require.NoError(t, json.Unmarshal([]byte(data), &m), data)
			msgs = append(msgs, m)
		}
	}
	checkProgress(t, msgs, `7`)

	// A client that takes only JSON gets the plain answer.
	req, _ = http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Accept", "application/json")
	for k, v := range modernHeaders("tools/call", "bash") {
		req.Header.Set(k, v)
	}
	res, err = jsontest.NewClient().Do(req)
	require.NoError(t, err)
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	assert.Equal(t, "application/json", res.Header.Get("Content-Type"))
	assert.Contains(t, string(b), "sleep:400")
}

// initBackend is an initproto.Client on a fake boxsh-init that answers
// each call after a fixed delay. To calls that ask for progress, it sends
// progress frames at the rate they ask, each 100 bytes more than the last.
// asked records the Progress of each call.
func initBackend(t *testing.T, asked chan<- int64) Backend {
	front, back := net.Pipe()
	t.Cleanup(func() { front.Close(); back.Close() })
	hello := initproto.NewHello("test")
	go func() {
		r, w := initproto.NewReader(back), initproto.NewWriter(back)
		// The front's hello, then ours.
		if _, err := r.Read(); err != nil || w.Write(initproto.EncodeHello(hello)) != nil {
			return
		}
		for {
			payload, err := r.Read()
			if err != nil {
				return
			}
			var c initproto.Call
			_ = json.Unmarshal(payload, &c)
			asked <- c.Progress
			go func() {
				end := time.After(450 * time.Millisecond)
				var tick <-chan time.Time
				if c.Progress > 0 {
					tk := time.NewTicker(time.Duration(c.Progress) * time.Millisecond)
					defer tk.Stop()
					tick = tk.C
				}
				var n uint64
				for {
					select {
					case <-tick:
						n += 100
						_ = w.Write(initproto.EncodeProgress(c.ID, n))
					case <-end:
						b, _ := json.Marshal(tool.StructuredResult(tool.BashOutput{Stdout: "sleep:400"}))
						_ = w.Write(initproto.EncodeReply(c.ID, b))
						return
					}
				}
			}()
		}
	}()
	return clientBackend{initproto.NewClient(front, initproto.ClientConfig{Hello: hello})}
}

// clientBackend is a initproto.Client as a Backend.
type clientBackend struct{ c *initproto.Client }

func (b clientBackend) Start(ctx context.Context, name string, args json.RawMessage, done func(json.RawMessage, error)) error {
	return b.c.Start(ctx, name, args, done)
}

// TestProgressReportsBytes checks that the bytes boxsh-init reports go into
// the notifications (message and _meta), which follow the reports. A call
// without a token asks for none.
func TestProgressReportsBytes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		old := progressEvery
		progressEvery = 100 * time.Millisecond
		defer func() { progressEvery = old }()
		asked := make(chan int64, 4)
		tools, err := tool.NewRegistry()
		require.NoError(t, err)
		s := &Server{Tools: tools, Backend: initBackend(t, asked), Name: "boxsh", Version: "test"}
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		go func() { _ = s.Serve(context.Background(), inR, outW); outW.Close() }()
		defer inW.Close()
		out := bufio.NewReader(jsontest.NewReader(outR))

		_, err = fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":"b"},"name":"bash","arguments":{"command":"x"}}}`)
		require.NoError(t, err)
		assert.Equal(t, int64(100), <-asked)
		var bytes []float64
		for {
			line, err := out.ReadBytes('\n')
			require.NoError(t, err)
			var m struct {
				progressMsg
				Params struct {
					Message string             `json:"message"`
					Meta    map[string]float64 `json:"_meta"`
				} `json:"params"`
			}
			require.NoError(t, json.Unmarshal(line, &m), "%s", line)
			if len(m.ID) > 0 {
				break
			}
			n, ok := m.Params.Meta[metaOutputBytes]
			if !ok {
				// Only before the first report (late on a loaded machine).
				assert.Empty(t, bytes, "%s", line)
				continue
			}
			assert.Contains(t, m.Params.Message, fmt.Sprintf(", %d bytes of output", int(n)))
			bytes = append(bytes, n)
		}
		require.GreaterOrEqual(t, len(bytes), 3, "%v", bytes)
		assert.LessOrEqual(t, len(bytes), 5, "%v", bytes)
		// Each report brings its notification (one may be skipped, or
		// repeated by the fallback, when a report comes late on a loaded
		// machine).
		for i := range bytes {
			assert.Zero(t, int(bytes[i])%100, "%v", bytes)
			if i > 0 {
				assert.GreaterOrEqual(t, bytes[i], bytes[i-1], "%v", bytes)
			}
		}
		assert.Greater(t, bytes[len(bytes)-1], bytes[0], "%v", bytes)

		_, err = fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"bash","arguments":{"command":"x"}}}`)
		require.NoError(t, err)
		assert.Equal(t, int64(0), <-asked, "no token, no progress asked of boxsh-init")
		line, err := out.ReadBytes('\n')
		require.NoError(t, err)
		assert.Contains(t, string(line), `"id":2`)
	})
}

// TestProgressWithoutReports checks that without reports, notifications of
// the time alone keep coming, a little over progressEvery apart.
func TestProgressWithoutReports(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		old := progressEvery
		progressEvery = 100 * time.Millisecond
		defer func() { progressEvery = old }()
		l := startLive(t)
		start := time.Now()
		_, err := fmt.Fprintln(l.in, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":"p"},"name":"bash","arguments":{"command":"sleep:400"}}}`)
		require.NoError(t, err)
		var times []time.Duration
		for {
			line, err := l.out.ReadBytes('\n')
			require.NoError(t, err)
			if !strings.Contains(string(line), "notifications/progress") {
				break
			}
			assert.NotContains(t, string(line), "bytes")
			times = append(times, time.Since(start))
		}
		require.GreaterOrEqual(t, len(times), 2, "%v", times)
		for i := 1; i < len(times); i++ {
			assert.GreaterOrEqual(t, times[i]-times[i-1], 100*time.Millisecond, "%v", times)
		}
	})
}
