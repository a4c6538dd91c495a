// Package httpecho is the load benchmarks' trivial HTTP/1.1 target: it
// answers every request with 200 and the two-byte body "ok".
//
// The benchmarks measure the load generator, so the target should cost the
// machine as little as a real server can: on the 2-core development machine
// a net/http server spent about 19 µs of CPU per request, more than the
// driver it was answering. This server reads each request's head into a
// reused buffer, skips its body and writes the fixed answer, one goroutine
// per connection and no allocation per request.
//
// It answers every request as net/http's server (with a handler that
// writes "ok") answers it: the same status, body and framing, and the
// connection closed at the same point, for well-formed requests and
// malformed ones alike (400, 431, 501, 505). TestServeAnswersAsNetHTTP and
// FuzzServe send both servers the same bytes. Two differences are kept: a
// refusal carries no text, and a field folded onto the previous line
// (obs-fold) is refused where net/http joins it, as RFC 9112 allows.
package httpecho

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/url"
	"time"

	"github.com/stormsim/stormsim/load/internal/connserve"
	"github.com/stormsim/stormsim/load/internal/http1"
)

// Body is what every answer carries.
const Body = "ok"

const (
	answer      = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n" + Body
	answerHead  = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n"
	answerClose = "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n" + Body
	headClose   = "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n"
	empty       = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
	emptyClose  = "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
	badRequest  = "HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
	tooLarge    = "HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
	notImpl     = "HTTP/1.1 501 Not Implemented\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
	badVersion  = "HTTP/1.1 505 HTTP Version Not Supported\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
)

// MaxHeaderBytes bounds a request's head (request line and fields), as
// net/http's server does by default.
const MaxHeaderBytes = 1 << 20

// IdleTimeout is how long a connection may wait for the next request's
// head before it is closed.
const IdleTimeout = 2 * time.Minute

// Server answers the connections of one listener.
type Server struct{ conns connserve.Server }

// ErrClosed is what Serve returns once Close has stopped it.
var ErrClosed = connserve.ErrClosed

// Serve accepts connections on ln and answers them until Close is called
// or ln fails; it returns ErrClosed after Close.
func (s *Server) Serve(ln net.Listener) error { return s.conns.Serve(ln, serveConn) }

// Close stops Serve, closes every open connection and waits for their
// goroutines to end.
func (s *Server) Close() error { return s.conns.Close() }

// request is what serveConn needs of a request's head.
type request struct {
	head      bool  // method HEAD: the answer has no body
	close     bool  // the connection closes after the answer
	chunked   bool  // the body is chunked
	length    int64 // the body's length when not chunked
	hasLength bool
	expect    bool // Expect: 100-continue on a request with a body
	empty     bool // the answer is 200 with no body (OPTIONS *)
	post      bool // method POST
}

// errTooLarge marks a head over MaxHeaderBytes.
var errTooLarge = errors.New("request head too large")

// errNotImplemented marks a transfer coding other than chunked.
var errNotImplemented = errors.New("transfer coding not implemented")

// errVersion marks an HTTP version other than 1.x.
var errVersion = errors.New("HTTP version not supported")

// errMalformed marks a request that is not HTTP/1.x.
var errMalformed = errors.New("malformed request")

// errBodyTooLong marks a body longer than net/http's server reads after
// its handler returned.
var errBodyTooLong = errors.New("body too long to skip")

// maxSkip bounds the body net/http's server reads after a handler that did
// not read it (maxPostHandlerReadBytes) to keep the connection: a length
// of maxSkip or more, or a chunked body over it, closes the connection.
const maxSkip = 256 << 10

func serveConn(c net.Conn) {
	r := bufio.NewReaderSize(c, 4096)
	w := bufio.NewWriterSize(c, 4096)
	post := false
	for first := true; ; first = false {
		if r.Buffered() == 0 {
			c.SetReadDeadline(time.Now().Add(IdleTimeout))
		}
		// Between requests, a connection that ends before four more
		// bytes closes without an answer, as in net/http's server.
		if _, err := r.Peek(4); err != nil && !first {
			return
		}
		if post {
			// Up to four CR or LF bytes some old clients send after a
			// POST's body are skipped, as net/http's server does.
			peek, _ := r.Peek(4)
			n := 0
			for n < len(peek) && (peek[n] == '\r' || peek[n] == '\n') {
				n++
			}
			r.Discard(n)
		}
		req, err := readHead(r)
		post = req.post
		if err != nil {
			refusal := ""
			switch {
			case errors.Is(err, errTooLarge):
				refusal = tooLarge
			case errors.Is(err, errNotImplemented):
				refusal = notImpl
			case errors.Is(err, errVersion):
				refusal = badVersion
			case errors.Is(err, errMalformed):
				refusal = badRequest
			}
			if refusal != "" {
				w.WriteString(refusal)
				w.Flush()
				lingerClose(c)
			}
			return
		}
		// As net/http's server does for a handler that reads no body: a
		// client waiting for "100 Continue" gets the answer instead and
		// the connection closes; otherwise the body is skipped, and a
		// body that is malformed, cut short or too long closes the
		// connection after the answer.
		if req.expect || skipBody(r, req) != nil {
			req.close = true
		}
		switch {
		case req.empty && req.close:
			w.WriteString(emptyClose)
		case req.empty:
			w.WriteString(empty)
		case req.close && req.head:
			w.WriteString(headClose)
		case req.close:
			w.WriteString(answerClose)
		case req.head:
			w.WriteString(answerHead)
		default:
			w.WriteString(answer)
		}
		// Each answer goes out at once: a client may wait for it before
		// it sends the rest of a pipelined request.
		if w.Flush() != nil {
			return
		}
		if req.close {
			lingerClose(c)
			return
		}
	}
}

// lingerClose ends the connection's sending side and reads what the client
// still sends for a moment, as net/http's server does, so that the client
// reads the last answer before a reset could discard it.
func lingerClose(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.CloseWrite()
	}
	c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	io.Copy(io.Discard, io.LimitReader(c, 1<<20))
}

// readHead reads one request's head: the request line and the header
// fields up to the empty line. It returns io.EOF when the connection
// closes before a request starts.
func readHead(r *bufio.Reader) (request, error) {
	var req request
	n := 0
	line, err := readLine(r, &n)
	if err != nil {
		return req, err
	}
	method, rest, ok := bytes.Cut(line, []byte{' '})
	if !ok || len(method) == 0 || !http1.Token(method) {
		return req, errMalformed
	}
	target, version, ok := bytes.Cut(rest, []byte{' '})
	if !ok || len(target) == 0 || !requestTarget(method, target) {
		return req, errMalformed
	}
	// net/http's server answers OPTIONS * itself, with no body.
	req.empty = string(target) == "*" && string(method) == "OPTIONS"
	// HTTP/d.d; a major version other than 1 is refused with 505, once
	// the head has been read.
	if len(version) != 8 || string(version[:5]) != "HTTP/" || version[6] != '.' ||
		version[5] < '0' || version[5] > '9' || version[7] < '0' || version[7] > '9' {
		return req, errMalformed
	}
	// Transfer-Encoding counts from HTTP/1.1 on.
	http10 := version[5] == '0' || version[5] == '1' && version[7] == '0'
	// net/http reads HTTP/0.0 as 1.1 for the body's framing.
	ignoreCoding := http10 && !(version[5] == '0' && version[7] == '0')
	v1 := version[5] == '1'
	req.head = string(method) == "HEAD"
	req.post = string(method) == "POST"
	// The request line is gone with the reader's next read.
	badVersion, connect := version[5] != '1', string(method) == "CONNECT"
	// The fields' errors are reported in net/http's order, once the whole
	// head has been read: several Host fields (400), an unsupported
	// transfer coding (501), a bad length or trailer (400), the version
	// (505), then a missing Host and bad values (400).
	expect := false
	connSeen, firstClose, firstKeepAlive, anyClose := false, false, false, false
	hosts, badCoding, badLength, badTrailer, badValue := 0, false, false, false, false // badValue: refused after the version
	var firstLength [20]byte                                                           // the first Content-Length's value (longer ones are not numbers)
	firstLen := 0
	for {
		l, err := readLine(r, &n)
		if err != nil {
			if err == io.EOF {
				err = errMalformed
			}
			return req, err
		}
		if len(l) == 0 {
			break
		}
		name, value, ok := bytes.Cut(l, []byte{':'})
		valid, spaced := http1.FieldName(name)
		if !ok || !valid || !http1.FieldValue(value) {
			// Includes a line folded onto the previous one (obs-fold),
			// which RFC 9112 lets a server refuse.
			return req, errMalformed
		}
		if spaced { // spaces in a name are refused after the version
			badValue = true
		}
		value = bytes.Trim(value, " \t")
		switch {
		case bytes.EqualFold(name, []byte("Host")):
			hosts++
			if !hostValue(value) {
				badValue = true
			}
		case bytes.EqualFold(name, []byte("Content-Length")):
			// Every length must read as the first does, and the first
			// must be a number below 2⁶³.
			if req.hasLength {
				if string(value) != string(firstLength[:firstLen]) {
					badLength = true
				}
				break
			}
			v, ok := decimal(value)
			badLength = badLength || !ok
			firstLen = copy(firstLength[:], value)
			req.length, req.hasLength = v, true
		case bytes.EqualFold(name, []byte("Trailer")):
			// Fields that frame the message may not be announced as
			// trailers (net/http refuses them when the body is chunked).
			for rest := value; len(rest) > 0; {
				var t []byte
				t, rest, _ = bytes.Cut(rest, []byte{','})
				t = bytes.Trim(t, " \t")
				if bytes.EqualFold(t, []byte("Transfer-Encoding")) || bytes.EqualFold(t, []byte("Trailer")) ||
					bytes.EqualFold(t, []byte("Content-Length")) {
					badTrailer = true
				}
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			if ignoreCoding {
				break
			}
			if !bytes.EqualFold(value, []byte("chunked")) || req.chunked {
				badCoding = true
			}
			req.chunked = true
		case bytes.EqualFold(name, []byte("Connection")):
			// net/http reads the tokens of every Connection field, and
			// also searches the first one's value for them.
			if !connSeen {
				connSeen = true
				firstClose = searchToken(value, "close")
				firstKeepAlive = searchToken(value, "keep-alive")
			}
			for rest := value; len(rest) > 0; {
				var t []byte
				t, rest, _ = bytes.Cut(rest, []byte{','})
				if bytes.EqualFold(bytes.Trim(t, " \t"), []byte("close")) {
					anyClose = true
				}
			}
		case bytes.EqualFold(name, []byte("Expect")):
			expect = bytes.EqualFold(value, []byte("100-continue"))
		}
	}
	switch {
	case hosts > 1:
		return req, errMalformed
	case badCoding:
		return req, errNotImplemented
	case badLength, badTrailer && req.chunked:
		return req, errMalformed
	case badVersion:
		return req, errVersion
	case !http10 && hosts == 0 && !connect || badValue:
		return req, errMalformed
	}
	if req.chunked {
		req.hasLength, req.length = false, 0
	}
	if http10 {
		// HTTP/1.0 (and 0.x) keeps the connection only when its first
		// Connection field asks to; net/http then reads no other token.
		req.close = !(v1 && firstKeepAlive)
	} else {
		req.close = anyClose || firstClose
	}
	req.expect = expect && !http10 && (req.chunked || req.length > 0)
	return req, nil
}

// readLine reads one line of a head without its CRLF (or bare LF),
// counting its bytes into *n against MaxHeaderBytes. The line is valid
// until the reader's next read.
func readLine(r *bufio.Reader, n *int) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	*n += len(line)
	if err == bufio.ErrBufferFull {
		// A line longer than the buffer is gathered in memory of its own.
		long := append([]byte(nil), line...)
		for err == bufio.ErrBufferFull && *n <= MaxHeaderBytes {
			line, err = r.ReadSlice('\n')
			*n += len(line)
			long = append(long, line...)
		}
		if err == io.EOF && len(line) == 0 {
			// The connection ended right after a full buffer: net/http
			// sees that as the end of the connection, not of a line.
			return nil, io.EOF
		}
		line = long
	}
	if *n > MaxHeaderBytes {
		return nil, errTooLarge
	}
	if err != nil {
		if err == io.EOF && len(line) > 0 {
			return nil, errMalformed
		}
		return nil, err
	}
	line = line[:len(line)-1]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	return line, nil
}

// skipBody reads the request's body and throws it away, up to maxSkip.
func skipBody(r *bufio.Reader, req request) error {
	if !req.chunked {
		if req.length == 0 {
			return nil
		}
		if req.length >= maxSkip {
			return errBodyTooLong
		}
		_, err := r.Discard(int(req.length))
		return err
	}
	return http1.SkipChunked(r, maxSkip)
}

// decimal parses a Content-Length value: decimal digits only, below 2⁶³.
func decimal(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	return int64(v), v < 1<<63
}

// requestTarget reports whether net/http's server takes target as a
// request's target: a path (its escapes well formed), an absolute URL, "*",
// or an authority for CONNECT.
func requestTarget(method, target []byte) bool {
	if target[0] != '/' {
		switch {
		case string(target) == "*":
			return true
		case string(method) == "CONNECT":
			_, err := url.ParseRequestURI("http://" + string(target))
			return err == nil
		}
		_, err := url.ParseRequestURI(string(target))
		return err == nil
	}
	path := target
	if i := bytes.IndexByte(target, '?'); i >= 0 {
		path = target[:i]
	}
	for i, c := range target {
		if c < ' ' || c == 0x7f {
			return false
		}
		if c == '%' && i < len(path) && (i+2 >= len(path) || !isHex(path[i+1]) || !isHex(path[i+2])) {
			return false
		}
	}
	return true
}

// hostValue reports whether b is a Host field's value net/http's server
// takes: the bytes of a host and port, IPv6 literal or zone.
func hostValue(b []byte) bool {
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' ||
			bytes.IndexByte([]byte("!$%&'()*+,-.:;=[]_~"), c) >= 0) {
			return false
		}
	}
	return true
}

// searchToken reports whether tok occurs in v, in any case, between
// spaces, tabs, commas or v's ends: net/http's test of a request's first
// Connection field.
func searchToken(v []byte, tok string) bool {
	for i := 0; i+len(tok) <= len(v); i++ {
		if i > 0 && !tokenBoundary(v[i-1]) {
			continue
		}
		if end := i + len(tok); end != len(v) && !tokenBoundary(v[end]) {
			continue
		}
		if bytes.EqualFold(v[i:i+len(tok)], []byte(tok)) {
			return true
		}
	}
	return false
}

func tokenBoundary(c byte) bool { return c == ' ' || c == ',' || c == '\t' }

func isHex(c byte) bool { _, ok := http1.HexDigit(c); return ok }
