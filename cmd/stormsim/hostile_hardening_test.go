package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stormsim/stormsim/broker"
	"github.com/stormsim/stormsim/collapse"
	"github.com/stormsim/stormsim/inputfile"
	"github.com/stormsim/stormsim/live"
	"github.com/stormsim/stormsim/traces"
	"github.com/stormsim/stormsim/tune"
)

// The rows of issue 37 (hostile peers, files and viewers) in the
// bad-input matrix.
func init() {
	badInputs = append(badInputs,
		// Item 10: the new inputs go through the one bounded reader.
		badInput{what: "tune samples from a device", args: []string{"tune", "--deadline", "1s", "--hops", "api=/dev/zero"}, code: exitError1, want: "/dev/zero: not a regular file: it is a device"},
		badInput{what: "import traces from a device", args: []string{"import", "traces", "/dev/zero"}, code: exitError1, want: "/dev/zero: not a regular file: it is a device"},
		badInput{what: "load --tls-ca from a device", args: []string{"load", "--target", "https://127.0.0.1:9/", "--tls-ca", "/dev/zero"}, code: exitError1, want: "--tls-ca: /dev/zero: not a regular file"},
		// Item 12: collapse's parameters that ran out of memory or ran
		// until the budget.
		badInput{what: "collapse with a billion runs per level", args: []string{"collapse", badFile("mm1.yaml"), "--level", "system(s)>=10", "--within", "1m", "--effort", "1000000000"}, code: exitError1, want: "effort 1000000000: must be at most 100000"},
		badInput{what: "collapse with a precision of NaN", args: []string{"collapse", badFile("mm1.yaml"), "--level", "system(s)>=10", "--within", "1m", "--precision", "NaN"}, code: exitError1, want: "precision NaN"},
		badInput{what: "collapse within 2562047h", args: []string{"collapse", badFile("mm1.yaml"), "--level", "system(s)>=10", "--within", "2562047h"}, code: exitError1, want: "must be at most 10000h0m0s"},
		badInput{what: "collapse --method ctmc on a queue of 1e8", args: []string{"collapse", badFile("mm1.yaml"), "--level", "system(s)>=10", "--within", "1m", "--method", "ctmc", "--set", "services.s.queue=100000000"}, code: exitError1, want: "more than the 5000000 the solver holds"},
		// Item 13: credentials on the command line were printed.
		badInput{what: "--nats URL with credentials, of another scheme", args: []string{"broker", "outbox-order", "--nats", "tls://alice:hunter2@127.0.0.1:4222"}, code: exitUsage, want: `--nats: want nats://host:port, got "tls://***@127.0.0.1:4222"`},
		// Item 13: broker exited 1 on SIGINT.
		badInput{what: "SIGINT or SIGTERM during broker", args: []string{"broker", "outbox-order"}, code: exitInterrupted, want: "interrupted: nothing written", cancelled: true},
		// Item 13: an empty name was taken.
		badInput{what: "--set name= (an empty scenario name)", args: []string{"run", "five-layer-chain", "--set", "name="}, code: exitError1, want: "--set name=: name: must not be empty"},
		// Item 13: validate said ok, and compare then failed.
		badInput{what: "a variant setting an invalid value", args: []string{"validate", badFile("variant-invalid.yaml")}, code: exitError1, want: "variants[1].set: variant bad: --set services.a.workers=-3: services[0].workers: must be > 0, got -3"},
		// Item 13: --tls-ca was ignored with a plain target.
		badInput{what: "load --tls-ca with an http:// target", args: []string{"load", "--target", "http://127.0.0.1:9/", "--tls-ca", badFile("empty.yaml")}, code: exitUsage, want: "--tls-ca applies to an https:// --target"},
	)
}

// TestAttackInputFIFOsDoNotHang: a named pipe given as --tls-ca, as a
// trace file to import or as tune's samples is refused at once (it hung,
// deaf to SIGTERM, waiting for a writer).
func TestAttackInputFIFOsDoNotHang(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "pipe")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	for _, args := range [][]string{
		{"import", "traces", fifo},
		{"tune", "--deadline", "1s", "--hops", "api=" + fifo},
		{"load", "--target", "https://127.0.0.1:9/", "--tls-ca", fifo, "--duration", "1s"},
	} {
		done := make(chan struct{})
		var errOut string
		var code int
		go func() {
			defer close(done)
			_, errOut, code = runCLI(t, args...)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%v: still reading the named pipe after 10s", args)
		}
		require.Equal(t, exitError1, code, "%v: %s", args, errOut)
		require.Contains(t, errOut, "not a regular file: it is a named pipe (FIFO)", args)
	}
}

// peerLimit is one bound on what a peer (a target, a NATS or reflection
// server, a viewer) or an input file can make stormsim do, with the test
// that attacks it.
type peerLimit struct{ what, limit, sees, test string }

// peerLimits are the bounds of issue 37, as docs/bad-input.md lists them;
// the figures come from the code where it exports them.
var peerLimits = []peerLimit{
	{"a target answering 101 Switching Protocols", "the attempt ends at once", "the attempt fails as the target's error (status 101); a signal still ends the run with partial results", "load: TestAttack101SwitchingProtocolsDoesNotHang"},
	{"a target sending an answer no request asked for", "a connection with bytes left after its answer, or that received bytes while idle, is closed", "nothing: each request gets its own answer, as with net/http", "load: TestAttackLeanUnsolicitedAnswerIsNotTheNextOnes"},
	{"an answer net/http refuses (two Content-Lengths, Transfer-Encoding other than chunked, control bytes in a header)", "the lean client refuses what net/http refuses", "the attempt fails as a malformed answer", "load: TestLeanClientAnswersAsNetHTTP, FuzzLeanHead"},
	{"a NATS server announcing a huge message or line", fmt.Sprintf("a message within the server's max_payload and %s; a line within %s; no TLS", inputfile.Size(broker.MaxPeerPayload), inputfile.Size(broker.MaxPeerLine)), "the connection ends; errors name the server and the bound, e.g. <code>a message of 6000000000 bytes, over the 1048576 accepted</code>", "broker: TestAttackNATSHugeMessageIsRefused, FuzzPeerScan"},
	{"a NATS server advertising other servers (connect_urls)", "only the servers of --nats are dialed", "nothing: the advertised servers are ignored", "broker: TestAttackNATSDiscoveryStaysOnGivenServers"},
	{"a --nats URL with credentials", "userinfo is never printed", "<code>nats://***@host:port</code> in every message", "broker: TestAttackNATSCredentialsAreNotPrinted"},
	{"many concurrent big gRPC calls to serve", "256 streams a connection; fixed 64 KiB / 1 MiB flow-control windows; messages received a few at a time against the held-bodies budget (64 MiB)", "calls past the budget are refused with RESOURCE_EXHAUSTED <code>request body: the service already holds 64 MiB of request bodies, its limit</code>", "load: TestAttackGRPCConcurrentBigCallsAreBounded"},
	{"a gRPC reflection server sending descriptors without end", "1000 files, 16 MiB of descriptors, 1000 requests", "<code>server reflection at ADDR (or pass a descriptor set): ...: the server sent more than 1000 descriptor files or 16 MiB of them, the limit</code>", "load: TestAttackGRPCReflectionIsBounded"},
	{"many viewers of the live view", fmt.Sprintf("%d event streams (one more gets 503), %d connections at once (the rest wait in the kernel's backlog), idle connections closed after %v", live.DefaultMaxViewers, live.DefaultMaxViewers+4, live.IdleTimeout), "<code>live: 32 viewers already, the limit</code>", "live: TestAttackLiveViewersAreCapped"},
	{"a trace file to import", fmt.Sprintf("a regular file of at most %s; %d spans an import; about 310 bytes kept a span (names and ids shared); the heap peaks at about 460 bytes a span besides the file (a 208 MB file of 1M spans: 460 MB, 2.2× the file; 0.71 GB resident), so the limits bound an import near 256 MiB + 2M × 460 B ≈ 1.2 GB; linear time; stops on a signal (exit 130)", inputfile.Size(traces.MaxFile), traces.MaxSpans), "<code>FILE:LINE: too many spans: more than 2000000, the limit of an import (import a sample of the traces)</code>", "traces: TestAttackImportLineNumbersAreLinear, TestAttackImportChainsAndCyclesAreLinear, TestAttackImportRefusesTooManySpans, TestAttackImportMemoryPerSpanIsBounded, TestAttackImportPeakIsBounded, BenchmarkImport1MSpans"},
	{"a previous run's complete shards where merge --wait looks", "with --run LABEL, given to the shards and to the merge, only that run's shards are merged; without it, shards already complete when the wait begins are refused (they cannot be told from a previous run's of the same command)", "<code>DIR is from run monday, not from run tuesday: a previous run's output (waiting for run tuesday's)</code> while it waits, exit 1 past --wait; unlabelled, <code>the shards were already complete when --wait began (run ID): without --run they cannot be told from a previous run's of the same command; give the shards and the merge --run LABEL, or merge without --wait to take these</code>, exit 1", "cmd/stormsim: TestAttackMergeWaitIgnoresThePreviousRunsShards, TestAttackMergeWaitUnlabelledTakesThePreviousRunsShards"},
	{"names in imported traces (service.name, file names)", "control characters, line separators and invalid UTF-8 are escaped in every comment, summary line and sample header", "<code>\\x0a</code> where a newline was", "traces: TestAttackImportedNamesCannotInject"},
	{"tune's sample and vegeta files", fmt.Sprintf("a regular file of at most %s", inputfile.Size(tune.MaxInputFile)), "as for scenario files: <code>FILE: not a regular file: it is a device</code>", "cmd/stormsim: TestAttackInputFIFOsDoNotHang"},
	{"--tls-ca", "a regular file of at most 1 MiB, and an https:// --target", "as for scenario files; with http:// a usage error", "cmd/stormsim: TestAttackInputFIFOsDoNotHang"},
	{"a pasted gRPC or Envoy config that is something else", "a key or value is quoted only when it reads as a config's word (at most 64 letters, digits and _ . + - :)", "<code>&lt;a key of 52 bytes, not shown&gt;: not supported</code>, <code>a value of N bytes (not shown: it is no config value)</code>", "paste: TestAttackPastedSecretsAreNeverQuoted"},
	{"a pasted duration", "at most 10000h", "<code>want at most 3.6e+07s (10000h)</code>", "paste: TestAttackPastedHugeDurationsAreRefused"},
	{"collapse's effort and Markov chain", fmt.Sprintf("--effort at most %d; a chain of at most %d states; --within at most 10000h; --precision in (0, 1); the batch cap is noted", collapse.MaxEffort, collapse.MaxStates), "see the collapse rows above", "collapse: TestAttackCollapseBigParametersAreRefused, TestAttackCollapseBatchCapIsNoted"},
	{"--live-speed far below 1x", "the wait for a simulated second is held below what a Duration holds", "nothing: the simulation stays paced", "live: TestAttackLiveSpeedTinyStillPaces"},
}

// writePeerLimits appends the table of peerLimits to the matrix.
func writePeerLimits(doc *bytes.Buffer) {
	doc.WriteString(`
## Hostile peers and inputs

What a target, a broker, a reflection server, a viewer or an input file can make stormsim do,
and what the user sees past each bound. Each row is enforced by the test named.

| peer or input | bound | what the user sees | test |
|---|---|---|---|
`)
	for _, l := range peerLimits {
		fmt.Fprintf(doc, "| %s | %s | %s | %s |\n", mdCell(l.what), mdCell(l.limit), l.sees, mdCell(l.test))
	}
}
