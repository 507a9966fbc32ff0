package server_test

import (
	"github.com/runnel-io/runnel/internal/console"
	"github.com/runnel-io/runnel/internal/consolemirror"
)

// In-process nodes of this test binary read mirror links as cmd/runnel's do.
func init() { console.ReadMirrorLink = consolemirror.Read }
