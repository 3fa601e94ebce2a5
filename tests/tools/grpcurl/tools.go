// SPDX-License-Identifier: BSD-2-Clause
// Copyright (c) The Sluice authors

//go:build tools

// Package tools pins grpcurl, the gRPC client the reflection tests drive
// (tests/grpc/test_grpc_stream.py builds it from this module with
// `go build`). Sluice itself never needs Go.
package tools

import _ "github.com/fullstorydev/grpcurl/cmd/grpcurl"
