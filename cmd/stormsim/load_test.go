package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stormsim/stormsim/internal/golden"
	"github.com/stormsim/stormsim/metrics"
)

func TestLoadTargetJSON(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Header.Get("X-Test") != "yes" {
			w.WriteHeader(http.StatusBadRequest)
		}
	}))
	defer srv.Close()
	pol := filepath.Join(t.TempDir(), "policy.yaml")
	require.NoError(t, os.WriteFile(pol, []byte("timeout: 1s\nretry: {max_attempts: 2}\n"), 0o644))
	out, errOut, code := runCLI(t, "load", "--target", srv.URL, "--rate", "50", "--duration", "200ms",
		"--method", "POST", "--header", "X-Test: yes", "--body", "{}", "--policy", pol, "--format", "json")
	require.Equal(t, 0, code, errOut)
	var s metrics.Summary
	require.NoError(t, json.Unmarshal([]byte(out), &s))
	require.EqualValues(t, 10, s.Requests.Offered)
	require.EqualValues(t, 10, s.Requests.Succeeded)
	require.NotNil(t, s.Load)
	require.EqualValues(t, 10, s.Load.Statuses["200"])
}

func TestLoadRejectsBadInput(t *testing.T) {
	_, errOut, code := runCLI(t, "load", "--target", "http://10.1.2.3/", "--duration", "100ms")
	require.Equal(t, exitError1, code)
	require.Contains(t, errOut, "--allow-remote")

	pol := filepath.Join(t.TempDir(), "policy.yaml")
	require.NoError(t, os.WriteFile(pol, []byte("timeout: 1s\nretyr: {max_attempts: 2}\n"), 0o644))
	_, errOut, code = runCLI(t, "load", "--target", "http://127.0.0.1:1/", "--policy", pol)
	require.Equal(t, exitError1, code)
	require.Contains(t, errOut, "policy.yaml:2: client.retyr: unknown key (did you mean retry?)")

	_, errOut, code = runCLI(t, "load", "--target", "http://127.0.0.1:1/", "--header", "no colon")
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, "Name: value")

	_, _, code = runCLI(t, "load")
	require.Equal(t, exitUsage, code)
}

func TestLoadScenarioAmplification(t *testing.T) {
	out, errOut, code := runCLI(t, "load", "five-layer-chain", "--set", "duration=1s", "--set", "warmup=0s", "--format", "json")
	require.Equal(t, 0, code, errOut)
	var s metrics.Summary
	require.NoError(t, json.Unmarshal([]byte(out), &s))
	require.NotZero(t, s.Requests.Offered)
	require.Equal(t, s.Requests.Offered, s.Requests.Failed)
	// Real HTTP, same arithmetic as the simulator: 3⁵ attempts at s5.
	require.Equal(t, "s5", s.Services[4].Name)
	require.InDelta(t, 243, s.Services[4].Amplification, 1e-9)
}

// syncBuffer is a bytes.Buffer safe to read while the command writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestServePrintsAddressesAndServesStats(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb syncBuffer
	done := make(chan int)
	go func() { done <- run(ctx, []string{"serve", "five-layer-chain"}, &out, &errb) }()
	re := regexp.MustCompile(`stats: (http://127\.0\.0\.1:\d+/stats)`)
	var statsURL string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := re.FindAllStringSubmatch(out.String(), -1); len(m) == 5 {
			statsURL = m[4][1]
			break
		}
	}
	require.NotEmpty(t, statsURL, "serve printed: %s %s", out.String(), errb.String())
	resp, err := http.Get(statsURL)
	require.NoError(t, err)
	var st struct{ Service string }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
	resp.Body.Close()
	require.Equal(t, "s5", st.Service)
	cancel()
	select {
	case code := <-done:
		require.Equal(t, 0, code, errb.String())
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop after its context ended")
	}

	_, errOut, code := runCLI(t, "serve", "five-layer-chain", "--listen", "0.0.0.0:0")
	require.Equal(t, exitError1, code)
	require.Contains(t, errOut, "--allow-remote")
}

func TestLoadAndServeHelpGolden(t *testing.T) {
	for _, name := range []string{"load", "serve"} {
		out, errOut, code := runCLI(t, "help", name)
		require.Equal(t, 0, code, errOut)
		golden.Check(t, "testdata/help-"+name+".txt", []byte(out))
	}
}

func FuzzParseHeaders(f *testing.F) {
	for _, s := range []string{"A: b", "Content-Type: application/json", "no colon", ": empty", "X:  spaced  ", "Bad Name: v"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, err := parseHeaders([]string{s})
		if err != nil {
			return
		}
		if len(h) != 1 {
			t.Fatalf("parseHeaders(%q) = %v, want one header", s, h)
		}
	})
}

func FuzzReadPolicy(f *testing.F) {
	for _, s := range []string{"timeout: 1s\n", "retry: {max_attempts: 3}\n", "budget: {kind: ratio, ratio: 0.1}\n", "nope: 1\n", "- a\n", ""} {
		f.Add(s)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, s string) {
		p := filepath.Join(dir, "policy.yaml")
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		// It must not panic; errors name the file.
		if _, err := readPolicy(p); err != nil {
			require.Contains(t, err.Error(), "policy.yaml")
		}
	})
}
