package rpc

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	res, err := http.DefaultClient.Do(req)
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
	res, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	assert.Equal(t, "application/json", res.Header.Get("Content-Type"))
	assert.Contains(t, string(b), "sleep:400")
}
