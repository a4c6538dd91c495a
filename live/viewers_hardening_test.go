package live_test

import (
	"bufio"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stormsim/stormsim/live"
)

// openFiles counts this process's open descriptors.
func openFiles(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd to count descriptors with")
	}
	return len(fds)
}

// TestAttackLiveViewersAreCapped opens many more event streams than the
// view serves: beyond MaxViewers a viewer is refused (503) or waits
// unaccepted in the kernel's backlog, so the view holds at most
// MaxViewers+4 descriptors however many viewers come (700 took every
// descriptor of serve, and its services stopped answering).
func TestAttackLiveViewersAreCapped(t *testing.T) {
	const max, viewers = 4, 60
	s := start(t, live.Options{Addr: "127.0.0.1:0", MaxViewers: max})
	addr := strings.TrimSuffix(strings.TrimPrefix(s.URL(), "http://"), "/")
	before := openFiles(t)
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	streaming, refused := 0, 0
	for range viewers {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		if _, err := c.Write([]byte("GET /events HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		line, err := bufio.NewReader(c).ReadString('\n')
		switch {
		case err != nil: // not accepted: waiting in the backlog
		case strings.Contains(line, " 200 "):
			streaming++
		case strings.Contains(line, " 503 "):
			refused++
		default:
			t.Fatalf("answer %q", line)
		}
	}
	grew := openFiles(t) - before
	t.Logf("%d streaming, %d refused, %d waiting; descriptors grew by %d", streaming, refused, viewers-streaming-refused, grew)
	if streaming > max {
		t.Errorf("%d viewers streaming, want at most %d", streaming, max)
	}
	// The test's own end of each connection is one; the view's ends at
	// most max+4, with a few for the runtime.
	if limit := viewers + max + 4 + 4; grew > limit {
		t.Errorf("descriptors grew by %d for %d viewers, want at most %d", grew, viewers, limit)
	}
}
