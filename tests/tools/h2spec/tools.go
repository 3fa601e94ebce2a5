// SPDX-License-Identifier: BSD-2-Clause
// Copyright (c) The Sluice authors

//go:build tools

// Package tools pins h2spec, the HTTP/2 conformance tester run against the
// gRPC listener (tests/grpc/test_grpc_h2spec.py builds it from this module
// with `go build`). Sluice itself never needs Go.
package tools

import _ "github.com/summerwind/h2spec/cmd/h2spec"
