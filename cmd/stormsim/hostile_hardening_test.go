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
