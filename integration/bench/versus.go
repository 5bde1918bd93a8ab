package main

import (
	"slices"
	"time"
)

// The interleaved figure (-http): the same `echo x` round trip on stdio
// (legacy, as the stdio figure measures it, and modern) and on HTTP
// (modern), taking turns by blocks on servers that run side by side, so
// that a change in the machine's load affects each alike. The HTTP
// overhead is the median of the blocks' differences of medians, with
// their range.

// versusBlocks and versusBlock are how many blocks of how many calls each
// transport makes.
const (
	versusBlocks = 20
	versusBlock  = 50
)

func init() {
	httpSuite = append(httpSuite, measurement{"stdio vs HTTP interleaved", measureVersus})
	metricDefs = append(metricDefs,
		metricDef{"versus_stdio_median_ms", "interleaved: stdio echo x, median", "ms", 3},
		metricDef{"versus_stdio_modern_median_ms", "interleaved: stdio 2026-07-28 echo x, median", "ms", 3},
		metricDef{"versus_http_median_ms", "interleaved: HTTP echo x, median", "ms", 3},
		metricDef{"versus_http_over_stdio_ms", "interleaved: HTTP - stdio, median of blocks", "ms", 3},
		metricDef{"versus_http_over_stdio_min_ms", "interleaved: HTTP - stdio, least block", "ms", 3},
		metricDef{"versus_http_over_stdio_max_ms", "interleaved: HTTP - stdio, greatest block", "ms", 3},
	)
}

// modernToolCall is toolCall in the 2026-07-28 form (no initialize; the
// version in _meta).
func modernToolCall(id int, command string) []byte {
	return encode(request{ID: &id, Method: "tools/call", Params: map[string]any{
		"name": "bash", "arguments": bashArgs(command),
		"_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		},
	}})
}

// measureVersus runs the interleaved figure.
func measureVersus(t *target, c config) error {
	return session(t, c, "stdio vs HTTP interleaved", func(s *server) error {
		return httpSession(t, c, "stdio vs HTTP interleaved", func(h *httpServer) error {
			rc, err := h.dialRaw()
			if err != nil {
				return err
			}
			defer rc.conn.Close()
			var answers tally
			legacy := func() (time.Duration, error) {
				d, line, err := timedCall(s, "bash", bashArgs("echo x"))
				if err == nil {
					answers.check(checkBash(line, "x\n"))
				}
				return d, err
			}
			modern := func() (time.Duration, error) {
				id := s.id()
				req := modernToolCall(id, "echo x")
				start := time.Now()
				if err := s.send(req); err != nil {
					return 0, err
				}
				line, err := s.await(id)
				if err != nil {
					return 0, err
				}
				answers.check(checkBash(line, "x\n"))
				return s.arrived.Sub(start), nil
			}
			overHTTP := func() (time.Duration, error) {
				req := rc.request("echo x")
				start := time.Now()
				b, err := rc.do(req)
				if err != nil {
					return 0, err
				}
				d := time.Since(start)
				answers.check(checkBash(b, "x\n"))
				return d, nil
			}
			ways := []func() (time.Duration, error){legacy, modern, overHTTP}
			all := make([]sample, len(ways))
			var diffs sample
			for block := -1; block < versusBlocks; block++ {
				medians := make([]time.Duration, len(ways))
				for i, way := range ways {
					lat := make(sample, 0, versusBlock)
					for range versusBlock {
						d, err := way()
						if err != nil {
							return err
						}
						lat = append(lat, d)
					}
					if block >= 0 { // block -1 warms up
						all[i] = append(all[i], lat...)
						medians[i] = lat.median()
					}
				}
				if block >= 0 {
					diffs = append(diffs, medians[2]-medians[0])
				}
			}
			answers.report(t, "stdio vs HTTP interleaved")
			t.set("versus_stdio_median_ms", ms(all[0].median()))
			t.set("versus_stdio_modern_median_ms", ms(all[1].median()))
			t.set("versus_http_median_ms", ms(all[2].median()))
			t.set("versus_http_over_stdio_ms", ms(diffs.median()))
			t.set("versus_http_over_stdio_min_ms", ms(slices.Min(diffs)))
			t.set("versus_http_over_stdio_max_ms", ms(slices.Max(diffs)))
			return nil
		})
	})
}
