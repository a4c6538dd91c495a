package serve

import (
	"fmt"
	"net"
	"net/http"
	"sync"

	"github.com/stormsim/stormsim/inputfile"
)

// checkHeaderSize refuses a request whose header block is over
// maxHeaderBytes. net/http's Server.MaxHeaderBytes is not exact: it reads 4
// KiB past it before answering 431, and more on a reused connection, so
// 68 KiB and beyond passed where the documentation says 64 KiB.
func checkHeaderSize(r *http.Request, a *attemptInfo) {
	n := len(r.Method) + len(r.RequestURI) + len(r.Proto) + 4 // request line and CRLF
	for k, vs := range r.Header {
		for _, v := range vs {
			n += len(k) + len(v) + 4 // "k: v\r\n"
		}
	}
	if n += 2; n > maxHeaderBytes {
		a.refuse(http.StatusRequestHeaderFieldsTooLarge, fmt.Sprintf("header block: larger than %d bytes (%d)", maxHeaderBytes, n))
	}
}

// maxHeldBodies bounds the bytes of request bodies a service holds for the
// attempts it has admitted (queued or working): each body may be up to
// maxBody, and a deep queue of them held hundreds of MB. An attempt whose
// body would pass it is refused with 503. Tests shrink it.
var maxHeldBodies int64 = 64 << 20

// holdBody counts a's body against the service's budget of held bodies and
// returns the function that gives it back; over the budget, a is refused.
func (s *Service) holdBody(a *attemptInfo) (release func()) {
	n := int64(len(a.body))
	if n == 0 || a.refused != 0 {
		return func() {}
	}
	if s.heldBodies.Add(n) > maxHeldBodies {
		s.heldBodies.Add(-n)
		a.body = nil
		a.refuse(http.StatusServiceUnavailable, fmt.Sprintf("request body: the service already holds %s of request bodies, its limit", inputfile.Size(maxHeldBodies)))
		return func() {}
	}
	return func() { s.heldBodies.Add(-n) }
}

// connLimit is a budget of accepted connections shared by the listeners of
// one process's services, so that connections of requests their clients
// abandoned while queued cannot exhaust its file descriptors (EMFILE):
// past the budget, Accept waits and new clients wait in the kernel's
// backlog until a connection closes.
type connLimit chan struct{}

// newConnLimit returns a budget of n connections (at least 1).
func newConnLimit(n int) connLimit { return make(connLimit, max(n, 1)) }

// listen wraps ln so that its connections count against the budget.
func (l connLimit) listen(ln net.Listener) net.Listener {
	return &limitedListener{Listener: ln, sem: l}
}

type limitedListener struct {
	net.Listener
	sem connLimit
}

func (l *limitedListener) Accept() (net.Conn, error) {
	l.sem <- struct{}{}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitedConn{Conn: c, release: func() { <-l.sem }}, nil
}

type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

// CloseWrite passes a half-close through: net/http half-closes before it
// closes after refusing a request (431), so that the client reads the
// refusal instead of a reset.
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
