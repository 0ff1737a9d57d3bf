//go:build tools

// Package tools pins the binaries this module builds.
package tools

import _ "go.etcd.io/etcd/server/v3"
