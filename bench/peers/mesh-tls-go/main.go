// The Go peer of bench/http/mesh-cpu.ts: a mesh TLS terminator with Go's standard library only.
// It requires and verifies a client certificate against the mesh roots, then pipes each
// connection to the application; no authorize. Run with GOMAXPROCS=1, as the proxy's event loop is.
// Usage: mesh-tls-go <port> <cert.pem> <key.pem> <roots.pem> <app host:port>
package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"os"
)

func main() {
	if len(os.Args) != 6 {
		fmt.Fprintln(os.Stderr, "usage: mesh-tls-go <port> <cert.pem> <key.pem> <roots.pem> <app host:port>")
		os.Exit(2)
	}
	cert, err := tls.LoadX509KeyPair(os.Args[2], os.Args[3])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	roots, err := os.ReadFile(os.Args[4])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(roots)
	config := &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert}
	listener, err := tls.Listen("tcp", "127.0.0.1:"+os.Args[1], config)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	app := os.Args[5]
	for {
		conn, err := listener.Accept()
		if err != nil {
			continue
		}
		go serve(conn.(*tls.Conn), app)
	}
}

func serve(conn *tls.Conn, app string) {
	defer conn.Close()
	if err := conn.Handshake(); err != nil {
		return
	}
	upstream, err := net.Dial("tcp", app)
	if err != nil {
		return
	}
	defer upstream.Close()
	done := make(chan struct{}, 2)
	go func() { io.Copy(upstream, conn); done <- struct{}{} }()
	go func() { io.Copy(conn, upstream); done <- struct{}{} }()
	<-done
}
