// Go SDK peer for the Vellum benchmark: the benchmark's fixtures on the official Go SDK
// (github.com/modelcontextprotocol/go-sdk), Streamable HTTP via mcp.NewStreamableHTTPHandler
// on net/http, written against the SDK's public API.
//
// Tools (the same on every peer, see bench/README.md): hello_world {user_name}; stream
// {count?, interval_ms?} (count progress notifications, default 10, interval_ms apart, then
// "streamed <count>"); blob {bytes}
// (a text of exactly that many bytes); touch {} (adds or removes the tool bench_toggle, so
// every session is told its tool list changed); and --tools N filler tools to list. With
// --wait-redis URL --wait-http URL (the wait scenario), hello_wait {user_name}: a tool that
// waits as real tools do, on a Redis GET bench:greeting and an HTTP GET of the URL (net/http's
// default client), then answers "<greeting>, <user_name>". Redis is spoken to by the small
// RESP client in redis.go (go-redis is not among the Debian packages the build draws on).
//
// usage: bench-go [--addr 127.0.0.1:PORT] [--mode stateful|json|stateless] [--tools N]
//                 [--wait-redis redis://HOST:PORT --wait-http URL]
// Built by bench/peers/build.sh go, against the SDK snapshot and toolchain that
// shared/tools/go-peer/build-go.sh prepares.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const maxBlobBytes = 16 << 20

type helloArgs struct {
	UserName string `json:"user_name" jsonschema:"who to greet"`
}

type streamArgs struct {
	Count      *int `json:"count,omitempty" jsonschema:"progress notifications to send (default 10)"`
	IntervalMs int  `json:"interval_ms,omitempty" jsonschema:"milliseconds to wait after each notification"`
}

type blobArgs struct {
	Bytes int `json:"bytes" jsonschema:"size of the text to answer with"`
}

type noArgs struct{}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "address to listen on")
	mode := flag.String("mode", "stateful", "stateful, json or stateless")
	tools := flag.Int("tools", 0, "filler tools to list")
	waitRedis := flag.String("wait-redis", "", "hello_wait: Redis URL (redis://HOST:PORT)")
	waitHTTP := flag.String("wait-http", "", "hello_wait: URL of the HTTP stub")
	flag.Parse()

	server := mcp.NewServer(&mcp.Implementation{Name: "bench-go", Version: "0.1.0"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "hello_world", Description: "Say hello to a user"},
		func(ctx context.Context, req *mcp.CallToolRequest, args helloArgs) (*mcp.CallToolResult, any, error) {
			return text("Hello World, " + args.UserName), nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "stream", Description: "Send count progress notifications, then the result"},
		func(ctx context.Context, req *mcp.CallToolRequest, args streamArgs) (*mcp.CallToolResult, any, error) {
			count := 10
			if args.Count != nil {
				count = min(*args.Count, 10000)
			}
			token := req.Params.GetProgressToken()
			for i := 1; i <= count; i++ {
				if token == nil {
					break
				}
				err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
					ProgressToken: token, Progress: float64(i), Total: float64(count),
				})
				if err != nil {
					return nil, nil, err
				}
				if args.IntervalMs > 0 {
					time.Sleep(time.Duration(min(args.IntervalMs, 1000)) * time.Millisecond)
				}
			}
			return text(fmt.Sprintf("streamed %d", count)), nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "blob", Description: "Answer with a text of exactly bytes bytes"},
		func(ctx context.Context, req *mcp.CallToolRequest, args blobArgs) (*mcp.CallToolResult, any, error) {
			if args.Bytes < 0 || args.Bytes > maxBlobBytes {
				return nil, nil, fmt.Errorf("at most %d bytes", maxBlobBytes)
			}
			return text(strings.Repeat("x", args.Bytes)), nil, nil
		})
	var mu sync.Mutex
	toggled := false
	mcp.AddTool(server, &mcp.Tool{Name: "touch", Description: "Add or remove the tool bench_toggle"},
		func(ctx context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
			mu.Lock()
			defer mu.Unlock()
			toggled = !toggled
			if !toggled {
				server.RemoveTools("bench_toggle")
				return text("removed"), nil, nil
			}
			mcp.AddTool(server, &mcp.Tool{Name: "bench_toggle", Description: "Comes and goes with touch"},
				func(ctx context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
					return text("toggle"), nil, nil
				})
			return text("added"), nil, nil
		})
	if (*waitRedis == "") != (*waitHTTP == "") {
		log.Fatal("--wait-redis and --wait-http go together")
	}
	if *waitRedis != "" {
		redis, err := newRedisPool(*waitRedis)
		if err != nil {
			log.Fatal(err)
		}
		url := *waitHTTP
		mcp.AddTool(server, &mcp.Tool{Name: "hello_wait", Description: "Say hello to a user, with a greeting from Redis, after an HTTP call"},
			func(ctx context.Context, req *mcp.CallToolRequest, args helloArgs) (*mcp.CallToolResult, any, error) {
				greeting, err := redis.get(ctx, "bench:greeting")
				if err != nil {
					return nil, nil, fmt.Errorf("redis GET: %w", err)
				}
				hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
				if err != nil {
					return nil, nil, err
				}
				resp, err := http.DefaultClient.Do(hreq)
				if err != nil {
					return nil, nil, fmt.Errorf("HTTP GET: %w", err)
				}
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK {
					return nil, nil, fmt.Errorf("HTTP GET: %s %v", resp.Status, err)
				}
				return text(greeting + ", " + args.UserName), nil, nil
			})
	}
	for i := 0; i < *tools; i++ {
		mcp.AddTool(server, &mcp.Tool{Name: fmt.Sprintf("filler_%05d", i), Description: "A tool that is only listed"},
			func(ctx context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
				return text("filler"), nil, nil
			})
	}

	opts := &mcp.StreamableHTTPOptions{
		JSONResponse: *mode == "json",
		Stateless:    *mode == "stateless",
	}
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, opts)
	mux := http.NewServeMux()
	mux.Handle("/mcp", handler)
	log.Printf("bench-go (%s, %d filler tools) listening on %s", *mode, *tools, *addr)
	log.Fatal(http.ListenAndServe(*addr, mux))
}
