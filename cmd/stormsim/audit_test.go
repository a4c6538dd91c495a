package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// noDedupOrders is a service with the plainest bug: every POST is a new
// order, whatever its idempotency key.
func noDedupOrders(t *testing.T) string {
	var mu sync.Mutex
	byKey := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.Method == http.MethodPost {
			byKey[r.Header.Get("Idempotency-Key")]++
			w.WriteHeader(http.StatusCreated)
			fmt.Fprintf(w, `{"id": %d}`, len(byKey))
			return
		}
		fmt.Fprintf(w, `{"count": %d}`, byKey[r.URL.Query().Get("key")])
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func writeSpec(t *testing.T, target, extra string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.yaml")
	spec := fmt.Sprintf(`targets: [%s]
request: {method: POST, path: /orders, body: '{"qty":{n}}'}
effects:
  http: {path: '/orders?key={key}', count: '$.count'}
checks: [lost-reply]
limits: {requests: 3, time: 5s}
timeout: 1s
%s`, target, extra)
	if err := os.WriteFile(path, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestAuditExitStatuses(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String()
	l.Close()
	bad := writeSpec(t, noDedupOrders(t), "concurrent: 1\n")
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"violated", []string{"audit", writeSpec(t, noDedupOrders(t), ""), "--format", "json"}, exitViolated, `"verdict": "violated"`, "a check was violated (exit 5)"},
		{"violated text", []string{"audit", writeSpec(t, noDedupOrders(t), "")}, exitViolated, "lost-reply  violated", "exit 5"},
		{"dead target", []string{"audit", writeSpec(t, dead, "")}, exitTarget, "", "target does not answer"},
		{"bad spec", []string{"audit", bad}, exitUsage, "", bad + ":8: concurrent: must be in [2, 256], got 1"},
		{"no spec", []string{"audit"}, exitUsage, "", "want one spec file"},
		{"bad format", []string{"audit", bad, "--format", "yaml"}, exitUsage, "", "--format"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := runCLI(t, tc.args...)
			if code != tc.code || !strings.Contains(out, tc.stdout) || !strings.Contains(errOut, tc.stderr) {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s\nwant stdout to hold %q and stderr %q", code, tc.code, out, errOut, tc.stdout, tc.stderr)
			}
			if tc.code == exitViolated && strings.Contains(tc.args[len(tc.args)-1], "json") {
				var rep struct {
					Status string `json:"status"`
					Checks []struct {
						Name, Verdict string
						Evidence      []json.RawMessage
					} `json:"checks"`
				}
				if err := json.Unmarshal([]byte(out), &rep); err != nil {
					t.Fatalf("--format json: %v\n%s", err, out)
				}
				if rep.Status != "violated" || len(rep.Checks) != 1 || len(rep.Checks[0].Evidence) == 0 {
					t.Errorf("report %+v", rep)
				}
			}
		})
	}
}
