package server

import (
	"github.com/runnel-io/runnel/internal/config"
	"github.com/runnel-io/runnel/internal/controller"
)

// securityControllerConfig adds the SASL users to create at the cluster's first start
// (sasl.bootstrap.users, inter.broker.sasl.username/password) to the controller's
// configuration. Whichever node is the active controller creates those the metadata
// never held, so every node passes them; a node restarted without them changes
// nothing, as the users live in the metadata quorum.
func (n *Node) securityControllerConfig(cc *controller.Config) {
	// config.Load has validated sasl.bootstrap.users (checkBootstrapUsers).
	users, err := config.ParseBootstrapUsers(n.cfg.SaslBootstrapUsers)
	if err != nil {
		n.logger.Error("sasl.bootstrap.users is malformed; no bootstrap user is created", "err", err)
		users = nil
	}
	if u, p := n.cfg.InterBrokerSaslUsername, n.cfg.InterBrokerSaslPassword; u != "" && p != "" {
		// The nodes log in with inter.broker.sasl.password, so it is the one the user
		// gets if sasl.bootstrap.users names the same user too.
		kept := users[:0]
		for _, b := range users {
			if b.Name != u {
				kept = append(kept, b)
			} else if b.Password != p {
				n.logger.Warn("sasl.bootstrap.users and inter.broker.sasl.username name the same user with different passwords; "+
					"it is created with inter.broker.sasl.password", "user", u)
			}
		}
		users = append(kept, config.BootstrapUser{Name: u, Password: p})
	}
	for _, b := range users {
		cc.BootstrapScramUsers = append(cc.BootstrapScramUsers, controller.BootstrapScramUser{Name: b.Name, Password: b.Password})
	}
}
