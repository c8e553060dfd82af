// A minimal Redis client for hello_wait: GET over RESP on pooled connections, as a Go server
// without go-redis would write it (a connection per concurrent call, kept for reuse).
package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
)

type redisConn struct {
	c net.Conn
	r *bufio.Reader
}

type redisPool struct {
	addr string
	mu   sync.Mutex
	idle []*redisConn
}

func newRedisPool(rawURL string) (*redisPool, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "redis" || u.Host == "" {
		return nil, fmt.Errorf("--wait-redis: want redis://HOST:PORT, got %q", rawURL)
	}
	return &redisPool{addr: u.Host}, nil
}

func (p *redisPool) take(ctx context.Context) (*redisConn, error) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		c := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return c, nil
	}
	p.mu.Unlock()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", p.addr)
	if err != nil {
		return nil, err
	}
	return &redisConn{c: c, r: bufio.NewReader(c)}, nil
}

func (p *redisPool) give(c *redisConn) {
	p.mu.Lock()
	p.idle = append(p.idle, c)
	p.mu.Unlock()
}

// get sends GET key and reads a bulk string; a missing key is an error.
func (p *redisPool) get(ctx context.Context, key string) (string, error) {
	c, err := p.take(ctx)
	if err != nil {
		return "", err
	}
	v, err := c.get(key)
	if err != nil {
		c.c.Close()
		return "", err
	}
	p.give(c)
	return v, nil
}

func (c *redisConn) get(key string) (string, error) {
	if _, err := fmt.Fprintf(c.c, "*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n", len(key), key); err != nil {
		return "", err
	}
	line, err := c.r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if !strings.HasPrefix(line, "$") {
		return "", fmt.Errorf("unexpected reply %q", line)
	}
	n, err := strconv.Atoi(line[1:])
	if err != nil || n < 0 {
		return "", fmt.Errorf("no value (%q)", line)
	}
	buf := make([]byte, n+2)
	if _, err := io.ReadFull(c.r, buf); err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}
