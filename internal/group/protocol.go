package group

// selectProtocol picks the group's assignment protocol as Kafka does: among the
// protocols every member offers, each member votes for the first one in its own order
// of preference and the most votes win. A tie goes to the candidate the first member
// (in join order) prefers, so the choice is deterministic. It reports false when the
// members share no protocol (or there are none).
func selectProtocol(members [][]Protocol) (string, bool) {
	candidates := commonProtocols(members)
	if len(candidates) == 0 {
		return "", false
	}
	votes := make(map[string]int, len(candidates))
	for _, ps := range members {
		for _, p := range ps {
			if candidates[p.Name] {
				votes[p.Name]++
				break
			}
		}
	}
	best, bestVotes := "", -1
	for _, p := range members[0] {
		if n, ok := votes[p.Name]; ok && n > bestVotes {
			best, bestVotes = p.Name, n
		}
	}
	// Every member votes for some candidate, and every candidate is in members[0].
	return best, true
}

// commonProtocols is the set of protocol names offered by every member.
func commonProtocols(members [][]Protocol) map[string]bool {
	if len(members) == 0 {
		return nil
	}
	common := map[string]bool{}
	for _, p := range members[0] {
		common[p.Name] = true
	}
	for _, ps := range members[1:] {
		for name := range common {
			if !offers(ps, name) {
				delete(common, name)
			}
		}
	}
	return common
}

func offers(ps []Protocol, name string) bool {
	for _, p := range ps {
		if p.Name == name {
			return true
		}
	}
	return false
}

// sharesProtocol reports whether a joining member's protocols include one that every
// other member offers (Kafka's supportsProtocols for a non-empty group).
func sharesProtocol(others [][]Protocol, joining []Protocol) bool {
	for _, p := range joining {
		all := true
		for _, ps := range others {
			if !offers(ps, p.Name) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// sameProtocols reports whether a rejoining member offers exactly what it offered
// before (names, order and metadata), in which case a stable group need not rebalance.
func sameProtocols(a, b []Protocol) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || string(a[i].Metadata) != string(b[i].Metadata) {
			return false
		}
	}
	return true
}
