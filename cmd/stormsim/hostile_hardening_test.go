package main

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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
