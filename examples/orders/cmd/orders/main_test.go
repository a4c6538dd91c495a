package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"-bug", "typo"}, `unknown bug "typo"`},
		{[]string{"-work", "-1s"}, "Work must be >= 0"},
		{[]string{"-mismatch-status", "200"}, "MismatchStatus must be a 4xx status"},
		{[]string{"-crash-every", "-2"}, "-crash-every: must be >= 0, got -2"},
		{[]string{"-listen", "0.0.0.0:8081"}, "not a loopback address"},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"-nope"}, "flag provided but not defined: -nope"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(tc.args, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), tc.msg) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr.String(), tc.msg)
		}
	}
}

// TestTwoProcesses starts two instances of the built command on one SQLite
// file and sends concurrent first requests with one key to both: the
// database alone must make them one order.
func TestTwoProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts two processes")
	}
	bin := filepath.Join(t.TempDir(), "orders")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "orders.db")
	var urls []string
	for range 2 {
		cmd := exec.Command(bin, "-listen", "127.0.0.1:0", "-db", dsn, "-work", "300ms")
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			cmd.Process.Signal(syscall.SIGTERM)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("orders exited: %v", err)
				}
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				t.Error("orders did not stop on SIGTERM")
			}
		})
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err != nil {
			t.Fatalf("reading the listen line: %v", err)
		}
		m := regexp.MustCompile(`listening on (http://\S+)`).FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("no address in %q", line)
		}
		urls = append(urls, m[1])
	}
	const n = 4
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("POST", urls[i%2]+"/orders", strings.NewReader(`{"sku":"s","qty":1}`))
			req.Header.Set("Idempotency-Key", "k1")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			statuses[i] = resp.StatusCode
		}()
	}
	wg.Wait()
	resp, err := http.Get(urls[1] + "/orders?key=k1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v struct{ Count int }
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(v.Count, " ", countOf(statuses, 201), " ", countOf(statuses, 425)); got != "1 1 3" {
		t.Errorf("orders, 201s, 425s = %s, want 1 1 3 (statuses %v)", got, statuses)
	}
}

func countOf(xs []int, x int) int {
	n := 0
	for _, v := range xs {
		if v == x {
			n++
		}
	}
	return n
}
