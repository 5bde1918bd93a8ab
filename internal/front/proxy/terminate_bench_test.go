package proxy

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// benchDownloadSize is the body of the download benchmarks.
const benchDownloadSize = 100_000_000

// benchDownload GETs a benchDownloadSize body from an HTTPS origin through
// a proxy b.N times, over one kept-alive connection: terminated when
// terminate (a secret for the origin's name), an untouched CONNECT tunnel
// otherwise; chunked without a Content-Length when chunked. The sandbox's
// side is a loopback TCP connection, as the sandbox's connections passed
// to the front are.
func benchDownload(b *testing.B, terminate, chunked bool) {
	block := make([]byte, 1<<20)
	for i := range block {
		block[i] = byte(i * 7)
	}
	var upSuite atomic.Uint32
	origin := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		upSuite.Store(uint32(r.TLS.CipherSuite))
		if !chunked {
			w.Header().Set("Content-Length", strconv.Itoa(benchDownloadSize))
		}
		for left := benchDownloadSize; left > 0; left -= len(block) {
			if _, err := w.Write(block[:min(left, len(block))]); err != nil {
				return
			}
		}
	}))
	origin.Config.ErrorLog = log.New(io.Discard, "", 0)
	origin.StartTLS()
	b.Cleanup(origin.Close)
	originRoots := x509.NewCertPool()
	originRoots.AddCert(origin.Certificate())

	// httptest's certificate is for example.com.
	tok := Secret{Name: "BENCH_TOKEN", Value: "bench_0123456789abcdefghij", Hosts: []string{"example.com"}}
	if !terminate {
		tok.Hosts = []string{"elsewhere.example"}
	}
	var err error
	tok.StandIn, err = NewStandIn(tok.Value)
	require.NoError(b, err)
	set, err := NewSecrets([]Secret{tok})
	require.NoError(b, err)
	set.CA, err = NewCA("boxsh bench CA")
	require.NoError(b, err)
	set.Roots = originRoots
	w := world{"example.com:443": origin.Listener.Addr().String()}
	p := startProxy(b, &Server{Dial: w.dial, Secrets: set}, []string{"example.com"}, nil)

	roots := originRoots
	if terminate {
		roots = x509.NewCertPool()
		require.True(b, roots.AppendCertsFromPEM(set.CA.CertPEM()))
	}
	tr := &http.Transport{Proxy: http.ProxyURL(p.url), TLSClientConfig: &tls.Config{RootCAs: roots}}
	b.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr}
	var clientSuite uint16
	get := func() {
		resp, err := client.Get("https://example.com/big")
		require.NoError(b, err)
		clientSuite = resp.TLS.CipherSuite
		n, err := io.CopyBuffer(io.Discard, resp.Body, make([]byte, 128<<10))
		resp.Body.Close()
		require.NoError(b, err)
		require.Equal(b, int64(benchDownloadSize), n)
		wantIssuer := "boxsh bench CA"
		if !terminate {
			wantIssuer = origin.Certificate().Issuer.CommonName
		}
		require.Equal(b, wantIssuer, resp.TLS.PeerCertificates[0].Issuer.CommonName)
	}
	get() // the handshakes, outside the timing
	if terminate {
		b.Logf("cipher suites: %s to the origin, %s to the client", tls.CipherSuiteName(uint16(upSuite.Load())), tls.CipherSuiteName(clientSuite))
	} else {
		b.Logf("cipher suite: %s", tls.CipherSuiteName(clientSuite))
	}
	b.SetBytes(benchDownloadSize)
	before := cpuTime(b)
	b.ResetTimer()
	for range b.N {
		get()
	}
	b.StopTimer()
	// The processor time of the whole test process (origin, proxy and
	// client), which a shared machine's load changes less than the time.
	b.ReportMetric(float64(cpuTime(b)-before)/float64(b.N), "cpu-ns/op")
}

// cpuTime is the processor time the process has used, user and system.
func cpuTime(b *testing.B) int64 {
	var ru syscall.Rusage
	require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkTerminatedDownload is a large download through a terminated
// tunnel: the proxy decrypts and encrypts each byte again.
func BenchmarkTerminatedDownload(b *testing.B) { benchDownload(b, true, false) }

// BenchmarkTerminatedDownloadChunked is the terminated download of a body
// without a Content-Length.
func BenchmarkTerminatedDownloadChunked(b *testing.B) { benchDownload(b, true, true) }

// BenchmarkTunnelDownload is the same download through an untouched tunnel.
func BenchmarkTunnelDownload(b *testing.B) { benchDownload(b, false, false) }

// BenchmarkRecordCrypto is what a terminated tunnel adds per byte at the
// least: the upstream's record opened and the client's sealed, AES-128-GCM
// (the suite Go's TLS picks with AES instructions) on 16 KiB records.
func BenchmarkRecordCrypto(b *testing.B) {
	key := make([]byte, 16)
	_, _ = rand.Read(key)
	block, err := aes.NewCipher(key)
	require.NoError(b, err)
	aead, err := cipher.NewGCM(block)
	require.NoError(b, err)
	nonce := make([]byte, aead.NonceSize())
	plain := make([]byte, 16<<10)
	sealed := aead.Seal(nil, nonce, plain, nil)
	out := make([]byte, 0, len(sealed))
	b.SetBytes(int64(len(plain)))
	for b.Loop() {
		opened, err := aead.Open(plain[:0], nonce, sealed, nil)
		if err != nil {
			b.Fatal(err)
		}
		out = aead.Seal(out[:0], nonce, opened, nil)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)*float64(benchDownloadSize)/float64(len(plain))/1e6, "ms/100MB")
}
