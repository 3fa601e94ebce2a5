// SPDX-License-Identifier: BSD-2-Clause
// Copyright (c) The Sluice authors

// A small xDS management server for sluiced's tests: go-control-plane's
// snapshot cache behind the aggregated discovery service, on 127.0.0.1,
// and a control port (HTTP, 127.0.0.1) to set a node's snapshot and to
// read the requests nodes sent (their ACKs and NACKs).
//
//	POST /snapshot?version=V&nodes=a,b   body: a JSON list of RateLimitConfig
//	GET  /requests                       every DiscoveryRequest seen, as JSON
//
// With -tls-cert and -tls-key the discovery service speaks TLS.
// It prints "ads PORT" and "control PORT" on stdout once both listen.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	discoverygrpc "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/v3"
	rlsconf "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/protobuf/encoding/protojson"
)

type seen struct {
	Node    string `json:"node"`
	Version string `json:"version"`
	Nonce   string `json:"nonce"`
	Error   string `json:"error,omitempty"`
	Code    int32  `json:"code,omitempty"`
}

var (
	mu       sync.Mutex
	requests []seen
)

func record(_ int64, req *discovery.DiscoveryRequest) error {
	s := seen{Node: req.GetNode().GetId(), Version: req.GetVersionInfo(), Nonce: req.GetResponseNonce()}
	if e := req.GetErrorDetail(); e != nil {
		s.Error = e.GetMessage()
		s.Code = e.GetCode()
	}
	mu.Lock()
	requests = append(requests, s)
	mu.Unlock()
	return nil
}

func main() {
	adsPort := flag.Int("ads-port", 0, "port of the discovery service (0: any free)")
	certFile := flag.String("tls-cert", "", "serve the discovery service over TLS with this certificate")
	keyFile := flag.String("tls-key", "", "and this key")
	flag.Parse()
	ctx := context.Background()
	snaps := cache.NewSnapshotCache(true, cache.IDHash{}, nil)
	cb := server.CallbackFuncs{StreamRequestFunc: record}
	srv := server.NewServer(ctx, snaps, cb)

	var opts []grpc.ServerOption
	if *certFile != "" {
		creds, err := credentials.NewServerTLSFromFile(*certFile, *keyFile)
		if err != nil {
			log.Fatal(err)
		}
		opts = append(opts, grpc.Creds(creds))
	}
	gs := grpc.NewServer(opts...)
	discoverygrpc.RegisterAggregatedDiscoveryServiceServer(gs, srv)
	ads, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *adsPort))
	if err != nil {
		log.Fatal(err)
	}
	ctl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/snapshot", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var raw []json.RawMessage
		if err := json.Unmarshal(body, &raw); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		var res []types.Resource
		for _, m := range raw {
			c := &rlsconf.RateLimitConfig{}
			if err := protojson.Unmarshal(m, c); err != nil {
				http.Error(w, err.Error(), 400)
				return
			}
			res = append(res, c)
		}
		snap, err := cache.NewSnapshot(r.URL.Query().Get("version"),
			map[resource.Type][]types.Resource{resource.RateLimitConfigType: res})
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		for _, n := range strings.Split(r.URL.Query().Get("nodes"), ",") {
			if err := snaps.SetSnapshot(ctx, n, snap); err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/requests", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		_ = json.NewEncoder(w).Encode(requests)
	})
	go func() { log.Fatal(http.Serve(ctl, mux)) }()
	fmt.Printf("ads %d\ncontrol %d\n", ads.Addr().(*net.TCPAddr).Port, ctl.Addr().(*net.TCPAddr).Port)
	os.Stdout.Sync()
	log.Fatal(gs.Serve(ads))
}
