package embednats

import (
	"fmt"
	"net"
	"strconv"
)

func splitHostPort(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("embednats: listen address %q: %w", addr, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return "", 0, fmt.Errorf("embednats: listen port %q: %w", p, err)
	}
	if port == 0 {
		port = -1 // nats-server's "random port"; 0 would mean its default 4222
	}
	return host, port, nil
}
