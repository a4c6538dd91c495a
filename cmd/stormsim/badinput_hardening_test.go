package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stormsim/stormsim/internal/golden"
	"github.com/stormsim/stormsim/load/serve"
	"github.com/stormsim/stormsim/load/transport"
	"github.com/stormsim/stormsim/topology"
)

// badInputDoc is the user-facing matrix this test writes under -update and
// otherwise compares with, so the document cannot drift from the CLI.
var badInputDoc = filepath.Join("..", "..", "docs", "bad-input.md")

// badInput is one mistake a user can make and what stormsim must answer.
type badInput struct {
	what string   // the mistake, in the user's words
	args []string // the command line, after "stormsim"
	code int      // the exit status
	// want must appear in the message: the position (file:line, flag or
	// --set) that tells the user where to look.
	want string
	// cancelled runs the command as if a signal had already arrived.
	cancelled bool
}

func badFile(name string) string { return filepath.Join("testdata", "bad", name) }

var badInputs = []badInput{
	// Scenario files.
	{what: "misspelled key", args: []string{"run", badFile("unknown-key.yaml")}, code: exitError1, want: "unknown-key.yaml:8: services[0].wrokers: unknown key (did you mean workers?)"},
	{what: "negative worker count", args: []string{"run", badFile("negative-workers.yaml")}, code: exitError1, want: "negative-workers.yaml:8: services[0].workers"},
	{what: "duration without a Go unit", args: []string{"run", badFile("bad-duration.yaml")}, code: exitError1, want: "bad-duration.yaml:2: duration"},
	{what: "negative arrival rate", args: []string{"run", badFile("negative-rate.yaml")}, code: exitError1, want: "negative-rate.yaml:5: workload.rate"},
	{what: "entry names no service", args: []string{"run", badFile("unknown-entry.yaml")}, code: exitError1, want: "unknown-entry.yaml:4: workload.entry"},
	{what: "two services with one name", args: []string{"run", badFile("duplicate-service.yaml")}, code: exitError1, want: "duplicate-service.yaml:10:"},
	{what: "services calling each other in a cycle", args: []string{"run", badFile("call-cycle.yaml")}, code: exitError1, want: "call-cycle.yaml:14:"},
	{what: "unknown service-time distribution", args: []string{"run", badFile("unknown-dist.yaml")}, code: exitError1, want: "unknown-dist.yaml:9:"},
	{what: "unknown outcome class in retry.on", args: []string{"run", badFile("retry-on-unknown.yaml")}, code: exitError1, want: "retry-on-unknown.yaml:6: workload.client.retry.on[1]"},
	{what: "fault on a service that does not exist", args: []string{"run", badFile("fault-unknown-service.yaml")}, code: exitError1, want: "fault-unknown-service.yaml:11: faults[0].service"},
	{what: "idempotency retention shorter than the default lease", args: []string{"run", badFile("idempotency-lease.yaml")}, code: exitError1, want: "services[0].idempotency"},
	{what: "tab indentation", args: []string{"run", badFile("tabs.yaml")}, code: exitError1, want: "tabs.yaml:4: invalid YAML: a tab in the indentation"},
	{what: "binary garbage", args: []string{"run", badFile("binary.yaml")}, code: exitError1, want: "binary.yaml:1: invalid YAML"},
	{what: "empty file", args: []string{"validate", badFile("empty.yaml")}, code: exitError1, want: "empty.yaml:1: services: required"},
	{what: "YAML alias bomb (a billion laughs)", args: []string{"run", badFile("alias-bomb.yaml")}, code: exitError1, want: "alias-bomb.yaml:1: a: unknown key"},
	{what: "a directory instead of a file", args: []string{"run", "testdata"}, code: exitError1, want: "testdata"},
	{what: "missing file", args: []string{"run", "no/such/file.yaml"}, code: exitError1, want: "no/such/file.yaml: no such file"},

	// Flags and overrides.
	{what: "--set without a value", args: []string{"run", "five-layer-chain", "--set", "workload.rate"}, code: exitError1, want: "--set workload.rate: want PATH=VALUE"},
	{what: "--set on an unknown path", args: []string{"run", "five-layer-chain", "--set", "no.such.path=1"}, code: exitError1, want: "--set no.such.path=1"},
	{what: "--set naming an unknown service", args: []string{"run", "five-layer-chain", "--set", "services.s9.workers=4"}, code: exitError1, want: "--set services.s9.workers=4"},
	{what: "--set with an invalid value", args: []string{"run", "five-layer-chain", "--set", "services.s1.workers=-4"}, code: exitError1, want: "services[0].workers: must be > 0, got -4"},
	{what: "--duration without a unit", args: []string{"run", "five-layer-chain", "--duration", "5"}, code: exitError1, want: "duration"},
	{what: "--seed not a number", args: []string{"run", "five-layer-chain", "--seed", "abc"}, code: exitUsage, want: `"--seed"`},
	{what: "--max-inflight not positive", args: []string{"run", "five-layer-chain", "--max-inflight=-5"}, code: exitError1, want: "limits.max_inflight: must be > 0"},
	{what: "--format unknown", args: []string{"run", "five-layer-chain", "--format", "xml"}, code: exitUsage, want: "--format"},
	{what: "unknown flag", args: []string{"run", "five-layer-chain", "--no-such-flag"}, code: exitUsage, want: "--no-such-flag"},
	{what: "unknown command", args: []string{"frobnicate"}, code: exitUsage, want: `"frobnicate"`},
	{what: "misspelled command", args: []string{"comapre", "retry-storm"}, code: exitUsage, want: `unknown command "comapre" (did you mean compare?)`},
	{what: "misspelled SLO metric", args: []string{"run", "five-layer-chain", "--slo", "p9<1s"}, code: exitUsage, want: `unknown metric "p9" (did you mean p90?)`},
	{what: "sweep without --param", args: []string{"sweep", "five-layer-chain", "--values", "1,2"}, code: exitUsage, want: "param"},
	{what: "sweep range going backwards", args: []string{"sweep", "five-layer-chain", "--param", "workload.rate", "--range", "10:1:5"}, code: exitUsage, want: `range "10:1:5"`},
	{what: "sweep value the path cannot take", args: []string{"sweep", "five-layer-chain", "--param", "workload.rate", "--values", "1,x"}, code: exitError1, want: "--param workload.rate=x"},
	{what: "compare variant without overrides", args: []string{"compare", "five-layer-chain", "--variant", "nocolon"}, code: exitUsage, want: `variant "nocolon"`},
	{what: "compare variant on an unknown service", args: []string{"compare", "five-layer-chain", "--variant", "x:services.nope.workers=1"}, code: exitError1, want: "variant x"},
	{what: "tune samples with a bad line", args: []string{"tune", "--deadline", "1s", "--hops", "api=" + filepath.Join("testdata", "tune", "bad.txt")}, code: exitError1, want: "bad.txt:"},
	{what: "plot of a missing results directory", args: []string{"plot", filepath.Join("testdata", "bad", "no-such-dir")}, code: exitError1, want: "no-such-dir"},

	// Load and serve: nothing leaves the loopback interface unasked.
	{what: "load target off the loopback interface", args: []string{"load", "--target", "http://192.0.2.1:80/", "--duration", "1s"}, code: exitError1, want: "--allow-remote"},
	{what: "load target not HTTP", args: []string{"load", "--target", "ftp://127.0.0.1/"}, code: exitError1, want: "ftp://127.0.0.1/"},
	{what: "load gRPC target without a method", args: []string{"load", "--target", "grpc://127.0.0.1:9/pkg.Service"}, code: exitError1, want: "grpc://HOST:PORT/pkg.Service/Method"},
	{what: "load gRPC service config with a JSON error", args: []string{"load", "--target", "grpc://127.0.0.1:9/a.B/C", "--grpc-service-config", badFile("grpc-service-config.json")}, code: exitError1, want: "grpc-service-config.json:3:"},
	{what: "load unknown protocol", args: []string{"load", "five-layer-chain", "--protocol", "quic"}, code: exitUsage, want: "--protocol"},
	{what: "load rate zero", args: []string{"load", "--target", "http://127.0.0.1:9/", "--rate", "0"}, code: exitUsage, want: "--rate"},
	{what: "load header without a colon", args: []string{"load", "--target", "http://127.0.0.1:9/", "--header", "Bad"}, code: exitUsage, want: "--header"},
	{what: "load --policy with a misspelled key", args: []string{"load", "--target", "http://127.0.0.1:9/", "--policy", badFile("policy-unknown-key.yaml")}, code: exitError1, want: "policy-unknown-key.yaml"},
	{what: "load --policy with a negative timeout", args: []string{"load", "--target", "http://127.0.0.1:9/", "--policy", badFile("policy-negative.yaml")}, code: exitError1, want: "timeout"},
	{what: "serve on all interfaces", args: []string{"serve", "five-layer-chain", "--listen", "0.0.0.0:0"}, code: exitError1, want: "--allow-remote"},
	{what: "serve on a malformed address", args: []string{"serve", "five-layer-chain", "--listen", "nonsense"}, code: exitError1, want: `"nonsense"`},

	// Runs that stop early.
	{what: "a storm that grows without bound", args: []string{"run", badFile("runaway.yaml"), "--max-inflight", "20000", "--format", "json"}, code: exitDiverged, want: "largest queue: api"},
	{what: "SIGINT or SIGTERM during a run", args: []string{"run", badFile("runaway.yaml"), "--format", "json"}, code: exitInterrupted, want: "interrupted: partial results written", cancelled: true},
}

// TestBadInputMatrix runs every bad input through the CLI: each must give
// its exit status and a message naming where the problem is, never a
// panic. The table of what the user sees is docs/bad-input.md.
func TestBadInputMatrix(t *testing.T) {
	var doc bytes.Buffer
	doc.WriteString(`# Bad input: what the user sees

Every row is run by ` + "`TestBadInputMatrix`" + ` in cmd/stormsim, which also checks the exit
status and that the message names the place to look (file and line, flag, or ` + "`--set`" + `).
Regenerate this file with ` + "`go test ./cmd/stormsim -run TestBadInputMatrix -update`" + `; without
` + "`-update`" + ` the test fails when the CLI and this page disagree. The scenario files are in
cmd/stormsim/testdata/bad/.

Exit statuses: 0 success, 1 bad input or failure, 2 usage, 3 the simulated system diverged
(results up to then written), 4 the run completed but breached its --slo (results written,
the breached terms named), 130 interrupted (partial results written, marked as such).

| input | command | exit | what the user sees (stderr) |
|---|---|---|---|
`)
	for _, c := range badInputs {
		ctx := context.Background()
		if c.cancelled {
			cctx, cancel := context.WithCancel(ctx)
			cancel()
			ctx = cctx
		}
		var stdout, stderr bytes.Buffer
		code := run(ctx, c.args, &stdout, &stderr)
		msg := stderr.String()
		require.True(t, strings.HasPrefix(msg, "stormsim "+c.args[0]+": ") || strings.HasPrefix(msg, "stormsim: unknown command "),
			"%s: message does not say which command: %q", c.what, msg)
		if c.args[0] == "validate" {
			// validate reports every problem on stdout, one per line.
			msg += stdout.String()
		}
		require.Equal(t, c.code, code, "%s: stderr:\n%s", c.what, msg)
		require.NotContains(t, msg, "panic", c.what)
		require.NotContains(t, msg, "goroutine ", c.what)
		require.Contains(t, msg, c.want, c.what)
		fmt.Fprintf(&doc, "| %s | %s | %d | %s |\n", mdCell(c.what), "<code>stormsim "+mdCell(strings.Join(c.args, " "))+"</code>", code, codeLines(msg))
	}
	serveRequests(t, &doc)
	writePeerLimits(&doc)
	golden.Check(t, badInputDoc, doc.Bytes())
}

// cellEscaper keeps text literal inside a Markdown table cell holding HTML.
var cellEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "|", "&#124;")

// mdCell escapes text for a Markdown table cell.
func mdCell(s string) string { return cellEscaper.Replace(s) }

// codeLines renders a multi-line message inside one table cell.
func codeLines(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = mdCell(l)
	}
	return "<code>" + strings.Join(lines, "<br>") + "</code>"
}

// badRequest is one malformed request to an emulated service.
type badRequest struct {
	what   string
	header map[string]string
	body   int // bytes of body (POST when > 0)
	status int
	// want must begin the answer's body: what was at fault.
	want string
}

var badRequests = []badRequest{
	{what: "header block over 64 KiB", header: map[string]string{"X-Padding": strings.Repeat("a", 100<<10)}, status: http.StatusRequestHeaderFieldsTooLarge, want: "431"},
	{what: "body over 1 MiB", body: 2 << 20, status: http.StatusRequestEntityTooLarge, want: "request body:"},
	{what: "deadline that is not a number", header: map[string]string{transport.HeaderDeadline: "soon"}, status: http.StatusBadRequest, want: transport.HeaderDeadline + ":"},
	{what: "deadline out of range", header: map[string]string{transport.HeaderDeadline: "1e300"}, status: http.StatusBadRequest, want: transport.HeaderDeadline + ":"},
	{what: "idempotency key over 256 bytes", header: map[string]string{transport.HeaderWrite: "1", transport.HeaderIdempotencyKey: strings.Repeat("k", 300)}, status: http.StatusBadRequest, want: transport.HeaderIdempotencyKey + ":"},
}

// serveRequests sends each bad request to a running emulated service on
// loopback and appends what a client sees to the matrix.
func serveRequests(t *testing.T, doc *bytes.Buffer) {
	t.Helper()
	sc, err := topology.Parse("serve.yaml", []byte(`name: serve
duration: 10s
workload: {entry: api, rate: 1}
services:
  - name: api
    workers: 2
    service_time: {dist: constant, value: 1ms}
`), nil)
	require.NoError(t, err)
	cl, err := serve.StartCluster(sc, serve.ClusterOptions{Listen: "127.0.0.1:0"})
	require.NoError(t, err)
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		cl.Close(ctx)
	}()
	client := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	doc.WriteString(`
## Requests to ` + "`stormsim serve`" + `

What an HTTP client sees from an emulated service when its request is malformed or too
large. The load driver classifies each as an error. The service's own refusals (all but 431,
which net/http sends before the service sees the request) ask not to retry
(` + "`" + transport.HeaderDontRetry + "`" + `) and count as rejected in its stats.

| request | status | outcome header | body |
|---|---|---|---|
`)
	for _, c := range badRequests {
		method, body := http.MethodGet, io.Reader(nil)
		if c.body > 0 {
			method, body = http.MethodPost, bytes.NewReader(make([]byte, c.body))
		}
		req, err := http.NewRequest(method, cl.URLs["api"], body)
		require.NoError(t, err)
		for k, v := range c.header {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		require.NoError(t, err, c.what)
		b, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, c.status, resp.StatusCode, c.what)
		require.True(t, strings.HasPrefix(string(b), c.want), "%s: body %q", c.what, b)
		fmt.Fprintf(doc, "| %s | %d | %s | %s |\n", mdCell(c.what), resp.StatusCode,
			mdCell(resp.Header.Get(transport.HeaderOutcome)), codeLines(string(b)))
	}
}
