package main

import (
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stormsim/stormsim/tune"
)

// The tests never read the test binary's own stdin: a pipe left open by
// whoever started them would block `load` without a target.
func init() { stdinFile = nil }

func TestParseRate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
	}{
		{"300", 300}, {"300/s", 300}, {"300/1s", 300}, {"1000/1m", 1000.0 / 60}, {"5/100ms", 50},
		{"2/2s", 1}, {" 10 / s ", 10}, {"0.5", 0.5}, {"90/m", 1.5}, {"7200/h", 2}, {"1/.5s", 2},
		{"0", 0}, {"-1", -1}, // refused later, with the flag's old message
	} {
		got, err := parseRate(tc.in)
		if err != nil || math.Abs(got-tc.want) > 1e-9*math.Abs(tc.want) {
			t.Errorf("parseRate(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"", "abc", "5/", "5/0s", "5/x", "/s", "NaN", "Inf", "1e10", "5/-1s"} {
		if v, err := parseRate(in); err == nil {
			t.Errorf("parseRate(%q) = %v, want an error", in, v)
		}
	}
}

func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"300", "300/s", "1000/1m", "5/100ms", "1/0s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseRate(s)
		if err == nil && (math.IsInf(v, 0) || math.IsNaN(v) || math.Abs(v) > 1e9) {
			t.Fatalf("parseRate(%q) = %v", s, v)
		}
	})
}

// TestLoadBadFlagValues: each bad value is a usage error naming its flag.
func TestLoadBadFlagValues(t *testing.T) {
	pol := filepath.Join(t.TempDir(), "policy.yaml")
	require.NoError(t, os.WriteFile(pol, []byte("timeout: 1s\n"), 0o644))
	const u = "http://127.0.0.1:1/"
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--rate", "abc"}, `invalid argument "abc" for "--rate" flag`},
		{[]string{"--rate", "10/0s"}, `"--rate" flag`},
		{[]string{"--rate", "0/s"}, "--rate: must be > 0, got 0"},
		{[]string{"--timeout", "0s"}, "--timeout: must be > 0"},
		{[]string{"--retries", "-1"}, "--retries: must be in 0..100, got -1"},
		{[]string{"--retries", "1", "--retry-on", "bogus"}, `--retry-on: unknown outcome class "bogus"`},
		{[]string{"--retry-on", "timeout"}, "--retry-on: give --retries too"},
		{[]string{"--retries", "2", "--policy", pol}, "--retries: not with --policy"},
		{[]string{"--max-workers", "0"}, "--max-workers: must be > 0"},
		{[]string{"--max-workers", "3", "--workers", "4"}, "--max-workers 3 and --workers 4: give one of them"},
		{[]string{"--key-header", "bad name"}, `--key-header: load: key header "bad name"`},
		{[]string{"--tenant", "a\nb"}, "--tenant: load: tenant"},
		{[]string{"--tenant-header", "x y"}, "--tenant-header:"},
		{[]string{"-H", "nocolon"}, "--header \"nocolon\": want 'Name: value'"},
	} {
		_, errOut, code := runCLI(t, append([]string{"load", "--target", u, "--duration", "100ms"}, tc.args...)...)
		if code != exitUsage || !strings.Contains(errOut, tc.msg) {
			t.Errorf("%v: exit %d, %q; want %d and %q", tc.args, code, errOut, exitUsage, tc.msg)
		}
	}
	_, errOut, code := runCLI(t, "load", "five-layer-chain", "--retries", "2")
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, "--retries applies to --target only")
}

// arrivedRequest is what the test target saw of one attempt.
type arrivedRequest struct {
	method, attempt, key, tenant, custom, body string
}

// recorder is a target recording every attempt, answering 503 to each
// first attempt and 200 after.
func recorder(t *testing.T) (*httptest.Server, func() []arrivedRequest) {
	var mu sync.Mutex
	var got []arrivedRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, arrivedRequest{r.Method, r.Header.Get("X-Stormsim-Attempt"), r.Header.Get("Idempotency-Key"),
			r.Header.Get("X-Tenant"), r.Header.Get("X-From"), string(b)})
		mu.Unlock()
		if r.Header.Get("X-Stormsim-Attempt") == "1" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, func() []arrivedRequest {
		mu.Lock()
		defer mu.Unlock()
		return append([]arrivedRequest(nil), got...)
	}
}

// TestLoadWriteTraffic drives a POST with a body template, a quick retry
// policy, a tenant and -H, and writes the attempts as vegeta results:
// every attempt of an intent carries its one key and body, and tune reads
// the results file back.
func TestLoadWriteTraffic(t *testing.T) {
	srv, got := recorder(t)
	out := filepath.Join(t.TempDir(), "results.json")
	_, errOut, code := runCLI(t, "load", "--target", srv.URL+"/orders", "--method", "POST", "--rate", "20/s",
		"--duration", "200ms", "--body", `{"qty":{n},"k":"{key}"}`, "--key-prefix", "t-", "--tenant", "acme",
		"-H", "X-From: flag", "--retries", "1", "--retry-on", "unavailable", "--timeout", "2s", "--output", out, "--format", "json")
	require.Equal(t, 0, code, errOut)
	reqs := got()
	require.Len(t, reqs, 8, "4 intents × 2 attempts")
	byKey := map[string][]arrivedRequest{}
	for _, r := range reqs {
		byKey[r.key] = append(byKey[r.key], r)
	}
	require.Len(t, byKey, 4)
	for key, rs := range byKey {
		n := strings.TrimPrefix(key, "t-")
		for _, r := range rs {
			require.Equal(t, arrivedRequest{"POST", r.attempt, key, "acme", "flag", `{"qty":` + n + `,"k":"` + key + `"}`}, r)
		}
	}
	f, err := os.Open(out)
	require.NoError(t, err)
	defer f.Close()
	res, err := tune.ReadVegeta(f, out)
	require.NoError(t, err)
	require.Equal(t, map[int]int{200: 4, 503: 4}, res.ByCode)

	// --no-key: no key at all; a GET: no key unless asked.
	for _, args := range [][]string{{"--method", "POST", "--no-key"}, {"--method", "GET"}} {
		srv, got := recorder(t)
		_, errOut, code := runCLI(t, append([]string{"load", "--target", srv.URL, "--rate", "20", "--duration", "100ms", "--retries", "1"}, args...)...)
		require.Equal(t, 0, code, errOut)
		require.NotEmpty(t, got())
		for _, r := range got() {
			require.Empty(t, r.key, "%v", args)
		}
	}
}

// TestLoadTargetsFromStdin reads vegeta's "METHOD URL" lines from stdin,
// with --target - and with stdin a file and no target named.
func TestLoadTargetsFromStdin(t *testing.T) {
	t.Cleanup(func() { stdinFile = nil })
	srv, got := recorder(t)
	dir := t.TempDir()
	body := filepath.Join(dir, "body.json")
	require.NoError(t, os.WriteFile(body, []byte(`{"n":{n}}`), 0o644))
	stdin := func(s string) {
		p := filepath.Join(dir, "targets")
		require.NoError(t, os.WriteFile(p, []byte(s), 0o644))
		f, err := os.Open(p)
		require.NoError(t, err)
		t.Cleanup(func() { f.Close() })
		stdinFile = f
	}
	for _, target := range [][]string{{"--target", "-"}, nil} {
		stdin("# one target\nPOST " + srv.URL + "/orders\nX-From: stdin\n@" + body + "\n")
		_, errOut, code := runCLI(t, append([]string{"load", "--rate", "10", "--duration", "100ms", "--key-prefix", "s-"}, target...)...)
		require.Equal(t, 0, code, errOut)
	}
	reqs := got()
	require.Len(t, reqs, 2, "one request (one attempt) per run")
	for _, r := range reqs {
		n := strings.TrimPrefix(r.key, "s-")
		require.Equal(t, arrivedRequest{"POST", r.attempt, r.key, "", "stdin", `{"n":` + n + `}`}, r)
	}

	for _, tc := range []struct {
		in   string
		args []string
		code int
		msg  string
	}{
		{"GET " + srv.URL + "/\n\nGET " + srv.URL + "/b\n", nil, exitUsage, "stdin:3: a second target: stormsim load drives one target per run"},
		{"GET " + srv.URL + "/\n", []string{"--method", "POST"}, exitUsage, "--method POST disagrees with the target's GET on stdin:1"},
		{"GET " + srv.URL + "/\n@" + body + "\n", []string{"--body", "x"}, exitUsage, "--body and the body file"},
		{"GET\n", nil, exitError1, `stdin:1: want "METHOD URL"`},
	} {
		stdin(tc.in)
		_, errOut, code := runCLI(t, append([]string{"load", "--target", "-", "--duration", "100ms"}, tc.args...)...)
		if code != tc.code || !strings.Contains(errOut, tc.msg) {
			t.Errorf("%q %v: exit %d %q; want %d and %q", tc.in, tc.args, code, errOut, tc.code, tc.msg)
		}
	}
	stdinFile = nil
	_, errOut, code := runCLI(t, "load", "--target", "-")
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, "--target -: no standard input")
}

func TestLoadOutputUnwritable(t *testing.T) {
	srv, _ := recorder(t)
	_, errOut, code := runCLI(t, "load", "--target", srv.URL, "--duration", "100ms",
		"--output", filepath.Join(t.TempDir(), "missing", "r.json"))
	require.Equal(t, exitError1, code)
	require.Contains(t, errOut, "--output: write")
}
