package memnet

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"testing/synctest"
	"time"
)

// TestHTTPOverMemnet: an HTTP server and client meet on the in-memory
// network, inside a bubble whose clock moves only while both wait: a
// handler's 5 s sleep takes no real time. Closed, the listener refuses.
func TestHTTPOverMemnet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var nw Network
		ln, err := nw.Listen("127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(5 * time.Second)
			io.WriteString(w, r.RemoteAddr)
		})}
		go srv.Serve(ln)
		tr := &http.Transport{DialContext: nw.DialContext}
		start := time.Now()
		resp, err := (&http.Client{Transport: tr}).Get("http://" + ln.Addr().String() + "/")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if el := time.Since(start); el != 5*time.Second {
			t.Errorf("the answer took %v on the bubble's clock, want exactly the handler's 5s", el)
		}
		if _, _, err := net.SplitHostPort(string(b)); err != nil {
			t.Errorf("remote address %q is not host:port: %v", b, err)
		}
		tr.CloseIdleConnections()
		srv.Close()
		if _, err := nw.DialContext(context.Background(), "tcp", ln.Addr().String()); !errors.Is(err, ErrRefused) {
			t.Errorf("dial after close: %v, want ErrRefused", err)
		}
		if _, err := nw.Listen(ln.Addr().String()); err != nil {
			t.Errorf("listen again on a closed address: %v", err)
		}
	})
}
