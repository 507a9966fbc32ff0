package server

import (
	"github.com/runnel-io/runnel/internal/controlplane"
	"github.com/runnel-io/runnel/internal/metadata"
)

// AdminOf is node n's controlplane.Admin (its metadata image, the active controller
// it knows, its channel to that controller), for the tests of package server_test:
// they start their nodes with internal/clustertest, which imports this package, so they
// cannot be tests of package server themselves, and a few of them check what the
// node holds inside (a forwarded change applied to its own image, the controller
// channel's remote path).
func AdminOf(n *Node) *controlplane.Admin { return n.admin }

// ImageOf is the metadata image node n has applied to its replicas.
func ImageOf(n *Node) *metadata.Image { return n.leadership.Image() }

// HTTPGet is get (main_test.go), for package server_test.
var HTTPGet = get
