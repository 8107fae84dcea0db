package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
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

// serve runs the target server: HTTP/1.1 on a free port of 127.0.0.1,
// answering every request with 200 and "ok\n" (connectionsPath with the
// number of connections accepted), keep-alive allowed. It prints its
// address on stdout, then serves until it is killed.
func serve() error {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listening: %w", err)
	}
	fmt.Println(listeningPrefix + ln.Addr().String())
	body := []byte("ok\n")
	var accepted atomic.Int64
	srv := &http.Server{
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
	}
	return fmt.Errorf("serving: %w", srv.Serve(ln))
}

// target is the target server, running as a child process so that its CPU
// is not the engine's.
type target struct {
	*child
	// addr is its host:port on 127.0.0.1.
	addr string
}

// url is the URL every phase requests.
func (t *target) url() string { return "http://" + t.addr + "/" }

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

// startTarget re-executes this binary as the target server and waits for
// its address.
func startTarget() (*target, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding the bench binary: %w", err)
	}
	c, err := startChild("target server", self, []string{serveCommand})
	if err != nil {
		return nil, err
	}
	t := &target{child: c}
	err = waitUntil(10*time.Second, func() error {
		lines := strings.Split(c.out.String(), "\n")
		for _, line := range lines[:len(lines)-1] { // whole lines only
			if addr, ok := strings.CutPrefix(line, listeningPrefix); ok {
				t.addr = addr
				return nil
			}
		}
		return errors.New("no address printed")
	})
	if err != nil {
		c.stop()
		return nil, fmt.Errorf("starting the target server: %w within 10s:\n%s", err, c.out.String())
	}
	return t, nil
}
