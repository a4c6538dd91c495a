package broker

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeNATS is a NATS server on loopback that shakes hands as a real one
// does (INFO, then PONG to the client's CONNECT and PING) and then sends
// what its test scripts: a hostile server.
type fakeNATS struct {
	ln    net.Listener
	wg    sync.WaitGroup
	quit  chan struct{}
	conns atomic.Int64
}

// startFakeNATS serves each connection: info is the INFO's JSON, and
// after the handshake then is called with the connection.
func startFakeNATS(t *testing.T, info string, then func(c net.Conn)) *fakeNATS {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	f := &fakeNATS{ln: ln, quit: make(chan struct{})}
	var mu sync.Mutex
	var open []net.Conn
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			f.conns.Add(1)
			mu.Lock()
			open = append(open, c)
			mu.Unlock()
			f.wg.Add(1)
			go func() {
				defer f.wg.Done()
				defer c.Close()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				if _, err := c.Write([]byte("INFO " + info + "\r\n")); err != nil {
					return
				}
				r := bufio.NewReader(c)
				for { // CONNECT, then PING
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if strings.HasPrefix(line, "PING") {
						break
					}
				}
				if _, err := c.Write([]byte("PONG\r\n")); err != nil {
					return
				}
				if then != nil {
					then(c)
				}
				// Answer pings, until the client or the test hangs up.
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if strings.HasPrefix(line, "PING") {
						c.Write([]byte("PONG\r\n"))
					}
				}
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
		f.wg.Wait()
	})
	return f
}

func (f *fakeNATS) url() string { return "nats://" + f.ln.Addr().String() }

const fakeInfo = `{"server_id":"hostile","version":"2.10.0","proto":1,"headers":true,"max_payload":1048576,"jetstream":true}`

// TestAttackNATSHugeMessageIsRefused: a server that, after a valid
// handshake, announces a message of 6 GB (or a line that never ends) must
// not make the client allocate it: the connection ends with an error that
// says why, and the heap stays small.
func TestAttackNATSHugeMessageIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name, send, want string
	}{
		{"MSG of 6 GB", "MSG x 1 6000000000\r\n", "a message of 6000000000 bytes, over the 1048576 accepted"},
		{"MSG of 2^62 bytes", "MSG x 1 4611686018427387904\r\n", "a message of 4611686018427387904 bytes"},
		{"HMSG with a reply, split", "HMSG x 1 reply 10 60000", "a message of 6000000000 bytes"},
		{"MSG over max_payload", "MSG x 1 1048577\r\n", "a message of 1048577 bytes"},
		{"a line that never ends", "-ERR '" + strings.Repeat("a", MaxPeerLine+10), "a protocol line longer than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := startFakeNATS(t, fakeInfo, func(c net.Conn) {
				time.Sleep(50 * time.Millisecond) // after the client's handshake
				c.Write([]byte(tc.send))
				if strings.HasPrefix(tc.send, "HMSG") {
					time.Sleep(50 * time.Millisecond)
					c.Write([]byte("00000\r\n")) // the line's end, in another read
				}
			})
			var before runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			conn, err := Connect(f.url())
			require.NoError(t, err)
			defer conn.Close()
			deadline := time.Now().Add(5 * time.Second)
			for conn.Err() == nil && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			require.Error(t, conn.Err(), "the hostile message was not refused")
			require.Contains(t, conn.Err().Error(), tc.want)
			require.Contains(t, conn.Err().Error(), f.ln.Addr().String(), "the error names the server")
			for !conn.nc.IsClosed() && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			require.True(t, conn.nc.IsClosed(), "a breach ends the connection")
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			require.Less(t, int64(after.HeapAlloc)-int64(before.HeapAlloc), int64(32<<20), "heap grew")
		})
	}
}

// TestAttackNATSMessageWithinBoundsPasses: the guard passes what a real
// server sends, a message split over many reads included.
func TestAttackNATSMessageWithinBoundsPasses(t *testing.T) {
	f := startFakeNATS(t, fakeInfo, nil)
	conn, err := Connect(f.url())
	require.NoError(t, err)
	defer conn.Close()
	pc := &peerConn{g: newPeerGuard(f.url()), addr: "x", limit: 1 << 20}
	stream := "INFO " + fakeInfo + "\r\nPING\r\nMSG a 1 5\r\nhello\r\nHMSG a 1 r 12 14\r\nNATS/1.0\r\n\r\nhi\r\n+OK\r\n"
	for i := 0; i < len(stream); i++ { // a byte per read
		require.NoError(t, pc.scan([]byte{stream[i]}), "at byte %d", i)
	}
	require.Zero(t, pc.skip)
	require.Empty(t, pc.line)
	require.NoError(t, pc.scan([]byte(stream)))
	require.NoError(t, conn.nc.Flush())
}

// TestAttackNATSDiscoveryStaysOnGivenServers: a server advertising other
// servers (connect_urls) and then hanging up must not make the client
// dial them: only the servers the user gave are dialed.
func TestAttackNATSDiscoveryStaysOnGivenServers(t *testing.T) {
	other := startFakeNATS(t, fakeInfo, nil)
	info := strings.TrimSuffix(fakeInfo, "}") + `,"connect_urls":["` + other.ln.Addr().String() + `"]}`
	f := startFakeNATS(t, info, func(c net.Conn) {
		time.Sleep(50 * time.Millisecond)
		c.Close() // hang up after the handshake
	})
	conn, err := Connect(f.url())
	require.NoError(t, err)
	defer conn.Close()
	f.ln.Close() // no reconnection to the server given either
	time.Sleep(1500 * time.Millisecond)
	require.Zero(t, other.conns.Load(), "the client dialed a server it was only told of")
}

// FuzzPeerScan feeds arbitrary server bytes, split at an arbitrary point,
// to the guard: it must never panic, never hold a line over MaxPeerLine,
// and read a stream split in two as it reads it whole.
func FuzzPeerScan(f *testing.F) {
	f.Add("INFO "+fakeInfo+"\r\nMSG a 1 5\r\nhello\r\nPING\r\n", 7)
	f.Add("HMSG a 1 r 12 14\r\nNATS/1.0\r\n\r\nhi\r\n", 3)
	f.Add("MSG x 1 6000000000\r\n", 0)
	f.Add("INFO {\"max_payload\":2}\r\nMSG a 1 3\r\n", 30)
	f.Fuzz(func(t *testing.T, s string, at int) {
		whole := &peerConn{g: newPeerGuard("nats://127.0.0.1"), addr: "x", limit: MaxPeerPayload}
		werr := whole.scan([]byte(s))
		if len(whole.line) > MaxPeerLine || whole.skip < 0 {
			t.Fatalf("line %d, skip %d", len(whole.line), whole.skip)
		}
		if at < 0 {
			at = -at
		}
		at %= len(s) + 1
		split := &peerConn{g: newPeerGuard("nats://127.0.0.1"), addr: "x", limit: MaxPeerPayload}
		serr := split.scan([]byte(s[:at]))
		if serr == nil {
			serr = split.scan([]byte(s[at:]))
		}
		if (werr == nil) != (serr == nil) || (werr == nil && (whole.skip != split.skip || string(whole.line) != string(split.line))) {
			t.Fatalf("whole: %v, split at %d: %v", werr, at, serr)
		}
	})
}

// TestAttackNATSCredentialsAreNotPrinted: a --nats URL's user and
// password (or token) appear in no error.
func TestAttackNATSCredentialsAreNotPrinted(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close() // nothing listens: the connection is refused
	for _, u := range []string{"nats://alice:hunter2@" + addr, "nats://s3cr3tt0ken@" + addr, "tls://alice:hunter2@" + addr} {
		_, err := Connect(u)
		require.Error(t, err)
		require.NotContains(t, err.Error(), "hunter2")
		require.NotContains(t, err.Error(), "s3cr3tt0ken")
		require.NotContains(t, err.Error(), "alice")
		require.Contains(t, err.Error(), addr)
	}
	require.Equal(t, "nats://***@127.0.0.1:4222,nats://127.0.0.1:4223", Redact("nats://a:b@127.0.0.1:4222,nats://127.0.0.1:4223"))
}

// TestAttackJetStreamStoresAreCleaned: a store left by a process that was
// killed (SIGKILL skips Close) is removed by the next embedded server,
// one in use by a live process is kept, and Close removes its own.
func TestAttackJetStreamStoresAreCleaned(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	cmd := exec.Command("true")
	require.NoError(t, cmd.Run())
	dead := cmd.Process.Pid // exited: no such process now
	mk := func(name, pid string, age time.Duration) string {
		dir := filepath.Join(tmp, storePrefix+name)
		require.NoError(t, os.Mkdir(dir, 0o700))
		if pid != "" {
			require.NoError(t, os.WriteFile(filepath.Join(dir, ownerFile), []byte(pid), 0o600))
		}
		old := time.Now().Add(-age)
		require.NoError(t, os.Chtimes(dir, old, old))
		return dir
	}
	stale := mk("killed", strconv.Itoa(dead), 0)
	ancient := mk("old", "", 2*staleAge)
	live := mk("live", strconv.Itoa(os.Getppid()), 0) // the go command, running
	fresh := mk("fresh", "", 0)                       // an older stormsim's, just made
	srv, err := Embedded()
	require.NoError(t, err)
	require.NoDirExists(t, stale, "the store of a killed process")
	require.NoDirExists(t, ancient, "an old store without an owner")
	require.DirExists(t, live, "the store of a running process")
	require.DirExists(t, fresh, "a new store without an owner")
	own := srv.dir
	require.DirExists(t, own)
	srv.Close()
	require.NoDirExists(t, own)
}
