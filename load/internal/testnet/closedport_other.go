//go:build !unix

package testnet

import (
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

// ClosedPort returns a loopback address nothing listens on: a listener's
// port, freed. (On Unix the port stays reserved; here another listener
// could take it meanwhile.)
func ClosedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}
