//go:build unix

package transport

import (
	"net"
	"syscall"
)

// idleClean reports whether idle connection c may carry a request: no
// byte (an unsolicited answer) arrived on it while idle, and its peer did
// not close it. It peeks without blocking, as net/http's idle connections
// notice such bytes through the read each keeps pending.
func idleClean(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	var buf [1]byte
	clean := true
	err = rc.Read(func(fd uintptr) bool {
		_, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		// EAGAIN: nothing to read, the clean case. No error: a byte
		// arrived, or the peer closed (a read of 0).
		clean = err == syscall.EAGAIN || err == syscall.EWOULDBLOCK || err == syscall.EINTR
		return true // never wait for readiness
	})
	return err == nil && clean
}
