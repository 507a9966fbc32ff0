package server_test

import (
	"github.com/runnel-io/runnel/internal/consolemirror"
	"github.com/runnel-io/runnel/internal/server"
)

// In-process nodes of this test binary read mirror links as cmd/runnel's do.
func init() { server.ReadMirrorLink = consolemirror.Read }
