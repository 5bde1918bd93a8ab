// Command grpcprobe asks a gRPC server's health service whether it serves,
// as a program of the sandbox that the egress tests run.
//
// Usage:
//
//	grpcprobe proxy|noproxy HOST:PORT
//
// With proxy it goes through the proxy the environment names
// (HTTPS_PROXY), as gRPC does by default; with noproxy it connects itself,
// by the name, as a gRPC client that ignores the proxy variables does.
// It prints "status: SERVING", or "error: CODE ..." and exits 1.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

func main() {
	if len(os.Args) != 3 || (os.Args[1] != "proxy" && os.Args[1] != "noproxy") {
		fmt.Fprintln(os.Stderr, "usage: grpcprobe proxy|noproxy HOST:PORT")
		os.Exit(2)
	}
	opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	if os.Args[1] == "noproxy" {
		opts = append(opts, grpc.WithNoProxy())
	}
	conn, err := grpc.NewClient("dns:///"+os.Args[2], opts...)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		fmt.Println("error:", status.Code(err), err)
		os.Exit(1)
	}
	fmt.Println("status:", resp.GetStatus())
}
