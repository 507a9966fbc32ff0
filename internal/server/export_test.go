package server

import "github.com/runnel-io/runnel/internal/controlplane"

// AdminOf is node n's controlplane.Admin (its metadata image, the active controller
// it knows, its channel to that controller), for the tests of package server_test:
// they start their nodes with internal/clustertest, which imports this package, so they
// cannot be tests of package server themselves, and a few of them check what the
// node holds inside (a forwarded change applied to its own image, the controller
// channel's remote path).
func AdminOf(n *Node) *controlplane.Admin { return n.admin }

// HTTPGet is get (main_test.go), for package server_test.
var HTTPGet = get
