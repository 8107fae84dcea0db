package main

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/networkio/webchecker/e2e/bench/tlsca"
)

// serveCommand is the hidden first argument that makes the bench binary
// (or its test binary, see TestMain) the target server instead.
const serveCommand = "serve"

// listeningPrefix starts the line on which the target server prints its
// address.
const listeningPrefix = "listening on "

// connectionsPath is the path at which the target server answers with the
// number of connections it has accepted so far.
const connectionsPath = "/connections"

// isServe reports whether args (os.Args) ask for the target server.
func isServe(args []string) bool { return len(args) > 1 && args[1] == serveCommand }

// The lines on which the target server prints its other addresses.
const (
	// tlsPrefix starts the line of its https address.
	tlsPrefix = "tls on "
	// spreadPrefix starts the line of its spread addresses, separated by
	// commas.
	spreadPrefix = "spread on "
)

// serveFlags are the target server's arguments after serveCommand.
type serveFlags struct {
	// tlsDir holds cert.pem and key.pem: it serves https too.
	tlsDir string
	// spread is how many more addresses it serves http on:
	// 127.0.1.1, 127.0.1.2, ..., a free port each.
	spread int
}

func (f serveFlags) args() []string {
	args := []string{serveCommand}
	if f.tlsDir != "" {
		args = append(args, "--tls-dir", f.tlsDir)
	}
	if f.spread > 0 {
		args = append(args, "--spread", strconv.Itoa(f.spread))
	}
	return args
}

// parseServeFlags parses the target server's arguments (os.Args[2:]).
func parseServeFlags(args []string) (serveFlags, error) {
	var f serveFlags
	fs := flag.NewFlagSet(serveCommand, flag.ContinueOnError)
	fs.StringVar(&f.tlsDir, "tls-dir", "", "Directory of cert.pem and key.pem; serve https too.")
	fs.IntVar(&f.spread, "spread", 0, "Serve http on this many more addresses, 127.0.1.1 onwards.")
	if err := fs.Parse(args); err != nil {
		return serveFlags{}, fmt.Errorf("parsing the target server's flags: %w", err)
	}
	if f.spread < 0 || f.spread > maxSpread {
		return serveFlags{}, fmt.Errorf("--spread %d: from 0 to %d", f.spread, maxSpread)
	}
	return f, nil
}

// maxSpread bounds the spread addresses: 127.0.1.1 to 127.0.1.254.
const maxSpread = 254

// serve runs the target server: HTTP/1.1 on a free port of 127.0.0.1,
// answering every request with 200 and "ok\n" (connectionsPath with the
// number of connections accepted on every address), keep-alive allowed;
// with its flags, https on another port and http on more addresses. It
// prints its addresses on stdout, then serves until it is killed.
func serve() error {
	flags, err := parseServeFlags(os.Args[2:])
	if err != nil {
		return err
	}
	var accepted atomic.Int64
	srv := newTargetServer(&accepted)
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listening: %w", err)
	}
	errs := make(chan error, 2+flags.spread)
	go func() { errs <- srv.Serve(ln) }()
	if flags.tlsDir != "" {
		addr, err := serveTLS(srv, flags.tlsDir, errs)
		if err != nil {
			return err
		}
		fmt.Println(tlsPrefix + addr)
	}
	var spread []string
	for i := range flags.spread {
		l, err := net.Listen("tcp4", fmt.Sprintf("127.0.1.%d:0", i+1))
		if err != nil {
			return fmt.Errorf("listening on a spread address: %w", err)
		}
		go func() { errs <- srv.Serve(l) }()
		spread = append(spread, l.Addr().String())
	}
	if len(spread) > 0 {
		fmt.Println(spreadPrefix + strings.Join(spread, ","))
	}
	// The address of 127.0.0.1 comes last: the parent waits for it.
	fmt.Println(listeningPrefix + ln.Addr().String())
	return fmt.Errorf("serving: %w", <-errs)
}

// newTargetServer is the target's server, counting the connections it
// accepts on every listener.
func newTargetServer(accepted *atomic.Int64) *http.Server {
	body := []byte("ok\n")
	return &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			if r.URL.Path == connectionsPath {
				_, _ = fmt.Fprintln(w, accepted.Load())
				return
			}
			_, _ = w.Write(body)
		}),
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				accepted.Add(1)
			}
		},
		ReadHeaderTimeout: 10 * time.Second,
		// A client that closes mid-handshake is no news.
		ErrorLog: log.New(io.Discard, "", 0),
	}
}

// serveTLS serves srv over TLS on a free port of 127.0.0.1 with the
// certificate in dir and returns the address.
func serveTLS(srv *http.Server, dir string, errs chan<- error) (string, error) {
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"))
	if err != nil {
		return "", fmt.Errorf("loading the serving certificate: %w", err)
	}
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("listening for https: %w", err)
	}
	tl := tls.NewListener(l, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	go func() { errs <- srv.Serve(tl) }()
	return l.Addr().String(), nil
}

// target is the target server, running as a child process so that its CPU
// is not the engine's.
type target struct {
	*child
	// addr is its host:port on 127.0.0.1, tlsAddr its https one, spread
	// its other addresses.
	addr, tlsAddr string
	spread        []string
	// ca is the PEM certificate of the CA that signed the https
	// certificate, caFile where it is, in dir, which stop removes.
	ca          []byte
	caFile, dir string
}

// url is the URL the one-address phases request.
func (t *target) url() string { return "http://" + t.addr + "/" }

// tlsURL is the URL of the https phase.
func (t *target) tlsURL() string { return "https://" + t.tlsAddr + "/" }

// spreadURLs are the URLs of the spread phase.
func (t *target) spreadURLs() []string {
	urls := make([]string, len(t.spread))
	for i, a := range t.spread {
		urls[i] = "http://" + a + "/"
	}
	return urls
}

// connections asks the target server how many connections it has
// accepted so far (the question opens at most one of them).
func (t *target) connections() (int64, error) {
	resp, err := directClient.Get("http://" + t.addr + connectionsPath)
	if err != nil {
		return 0, fmt.Errorf("asking the target server for its connections: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, fmt.Errorf("reading the target server's connections: %w", err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("the target server's connections %q: %w", data, err)
	}
	return n, nil
}

// startTarget makes a CA, re-executes this binary as the target server,
// serving https with the CA's certificate and http on spread more
// addresses, and waits for its addresses.
func startTarget(spread int) (*target, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding the bench binary: %w", err)
	}
	ca, err := tlsca.New()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "engine-bench-target-")
	if err != nil {
		return nil, fmt.Errorf("creating the target's directory: %w", err)
	}
	for name, data := range map[string][]byte{"ca.pem": ca.CAPEM, "cert.pem": ca.CertPEM, "key.pem": ca.KeyPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("writing the target's %s: %w", name, err)
		}
	}
	c, err := startChild("target server", self, serveFlags{tlsDir: dir, spread: spread}.args())
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	t := &target{child: c, ca: ca.CAPEM, caFile: filepath.Join(dir, "ca.pem"), dir: dir}
	err = waitUntil(10*time.Second, func() error {
		lines := strings.Split(c.out.String(), "\n")
		for _, line := range lines[:len(lines)-1] { // whole lines only
			if addr, ok := strings.CutPrefix(line, tlsPrefix); ok {
				t.tlsAddr = addr
			}
			if addrs, ok := strings.CutPrefix(line, spreadPrefix); ok {
				t.spread = strings.Split(addrs, ",")
			}
			if addr, ok := strings.CutPrefix(line, listeningPrefix); ok {
				t.addr = addr
				return nil
			}
		}
		return errors.New("no address printed")
	})
	if err != nil {
		t.stop()
		return nil, fmt.Errorf("starting the target server: %w within 10s:\n%s", err, c.out.String())
	}
	return t, nil
}

// stop kills the target server and removes its certificates.
func (t *target) stop() {
	t.child.stop()
	_ = os.RemoveAll(t.dir)
}
