package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/boxsh/boxsh/integration/internal/seambuild"
)

// With -egress N the bench measures the sandbox's way out in allowlist mode
// instead of the suite. A stand-in origin serves on the bench's loopback; a
// probe program inside a sandbox downloads a large body from it and makes
// many small requests, three ways, interleaved per round, the order turned
// round each round:
//
//   - direct: a sandbox with --network allow_all, which shares the host's
//     network, to the origin's loopback address: no proxy at all;
//   - explicit: --network allowlist, through the proxy named by HTTP_PROXY;
//   - transparent: --network allowlist, the probe ignoring the proxy
//     variables, so boxsh-init captures its connection to the name;
//   - direct-tls: the same as direct over HTTPS, to the origin's TLS
//     address: the cost of TLS alone; direct-h2 the same over HTTP/2;
//   - tunnel: HTTPS through the proxy's CONNECT, untouched, the probe
//     trusting the origin's own certificate;
//   - tunnel-h2: the same over HTTP/2, which Go's client and server agree
//     on by default (every other HTTPS way speaks HTTP/1.1, as the
//     terminating proxy does);
//   - terminated: the same with a --secret for the origin's name, so the
//     proxy terminates TLS (the probe trusting its CA through
//     SSL_CERT_FILE) and reaches the origin over TLS of its own.
//
// Both allowlist ways reach the origin by a name that the test-seam build
// of boxsh maps to the loopback (BOXSH_PROXY_HOSTS); all three ways run that
// build. The probe times itself, from before the request to its body's last
// byte, so sandbox starts are not in the figures.

// egressConfig is the workload of -egress.
type egressConfig struct {
	Rounds   int
	Bytes    int64    // the size of the download
	Requests int      // small requests per way and round
	SeamBin  string   // the test-seam boxsh; built when ""
	Ways     []string // the ways to measure, of egressWays; all when empty
	Timeout  time.Duration
}

// egressName is the name the allowlist ways reach the origin by.
const egressName = "origin.bench.example"

// The ways of egress, in the order of the first round.
var egressWays = []string{"direct", "direct-tls", "direct-h2", "explicit", "transparent", "tunnel", "tunnel-h2", "terminated"}

// egressProto is the protocol way's download speaks.
func egressProto(way string) string {
	if strings.HasSuffix(way, "-h2") {
		return "HTTP/2.0"
	}
	return "HTTP/1.1"
}

// egressRound is what the probe measured of one way in one round.
type egressRound struct {
	Download time.Duration   // the whole body, request to last byte
	Proto    string          // the download's protocol, "HTTP/1.1"
	Small    []time.Duration // each small request
}

// egressResult holds the rounds of every way, by way.
type egressResult map[string][]egressRound

// runEgress runs the egress workload with bin's boxsh-init (and a test-seam
// boxsh), and prints the table to w.
func runEgress(w io.Writer, bin string, ec egressConfig) (egressResult, error) {
	if ec.Rounds < 1 || ec.Bytes < 1 || ec.Requests < 1 {
		return nil, errors.New("-egress, -egress-bytes and -egress-requests must be at least 1")
	}
	for _, w := range ec.Ways {
		if !slices.Contains(egressWays, w) {
			return nil, fmt.Errorf("-egress-ways: no way %q (%s)", w, strings.Join(egressWays, ", "))
		}
	}
	tmp, err := os.MkdirTemp("", "boxsh-bench-egress-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	seam := ec.SeamBin
	if seam == "" {
		dir := filepath.Join(tmp, "seam")
		if err := os.Mkdir(dir, 0o755); err != nil {
			return nil, err
		}
		if seam, err = seambuild.Build(ctx, filepath.Dir(bin), dir); err != nil {
			return nil, err
		}
	}
	probe, err := buildEgressProbe(ctx, tmp)
	if err != nil {
		return nil, err
	}
	o, err := startOrigin(ec.Bytes, filepath.Dir(probe))
	if err != nil {
		return nil, err
	}
	defer o.close()

	loadBefore := loadAverage()
	res := egressResult{}
	for round := range ec.Rounds {
		order := slices.Clone(egressWays)
		if len(ec.Ways) > 0 {
			order = slices.DeleteFunc(order, func(w string) bool { return !slices.Contains(ec.Ways, w) })
		}
		if round%2 == 1 {
			slices.Reverse(order)
		}
		for _, way := range order {
			r, err := runEgressWay(seam, probe, way, o, ec)
			if err != nil {
				return nil, fmt.Errorf("egress %s, round %d: %w", way, round+1, err)
			}
			res[way] = append(res[way], r)
		}
	}
	writeEgress(w, res, ec, loadBefore, loadAverage())
	return res, nil
}

// runEgressWay runs the probe once in a new sandbox the way named.
func runEgressWay(seam, probe, way string, o *origin, ec egressConfig) (egressRound, error) {
	_, port, _ := net.SplitHostPort(o.addr)
	scheme, host, network, mode := "http", egressName+":"+port, "allowlist", "noproxy"
	args := []string{"--sandbox", "--bind", "ro:" + filepath.Dir(probe)}
	mapped := egressName + "=" + o.addr
	switch way {
	case "direct":
		host, network = o.addr, "allow_all"
	case "direct-tls", "direct-h2":
		scheme, host, network = "https", o.tlsAddr, "allow_all"
		args = append(args, "--env", "SSL_CERT_FILE="+o.certFile)
		if way == "direct-h2" {
			mode = "noproxy-h2"
		}
	case "explicit":
		mode = "proxy"
	case "tunnel", "tunnel-h2":
		_, tlsPort, _ := net.SplitHostPort(o.tlsAddr)
		scheme, host, mode, mapped = "https", egressName+":"+tlsPort, "proxy", egressName+"="+o.tlsAddr
		args = append(args, "--env", "SSL_CERT_FILE="+o.certFile)
		if way == "tunnel-h2" {
			mode = "proxy-h2"
		}
	case "terminated":
		_, tlsPort, _ := net.SplitHostPort(o.tlsAddr)
		scheme, host, mode, mapped = "https", egressName+":"+tlsPort, "proxy", egressName+"="+o.tlsAddr
		args = append(args, "--secret", "BENCH_TOKEN="+egressName, "--ca-file", o.certFile)
	}
	args = append(args, "--network", network)
	if network == "allowlist" {
		args = append(args, "--allow-domain", host)
	}
	args = append(args, "-c", fmt.Sprintf("%s %s %s://%s/big %s://%s/small %d", probe, mode, scheme, host, scheme, host, ec.Requests))
	ctx, cancel := context.WithTimeout(context.Background(), ec.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, seam, args...)
	cmd.Env = append(os.Environ(), "BOXSH_PROXY_HOSTS="+mapped, "BENCH_TOKEN=bench_0123456789abcdefghij")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return egressRound{}, fmt.Errorf("%v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	r, err := parseProbe(stdout.String(), ec.Bytes, o.sum)
	if err != nil {
		return egressRound{}, fmt.Errorf("%w\nstderr: %s", err, stderr.String())
	}
	if len(r.Small) != ec.Requests {
		return egressRound{}, fmt.Errorf("%d small requests timed, want %d", len(r.Small), ec.Requests)
	}
	if want := egressProto(way); r.Proto != want {
		return egressRound{}, fmt.Errorf("the download spoke %q, want %q", r.Proto, want)
	}
	return r, nil
}

// parseProbe reads the probe's output: "download BYTES CRC NANOS", then
// "small NANOS..." Each must be there, and the body must have arrived
// whole: its length and CRC-32C those of the origin's.
func parseProbe(out string, size int64, sum uint32) (egressRound, error) {
	var r egressRound
	var got bool
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		switch {
		case len(f) == 4 && f[0] == "download":
			n, err1 := strconv.ParseInt(f[1], 10, 64)
			crc, err2 := strconv.ParseUint(f[2], 16, 32)
			ns, err3 := strconv.ParseInt(f[3], 10, 64)
			if err := errors.Join(err1, err2, err3); err != nil {
				return r, fmt.Errorf("probe: %q: %w", line, err)
			}
			if n != size || uint32(crc) != sum {
				return r, fmt.Errorf("probe: the body arrived as %d bytes of CRC %08x, want %d bytes of CRC %08x", n, crc, size, sum)
			}
			r.Download, got = time.Duration(ns), true
		case len(f) == 2 && f[0] == "proto":
			r.Proto = f[1]
		case len(f) >= 1 && f[0] == "small":
			for _, v := range f[1:] {
				ns, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return r, fmt.Errorf("probe: small request time %q: %w", v, err)
				}
				r.Small = append(r.Small, time.Duration(ns))
			}
		}
	}
	if !got {
		return r, fmt.Errorf("probe: no download line in %q", out)
	}
	return r, nil
}

// egressSummary is one way's figures over the rounds.
type egressSummary struct {
	Download sample // each round's download
	Small    sample // each round's median small request
	Added    sample // each round's median small request less direct's that round
}

func summarize(res egressResult) map[string]egressSummary {
	m := map[string]egressSummary{}
	for _, way := range egressWays {
		var s egressSummary
		if len(res[way]) == 0 {
			continue
		}
		for i, r := range res[way] {
			med := sample(r.Small).median()
			s.Download = append(s.Download, r.Download)
			s.Small = append(s.Small, med)
			if d := res["direct"]; i < len(d) {
				s.Added = append(s.Added, med-sample(d[i].Small).median())
			}
		}
		m[way] = s
	}
	return m
}

// writeEgress prints the medians over the rounds, with their ranges, and
// the ratios to direct.
func writeEgress(w io.Writer, res egressResult, ec egressConfig, loadBefore, loadAfter string) {
	sums := summarize(res)
	fmt.Fprintf(w, "egress: %d rounds, each way a %s download and %d small requests a round (direct: --network allow_all to the origin's loopback address; load %s before, %s after)\n",
		ec.Rounds, sizeText(ec.Bytes), ec.Requests, loadBefore, loadAfter)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "way\tdownload ms\tvs direct\tMB/s\tsmall request ms\tadded ms")
	direct := sums["direct"].Download.median()
	for _, way := range egressWays {
		s, ok := sums[way]
		if !ok {
			continue
		}
		dl := s.Download.median()
		rate := float64(ec.Bytes) / 1e6 / dl.Seconds()
		added, vs := "-", "-"
		if direct > 0 {
			vs = fmt.Sprintf("%.2fx", float64(dl)/float64(direct))
		}
		if way != "direct" && len(s.Added) > 0 {
			added = medianRange(s.Added, 3)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.0f\t%s\t%s\n", way, medianRange(s.Download, 1), vs, rate,
			medianRange(s.Small, 3), added)
	}
	tw.Flush()
	fmt.Fprintln(w, "(medians over the rounds, ranges after; small request: each round's median; added: that less direct's in the same round)")
	if tun, term := sums["tunnel"].Download, sums["terminated"].Download; len(tun) > 0 && len(term) > 0 {
		var ratios []float64
		for i := range min(len(tun), len(term)) {
			ratios = append(ratios, float64(term[i])/float64(tun[i]))
		}
		slices.Sort(ratios)
		fmt.Fprintf(w, "terminated against tunnel, download, per round: %.2fx (%.2f–%.2f)\n", ratios[len(ratios)/2], ratios[0], ratios[len(ratios)-1])
	}
}

// medianRange is "median (min–max)" of s in milliseconds.
func medianRange(s sample, prec int) string {
	return fmt.Sprintf("%.*f (%.*f–%.*f)", prec, ms(s.median()), prec, ms(s.percentile(0.0001)), prec, ms(s.percentile(100)))
}

func sizeText(n int64) string {
	if n%1_000_000 == 0 {
		return strconv.FormatInt(n/1_000_000, 10) + " MB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// origin is the stand-in origin server on the loopback, over HTTP and
// HTTPS.
type origin struct {
	addr    string
	tlsAddr string
	// certFile is its certificate (for egressName), which is its root.
	certFile string
	sum      uint32 // CRC-32C of the large body
	close    func()
}

// originBlock is the length of the block the large body repeats; not a
// power of two, so that a chunk lost or repeated shows in the checksum.
const originBlock = 1<<20 + 7

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// startOrigin serves /big, size bytes of a repeated pseudo-random block,
// and /small, a 3-byte body, on two loopback ports, over HTTP and HTTPS;
// it writes its certificate into dir.
func startOrigin(size int64, dir string) (*origin, error) {
	block := make([]byte, originBlock)
	x := uint64(0x9e3779b97f4a7c15)
	for i := range block {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		block[i] = byte(x)
	}
	var sum uint32
	for left := size; left > 0; {
		n := min(left, int64(len(block)))
		sum = crc32.Update(sum, castagnoli, block[:n])
		left -= n
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/big", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
		for left := size; left > 0; {
			n := min(left, int64(len(block)))
			if _, err := w.Write(block[:n]); err != nil {
				return
			}
			left -= n
		}
	})
	mux.HandleFunc("/small", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", "3")
		_, _ = io.WriteString(w, "ok\n")
	})
	cert, certPEM, err := originCert()
	if err != nil {
		return nil, err
	}
	// Not .pem: the default policy denies reading those.
	certFile := filepath.Join(dir, "origin.crt")
	if err := os.WriteFile(certFile, certPEM, 0o644); err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("origin: %w", err)
	}
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("origin: %w", err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	tsrv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}}
	done := make(chan struct{}, 2)
	go func() { _ = srv.Serve(l); done <- struct{}{} }()
	go func() { _ = tsrv.ServeTLS(tl, "", ""); done <- struct{}{} }()
	return &origin{addr: l.Addr().String(), tlsAddr: tl.Addr().String(), certFile: certFile, sum: sum, close: func() {
		srv.Close()
		tsrv.Close()
		<-done
		<-done
	}}, nil
}

// originCert is a self-signed certificate for egressName, and its PEM.
func originCert() (tls.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: egressName},
		DNSNames:              []string{egressName},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

// egressProbeSource is the probe: `probe proxy|noproxy[-h2] BIG SMALL N`
// GETs BIG and prints "download BYTES CRC32C NANOS" and "proto PROTO", then
// GETs SMALL N times and prints "small NANOS...". With proxy it uses the proxy variables; with
// noproxy it connects itself, as a program with its own HTTP stack does. It
// speaks HTTP/1.1 over TLS, but with -h2, which lets it agree on HTTP/2.
const egressProbeSource = `package main

import (
	"crypto/tls"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

func main() {
	tr := &http.Transport{Proxy: nil}
	if !strings.HasPrefix(os.Args[1], "noproxy") {
		tr.Proxy = http.ProxyFromEnvironment
	}
	if !strings.HasSuffix(os.Args[1], "-h2") {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	c := &http.Client{Transport: tr, Timeout: 2 * time.Minute}
	table := crc32.MakeTable(crc32.Castagnoli)
	buf := make([]byte, 256<<10)

	start := time.Now()
	resp, err := c.Get(os.Args[2])
	if err != nil {
		fail(err)
	}
	var n int64
	var sum uint32
	for {
		k, err := resp.Body.Read(buf)
		n += int64(k)
		sum = crc32.Update(sum, table, buf[:k])
		if err == io.EOF {
			break
		}
		if err != nil {
			fail(err)
		}
	}
	took := time.Since(start)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		fail(fmt.Errorf("download: %s", resp.Status))
	}
	fmt.Printf("download %d %08x %d\n", n, sum, took.Nanoseconds())
	fmt.Printf("proto %s\n", resp.Proto)

	count, _ := strconv.Atoi(os.Args[4])
	var b strings.Builder
	b.WriteString("small")
	for range count {
		start := time.Now()
		resp, err := c.Get(os.Args[3])
		if err != nil {
			fail(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		took := time.Since(start)
		if err != nil || resp.StatusCode != 200 || string(body) != "ok\n" {
			fail(fmt.Errorf("small request: %s %q %v", resp.Status, body, err))
		}
		fmt.Fprintf(&b, " %d", took.Nanoseconds())
	}
	fmt.Println(b.String())
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "probe:", err)
	os.Exit(1)
}
`

// buildEgressProbe builds the probe into a directory of its own under dir
// (for the sandbox to bind read-only) and returns its path.
func buildEgressProbe(ctx context.Context, dir string) (string, error) {
	src, bin := filepath.Join(dir, "probe-src"), filepath.Join(dir, "probe")
	for _, d := range []string{src, bin} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return "", err
		}
	}
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte("module egressprobe\n\ngo 1.22\n"), 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(src, "main.go"), []byte(egressProbeSource), 0o644); err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", filepath.Join(bin, "probe"), ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=mod", "GOWORK=off", "GOTOOLCHAIN=local")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build of the egress probe: %v\n%s", err, out)
	}
	// The sandbox's user must reach it through the temporary directory.
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", err
	}
	return filepath.Join(bin, "probe"), nil
}
