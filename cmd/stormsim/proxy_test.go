package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestProxyBadInput(t *testing.T) {
	faults := filepath.Join(t.TempDir(), "faults.yaml")
	if err := os.WriteFile(faults, []byte("faults:\n  - {error_rate: 0.5}\n  - {drop: hold}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"proxy"}, "--upstream URL is required"},
		{[]string{"proxy", "--upstream", "ftp://x"}, "want http://HOST:PORT"},
		{[]string{"proxy", "--upstream", "http://127.0.0.1:1", "--fault", "{drop_response: 2}"}, "--fault #1: faults[0].drop_response: must be in [0, 1], got 2"},
		{[]string{"proxy", "--upstream", "http://127.0.0.1:1", "--faults", faults}, faults + ":3: faults[1].drop: applies to drop_response"},
		{[]string{"proxy", "--upstream", "http://127.0.0.1:1", "--listen", "0.0.0.0:0"}, "not a loopback address"},
		{[]string{"proxy", "--upstream", "http://127.0.0.1:1", "extra"}, "takes no arguments"},
	} {
		_, errOut, code := runCLI(t, tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", tc.args, code, errOut, exitUsage, tc.want)
		}
	}
}

// TestProxyCommand runs `stormsim proxy` with a fault, sends requests
// through it, stops it, and reads the request log it wrote.
func TestProxyCommand(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer up.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	logPath := filepath.Join(t.TempDir(), "proxy.jsonl")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb bytes.Buffer
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"proxy", "--upstream", up.URL, "--listen", addr, "--fault", "{error_rate: 1, path: /fail, retry_after: 1s}", "--log", logPath}, &out, &errb)
	}()
	var statuses []int
	deadline := time.Now().Add(5 * time.Second)
	for _, path := range []string{"/ok", "/fail"} {
		for {
			resp, err := http.Get("http://" + addr + path)
			if err == nil {
				statuses = append(statuses, resp.StatusCode)
				resp.Body.Close()
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the proxy did not start: %v\n%s", err, errb.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if len(statuses) != 2 || statuses[0] != 200 || statuses[1] != 503 {
		t.Errorf("statuses %v, want [200 503]", statuses)
	}
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"fault":"none"`) || !strings.Contains(lines[1], `"fault":"error"`) {
		t.Errorf("log:\n%s", data)
	}
	if !strings.Contains(out.String(), "metrics at http://") {
		t.Errorf("stdout %q does not say where the metrics are", out.String())
	}
}
